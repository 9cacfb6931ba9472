"""Check results of ``preflight`` and ``verify``: one row per check, as a table, JSON or an exit
code."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

from rich.table import Table

from scripts.lib.errors import Exit

Status = Literal["pass", "warn", "fail", "skip"]


@dataclass
class Check:
    stage: str
    status: Status
    detail: str
    fix: str = ""


def checks_table(title: str, checks: list[Check]) -> Table:
    colour = {"pass": "green", "warn": "yellow", "fail": "red", "skip": "dim"}
    table = Table(title=title)
    table.add_column("check")
    table.add_column("status")
    table.add_column("detail")
    table.add_column("fix")
    for c in checks:
        table.add_row(c.stage, f"[{colour[c.status]}]{c.status}[/]", c.detail, c.fix)
    return table


def checks_exit(checks: list[Check]) -> Exit:
    return Exit.CHECK_FAILED if any(c.status == "fail" for c in checks) else Exit.OK


def checks_json(checks: list[Check], **extra: Any) -> str:
    ok = not any(c.status == "fail" for c in checks)
    return json.dumps({"ok": ok, "checks": [asdict(c) for c in checks], **extra}, default=str)
