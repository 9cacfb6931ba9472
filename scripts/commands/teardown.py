"""``hpkv teardown``: list (and with ``--yes`` delete) this environment's endpoints, PVCs, stacks
(in reverse order) and tagged leftovers; re-runnable."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from scripts.lib import runtime
from scripts.lib.environment import is_prod
from scripts.lib.errors import Exit, OperationError
from scripts.lib.teardown.execute import execute_teardown
from scripts.lib.teardown.plan import plan_teardown


@dataclass(frozen=True)
class TeardownOptions:
    env: str = "dev"
    yes: bool = False
    allow_prod: bool = False
    as_json: bool = False
    emit: bool = True
    """Print the result (recreate runs teardown as a phase and prints its own)."""


def run(o: TeardownOptions) -> tuple[Exit, dict[str, Any]]:
    """Plan (and with ``yes`` run) the teardown; returns the exit code and the JSON object (printed
    unless ``emit`` is off). Steps go to stdout as a list, or to stderr with --json."""
    env, yes, as_json, emit = o.env, o.yes, o.as_json, o.emit
    cfg = runtime.config(env)
    if is_prod(cfg) and not o.allow_prod:
        raise runtime.fail(
            f"refused: {env} is a production environment; pass --allow-prod to tear it down",
            Exit.REFUSED,
        )
    clients = runtime.CLIENTS(cfg, None)
    plan = plan_teardown(clients, cfg)
    if not yes:
        payload = {"environment": env, "dry_run": True, **plan.as_dict()}
        if as_json and emit:
            print(json.dumps(payload))
            return Exit.OK, payload
    if not as_json:
        table = Table(
            title=f"teardown plan: {env} ({'deleting' if yes else 'dry run: nothing is deleted'})"
        )
        for col in ("kind", "id", "detail"):
            table.add_column(col)
        for item in plan.items():
            table.add_row(item.kind, item.id, item.detail)
        runtime.out.print(table)
        for note in plan.notes:
            runtime.out.print(f"note: {note}")
    if not yes:
        runtime.out.print("Nothing deleted. Re-run with --yes to delete the above in order.")
        return Exit.OK, payload
    done: list[str] = []

    def log(msg: str) -> None:
        done.append(msg)
        if as_json:
            runtime.PROGRESS.line(msg)
        else:
            runtime.out.print(f"- {msg}")

    try:
        execute_teardown(clients, cfg, log, show=runtime.PROGRESS)
    except OperationError as exc:
        payload = {"environment": env, "ok": False, "error": str(exc), "steps": done}
        if as_json and emit:
            print(json.dumps(payload))
        if emit:
            runtime.err.print(f"error: {exc}", markup=False)
        return Exit.OPERATION_FAILED, payload
    payload = {"environment": env, "ok": True, "steps": done}
    if as_json and emit:
        print(json.dumps(payload))
    return Exit.OK, payload
