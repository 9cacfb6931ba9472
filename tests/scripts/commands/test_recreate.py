"""`hpkv recreate`: teardown, then the deploy, then verify, each phase reported with its time; a
failed phase ends it.

Doubles: moto and FakeKube, as in ``World`` (tests/support/teardown_world.py); where a test
needs more it says so. The deploy runner is replaced (``runtime.DEPLOY``)."""

from __future__ import annotations

import json
import threading

import pytest
from typer.testing import CliRunner

from scripts import cli
from scripts.lib import runtime
from scripts.lib.environment import stack_names
from scripts.lib.progress import Reporter, fmt_duration
from scripts.lib.teardown.plan import plan_teardown
from tests.support.logs import assert_lines_say, line_saying
from tests.support.progress import FakeClock
from tests.support.teardown_world import FAST, World


def test_recreate_runs_teardown_then_deploy(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    deployed: list[str] = []
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: world.clients)

    def deploy(env: str) -> int:
        deployed.append(env)
        return 0

    monkeypatch.setattr(runtime, "DEPLOY", deploy)
    monkeypatch.setattr(runtime, "load_config", lambda env: world.cfg)
    monkeypatch.setattr("scripts.lib.teardown.execute.Timeouts", lambda: FAST)
    result = CliRunner().invoke(cli.app, ["recreate", "--yes", "--skip-verify"])
    assert result.exit_code == 0, result.output
    assert deployed == ["dev"] and not plan_teardown(world.clients, world.cfg).stacks


def test_recreate_reports_its_phases_with_timings(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeClock()  # each stack deletion "takes" a minute, the deploy 25 minutes
    # The stacks of one wave call DeleteStack from their own threads: a minute each, whichever
    # thread runs first, none lost to two threads reading the clock before either adds to it.
    minute = threading.Lock()

    def a_minute(_: str) -> None:
        with minute:
            fake.t += 60

    world.on_delete_stack.append(a_minute)
    torn_down = 60 * len(stack_names(world.cfg))  # plus the waits' fake sleeps (< 1 s)
    monkeypatch.setattr(runtime, "PROGRESS", Reporter(clock=fake.clock(), tty=False))
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: world.clients)
    monkeypatch.setattr(runtime, "load_config", lambda env: world.cfg)
    monkeypatch.setattr("scripts.lib.teardown.execute.Timeouts", lambda: FAST)
    outcomes = iter([0, 2])

    def deploy(env: str) -> int:
        fake.t += 1500
        return next(outcomes)

    monkeypatch.setattr(runtime, "DEPLOY", deploy)
    result = CliRunner().invoke(cli.app, ["recreate", "--yes", "--skip-verify", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # one JSON object; progress went to stderr
    assert data["ok"] is True and data["exit_code"] == 0
    assert [(p["phase"], p["ok"]) for p in data["phases"]] == [("teardown", True), ("deploy", True)]
    assert torn_down <= data["phases"][0]["seconds"] < torn_down + 1
    assert data["phases"][1]["seconds"] == 1500
    assert any(s.endswith(": deleted") for s in data["teardown"]["steps"])
    line_saying(result.stderr, "stack hyperpod-kvcache-test-kvcache", "deleted")
    # The phases on stderr, in order, each with its time.
    assert_lines_say(
        [line for line in result.stderr.splitlines() if "recreate dev" in line],
        ["teardown", "started"],
        ["teardown", "done", fmt_duration(torn_down)],
        ["deploy", "started"],
        ["deploy", "done", "25m00s"],
    )

    failed = CliRunner().invoke(cli.app, ["recreate", "--yes", "--skip-verify", "--json"])
    assert failed.exit_code == 4
    data = json.loads(failed.stdout)
    assert data["ok"] is False and data["exit_code"] == 4
    deploy_phase = data["phases"][-1]
    assert deploy_phase["phase"] == "deploy" and not deploy_phase["ok"]
    assert deploy_phase["error"].startswith("make deploy failed")
    assert data["error"] == deploy_phase["error"] and data["command"] == "recreate"
    assert failed.stderr.strip().splitlines()[-1].startswith("error: make deploy failed")
    assert "recreate dev: deploy failed (exit 4) after 25m00s" in failed.stderr

    # Without --json: the same phases as a table with their times.
    outcomes = iter([0])
    table = CliRunner().invoke(cli.app, ["recreate", "--yes", "--skip-verify"])
    assert table.exit_code == 0, table.output
    rows = [line.split() for line in table.stdout.splitlines() if "│" in line]
    assert ["│", "teardown", "│", "ok", "│", fmt_duration(0), "│"] in rows  # nothing left
    assert ["│", "deploy", "│", "ok", "│", "25m00s", "│"] in rows
