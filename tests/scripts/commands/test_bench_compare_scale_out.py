"""`hpkv bench compare`'s scale-out workload end to end against fake model servers
(tests/doubles/fake_vllm.py with tests/doubles/fake_tiers.py, tests/support/bench_fleet.py): a
prefix written on a running replica, then a replica that has served nothing (``--joining``:
its own empty GPU and CPU caches, its tier's L2 directory) gets that prefix as its first
request. Its counters say where it found it; its TTFT is at least the delay the fake injects
for where the tokens came from."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from infra.config import AppConfig, load_config
from scripts.cli import app
from scripts.lib import runtime
from scripts.lib.openai_stream import list_models, stream_completion
from tests.support.bench_fleet import QUICK, Fleet, expected_ms, fleet, target_args

pytestmark = pytest.mark.waits  # on the fake model servers' injected delays

WORDS = 2500  # bench.cross_pod_prompt_words (the default): the known prefix
WHOLE = 2304  # its whole 256-token chunks: what LMCache stores and reads back
TOLERANCE_MS = 60.0


@pytest.fixture(scope="module")
def servers() -> Iterator[Fleet]:
    with fleet() as running:
        yield running


def _config(monkeypatch: pytest.MonkeyPatch, **bench: Any) -> AppConfig:
    base = load_config("dev")
    cfg = base.model_copy(update={"bench": base.bench.model_copy(update=bench)})
    monkeypatch.setattr(runtime, "load_config", lambda env: cfg)
    return cfg


def _compare(servers: Fleet, out: Path, joining: dict[str, str], *args: str) -> Any:
    argv = [
        "bench",
        "compare",
        *target_args(servers),
        "--out",
        str(out),
        *QUICK,
        "--workloads",
        "scale-out",
        "--seed",
        "21",
        *args,
        "--json",
    ]
    for tier, url in joining.items():
        argv += ["--joining", f"{tier}={url}"]
    return CliRunner().invoke(app, argv)


def _new_replica_rows(folder: Path) -> dict[str, dict[str, Any]]:
    results = json.loads((folder / "results.json").read_text())
    return {row["l2_backend"]: row for row in results["summary"]}


def test_a_joining_replica_reads_the_prefix_from_a_shared_l2_and_recomputes_it_without_one(
    servers: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(monkeypatch)
    new = {tier: servers.new_replica(tier) for tier in servers}
    result = _compare(servers, tmp_path, {tier: r.url for tier, r in new.items()})
    assert result.exit_code == 0, result.output
    by_tier = {v["l2_backend"]: v for v in json.loads(result.stdout)["verdicts"]}
    assert by_tier["curvine"]["status"] == "pass" and by_tier["curvine"]["measured"] == 1.0
    assert by_tier["curvine"]["threshold"] == 0.9  # bench.min_scale_out_l2_share's default
    assert by_tier["tieredstorage"]["status"] == "pass"
    assert by_tier["none"]["status"] == "n/a"
    rows = _new_replica_rows(tmp_path)
    # The new replica's counters over its first request: whole chunks from L2, the tail
    # recomputed; on none, everything recomputed.
    assert rows["curvine"]["l2"] == pytest.approx(WHOLE / WORDS)
    assert rows["none"]["l2"] is None and rows["none"]["recomputed"] == 1.0
    for tier in ("curvine", "tieredstorage"):
        want = expected_ms(tier, l2=WHOLE, cold=WORDS - WHOLE)
        assert want <= rows[tier]["warm_p50_ms"] <= want + TOLERANCE_MS
    cold = expected_ms("none", cold=WORDS)
    assert cold <= rows["none"]["warm_p50_ms"] <= cold + TOLERANCE_MS
    # Each new replica served exactly its one request: the prefix.
    assert [len(r.prompts) for r in new.values()] == [1, 1, 1]
    report = (tmp_path / "report.md").read_text()
    assert "## Scale-out: a replica joins" in report


def test_a_joining_replica_that_cannot_reach_l2_fails_the_verdict(
    servers: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(monkeypatch)
    lost = servers.new_replica("curvine", l2_state="down")
    fine = servers.new_replica("tieredstorage")
    result = _compare(servers, tmp_path, {"curvine": lost.url, "tieredstorage": fine.url})
    assert result.exit_code == 1, result.output
    by_tier = {v["l2_backend"]: v for v in json.loads(result.stdout)["verdicts"]}
    assert by_tier["curvine"]["status"] == "fail" and by_tier["curvine"]["measured"] == 0.0
    assert by_tier["tieredstorage"]["status"] == "pass"
    assert "none" not in by_tier  # no replica named for it: not run, not judged


def test_the_verdict_floor_comes_from_the_bench_config(
    servers: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new replica whose L2 reads fail (found but unreadable: LMCache recomputes) reads
    nothing from it: below any floor, the configured one reported beside it."""
    _config(monkeypatch, min_scale_out_l2_share=0.5)
    replica = servers.new_replica("curvine", l2_state="unreadable")
    result = _compare(servers, tmp_path, {"curvine": replica.url})
    assert result.exit_code == 1, result.output
    (verdict,) = [v for v in json.loads(result.stdout)["verdicts"] if v["l2_backend"] == "curvine"]
    assert verdict["threshold"] == 0.5 and verdict["measured"] == 0.0


