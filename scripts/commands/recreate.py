"""``hpkv recreate``: teardown, then ``make deploy ENV=<env>``, then verify; reports each phase
with its time."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from scripts.commands import teardown, verify
from scripts.lib import runtime
from scripts.lib.errors import Exit, describe_failure
from scripts.lib.progress import fmt_duration


@dataclass(frozen=True)
class RecreateOptions:
    env: str = "dev"
    yes: bool = False
    allow_prod: bool = False
    skip_verify: bool = False
    direct: bool = False
    wait_minutes: float = 30
    """verify first waits this long for Tiered Storage, the nodes and the rollout."""
    as_json: bool = False


def run(o: RecreateOptions) -> Exit:
    env, as_json = o.env, o.as_json
    runtime.config(env)  # a bad --env is the line to show, before the refusal without --yes
    if not o.yes:
        raise runtime.fail(
            "refused: recreate deletes the environment first; pass --yes", Exit.REFUSED
        )
    clock = runtime.PROGRESS.clock
    phases: list[dict[str, Any]] = []
    result: dict[str, Any] = {"command": "recreate", "environment": env, "phases": phases}

    def phase(name: str, run: Callable[[], tuple[Exit, dict[str, Any] | None]]) -> Exit:
        runtime.PROGRESS.line(f"recreate {env}: {name} started")
        started = clock.monotonic()
        error: str | None = None
        try:
            code, detail = run()
        except Exception as exc:  # translated into the phase's result, or re-raised (a bug)
            failure = describe_failure(exc)
            if failure is None:
                raise
            code, detail, error = failure.code, None, failure.message
        seconds = clock.monotonic() - started
        entry: dict[str, Any] = {"phase": name, "ok": code == Exit.OK, "seconds": round(seconds, 1)}
        if error is None and detail is not None and not detail.get("ok", True):
            error = detail.get("error")
        if error:
            entry["error"] = error
        phases.append(entry)
        if detail is not None:
            result[name] = detail
        verdict = "done" if code == Exit.OK else f"failed (exit {int(code)})"
        runtime.PROGRESS.line(f"recreate {env}: {name} {verdict} after {fmt_duration(seconds)}")
        return code

    def deploy() -> tuple[Exit, dict[str, Any] | None]:
        if not as_json:
            runtime.out.print(f"deploying: make deploy ENV={env}")
        if runtime.DEPLOY(env) != 0:
            raise runtime.fail(
                "make deploy failed; fix it and run `make deploy` then `hpkv verify`"
            )
        return Exit.OK, None

    steps: list[tuple[str, Callable[[], tuple[Exit, dict[str, Any] | None]]]] = [
        (
            "teardown",
            lambda: teardown.run(
                teardown.TeardownOptions(
                    env=env, yes=True, allow_prod=o.allow_prod, as_json=as_json, emit=False
                )
            ),
        ),
        ("deploy", deploy),
    ]
    if not o.skip_verify:
        checks = verify.VerifyOptions(
            env=env, as_json=as_json, direct=o.direct, wait_minutes=o.wait_minutes, emit=not as_json
        )
        steps.append(("verify", lambda: verify.run(checks)))
    code = Exit.OK
    for name, run in steps:
        code = phase(name, run)
        if code != Exit.OK:
            break
    result["ok"] = code == Exit.OK
    result["exit_code"] = int(code)
    failed = next((p for p in phases if not p["ok"]), None)
    if failed is not None and failed.get("error"):
        result["error"] = failed["error"]  # as in every command's failure object
    if as_json:
        print(json.dumps(result, default=str))
    else:
        table = Table(title=f"recreate: {env}")
        for col in ("phase", "result", "time"):
            table.add_column(col)
        for p in phases:
            table.add_row(p["phase"], "ok" if p["ok"] else "failed", fmt_duration(p["seconds"]))
        runtime.out.print(table)
    if failed is not None and failed.get("error"):  # the last line, as for every command
        runtime.err.print(
            f"error: {failed['error']}", markup=False, highlight=False, soft_wrap=True
        )
    return code
