"""Exit codes, check results and the small helpers every command shares."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from enum import IntEnum
from typing import Any, Literal

from rich.table import Table

Status = Literal["pass", "warn", "fail", "skip"]


class Exit(IntEnum):
    """Process exit codes, the same for every command (README.md, Operations CLI, lists them)."""

    OK = 0
    CHECK_FAILED = 1  # a check or verdict failed (preflight, verify)
    USAGE = 2  # bad option or invalid config file (one line on stderr)
    REFUSED = 3  # refused on purpose: prod without --allow-prod, destructive without --yes
    OPERATION_FAILED = 4  # an AWS or Kubernetes call failed or a wait timed out


class OperationError(RuntimeError):
    """A step of a multi-step operation failed; the message says which and how to resume."""


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