def test_a_replica_that_served_requests_already_is_not_taken_for_a_new_one(
    servers: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A running replica named with --joining holds the prefix in its own caches: the run
    says so instead of reporting its L1 as a warm start."""
    _config(monkeypatch)
    result = _compare(servers, tmp_path, {"curvine": servers["curvine"][0].url})
    assert result.exit_code == 1, result.output
    (verdict,) = [v for v in json.loads(result.stdout)["verdicts"] if v["l2_backend"] == "curvine"]
    assert verdict["status"] == "fail" and "served" in verdict["reason"]


def test_a_replica_that_served_one_request_is_not_new_either(
    servers: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One request is enough to leave a prefix in its caches: only a replica that has served
    none is a new one."""
    _config(monkeypatch)
    used = servers.new_replica("curvine")
    stream_completion(used.url, list_models(used.url)[0], "a warm-up request", max_tokens=1)
    result = _compare(servers, tmp_path, {"curvine": used.url})
    assert result.exit_code == 1, result.output
    (verdict,) = [v for v in json.loads(result.stdout)["verdicts"] if v["l2_backend"] == "curvine"]
    assert verdict["status"] == "fail" and "served 1 request(s)" in verdict["reason"]


def test_joining_a_tier_not_given_is_refused_in_one_line(tmp_path: Path) -> None:
    argv = [
        "bench",
        "compare",
        "--target",
        "none=http://127.0.0.1:1,http://127.0.0.1:2",
        "--joining",
        "curvine=http://127.0.0.1:3",
    ]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: --joining = curvine=http://127.0.0.1:3: allowed: ")


def test_a_scale_out_with_no_replica_to_join_is_refused_before_any_request(
    servers: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--workloads scale-out with --target and no --joining for any tier with an L2: it would
    measure nothing and pass on nothing (exit 0, no verdict). One --joining is enough for it to
    run (test_the_verdict_floor_comes_from_the_bench_config)."""
    _config(monkeypatch)
    before = {tier: [len(r.prompts) for r in replicas] for tier, replicas in servers.items()}
    result = _compare(servers, tmp_path / "report", {})
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(
        "error: --workloads = scale-out: allowed: scale-out with --target "
        "where --joining TIER=URL names a replica"
    ), line
    assert "fix: add --joining curvine=URL" in line
    assert {
        tier: [len(r.prompts) for r in replicas] for tier, replicas in servers.items()
    } == before
    assert not (tmp_path / "report").exists()
