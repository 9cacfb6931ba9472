"""The judges on real L2 hits and real misses (tests/server/conftest.py): ``verify``'s cross-Pod
row and ``bench compare`` pass on two replicas that share the L2 and fail, naming the cause, on
one that does not share A's folder, mounts another subPath, chunks by another size or runs
LMCache degraded; the L2 alert, evaluated by promtool over the replicas' scraped /metrics, stays
quiet on the hit and fires on the miss. In the order of the replicas they use (the fleet runs
three besides ``a`` and ``b`` at a time)."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from infra.metrics.alerts import alert_rules
from infra.metrics.tiers import QUERIED
from k8s.names import vllm_job
from scripts.cli import app
from scripts.lib.bench_compare.scrape import REQUESTS, increase, scrape_metrics
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.openai_stream import list_models
from scripts.lib.prompts import make_prompt
from scripts.lib.verify.cross_pod import CrossPodResult, cross_pod_l2
from tests.doubles.fake_kube import FakeKube
from tests.support.promtool import expand, needs_promtool, run_rule_tests
from tests.support.verify import MapTransport
from tests.support.vllm_server import Server, complete, metrics_page, settled

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\} (\S+)$", re.M)


class _Window:
    """A Pod's log as the API gives it: the whole log, or (``sinceSeconds``) what was written
    since the test case started."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.start = len(server.log_text())

    def __call__(self, query: dict[str, list[str]]) -> str:
        text = self.server.log_text()
        return text[self.start :] if "sinceSeconds" in query else text


def _pod(fleet: Any, role: str, name: str, node: str, spec_of: str | None = None) -> dict[str, Any]:
    """The rendered Pod of ``spec_of`` (default ``role``), Ready on ``node``, named ``name``."""
    pod = json.loads(json.dumps(fleet.pods[spec_of or role]))
    pod["metadata"] = {**pod["metadata"], "name": name}
    pod["spec"]["nodeName"] = node
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 8000}]
    pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    return pod


def _verify(fleet: Any, second: str, seed: int, spec_of: str | None = None) -> Any:
    """verify's cross-Pod test from replica ``a`` to ``second`` (as ``spec_of``'s Pod)."""
    servers = {"pod-a": fleet["a"], "pod-b": fleet[second]}
    pods = [_pod(fleet, "a", "pod-a", "node-1"), _pod(fleet, second, "pod-b", "node-2", spec_of)]
    transport = MapTransport({n: s.url for n, s in servers.items()})
    with FakeKube() as kube:
        ns = pods[0]["metadata"]["namespace"]
        kube.logs = {f"{ns}/{n}": _Window(s) for n, s in servers.items()}
        clients = Clients("us-west-2", kube_factory=kube.api_client)
        return cross_pod_l2(clients, pods, transport, prompt_words=900, seed=seed, log_wait_s=2)


def _compare(tmp_path: Path, *targets: str) -> tuple[int, dict[str, Any]]:
    """bench compare with a seed of its own: a prompt the first replica stored before would
    not be written again."""
    argv = [
        "bench",
        "compare",
        "--out",
        str(tmp_path / "report"),
        "--workloads",
        "chat,cross-pod",
        "--users",
        "2",
        "--rounds",
        "2",
        "--concurrency",
        "2",
        "--max-tokens",
        "2",
        "--settle-seconds",
        "2",
        "--counters-wait-seconds",
        "11",
        "--seed",
        str(zlib.crc32(" ".join(targets).encode()) % 1_000_000),
        "--json",
    ]
    for t in targets:
        argv += ["--target", t]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def _verdicts(summary: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(v["l2_backend"], v["check"]): v for v in summary["verdicts"]}


def _counter_series(text: str) -> dict[tuple[str, str], float]:
    """Each counter sample of a /metrics page by (name, labels)."""
    types = dict(re.findall(r"^# TYPE (\S+) (\w+)$", text, re.M))
    return {
        (name, labels): float(value)
        for name, labels, value in SAMPLE.findall(text)
        if types.get(name, types.get(name.removesuffix("_total"))) == "counter"
    }


def _run_series(server: Server, prompt: str) -> dict[tuple[str, str], float]:
    """What each counter series of ``server`` rose by while it served ``prompt``."""
    before_page = metrics_page(server.url)
    before = scrape_metrics(server.url)
    complete(server.url, list_models(server.url)[0], prompt)
    settled(server.url, before)
    start, end = _counter_series(before_page), _counter_series(metrics_page(server.url))
    return {k: v - start.get(k, 0.0) for k, v in end.items()}


def test_verifys_cross_pod_row_passes_on_a_real_l2_hit(fleet: Any) -> None:
    outcome = _verify(fleet, "b", 11)
    assert isinstance(outcome, CrossPodResult), outcome
    v = outcome.verdict
    assert v.ok and v.hit_ratio > 0.5 and v.stored_on_first > 0, v
    assert outcome.first["text"] == outcome.second["text"]


def test_the_scraped_counters_say_which_replica_served(fleet: Any) -> None:
    """Each replica counts the requests it served (``verdicts.two_pods`` relies on it)."""
    before = {r: scrape_metrics(fleet[r].url) for r in ("a", "b")}
    complete(fleet["b"].url, list_models(fleet["b"].url)[0], make_prompt(505, 50))
    deltas = {r: increase(before[r], scrape_metrics(fleet[r].url)) for r in ("a", "b")}
    assert (deltas["a"].get(REQUESTS, 0.0), deltas["b"][REQUESTS]) == (0.0, 1.0)


def test_bench_compare_passes_an_l2_target_that_shares_its_l2(fleet: Any, tmp_path: Path) -> None:
    """The L2 target beside an L1-only one (the recommended image's fleet has one)."""
    targets = [f"curvine={fleet['a'].url},{fleet['b'].url}"]
    if "l1" in fleet.servers:
        targets.append(f"none={fleet['l1'].url}")
    code, summary = _compare(tmp_path, *targets)
    verdicts = _verdicts(summary)
    hit = verdicts[("curvine", "cross-Pod hit")]
    assert (code, hit["status"], hit["measured"]) == (0, "pass", 1.0), hit
    if "l1" in fleet.servers:
        assert verdicts[("none", "cross-Pod hit")]["status"] == "n/a"


@pytest.mark.parametrize(
    ("second", "spec_of", "cause"),
    [
        ("other", "a", "the L2 volume is not shared between nodes node-1 and node-2"),
        ("other", None, "subPath qwen3-8b-b"),
        ("chunk", None, "LMCACHE_CHUNK_SIZE is 256 (LMCache's default) on pod-a, 512 on pod-b"),
    ],
    ids=["not sharing A's folder", "another subPath", "another chunk size"],
)
def test_verifys_cross_pod_row_fails_naming_why_b_missed(
    fleet: Any, second: str, spec_of: str | None, cause: str
) -> None:
    outcome = _verify(fleet, second, 12 + len(cause), spec_of)
    assert isinstance(outcome, CrossPodResult), outcome
    v = outcome.verdict
    assert not v.ok and v.hit_ratio == 0 and v.stored_on_first > 0, v
    assert cause in v.reason, v.reason


@needs_promtool
def test_the_l2_alert_fires_over_the_real_counters_of_a_miss_only(
    fleet: Any, tmp_path: Path
) -> None:
    """Each series as the collector stores it (the page's own names and labels, plus the
    scrape job's), rising every minute by what it rose while the replica served a prompt A had
    stored: B reads it from L2, the other endpoint's replica does not."""
    config, (e, *_) = fleet.config, fleet.endpoints
    prompt = make_prompt(404, 900)
    stored = scrape_metrics(fleet["a"].url)
    complete(fleet["a"].url, list_models(fleet["a"].url)[0], prompt)
    settled(fleet["a"].url, stored)
    runs = {"hit": _run_series(fleet["b"], prompt), "miss": _run_series(fleet["other"], prompt)}
    assert all(run[k] > 0 for run in runs.values() for k in run if k[0] == QUERIED)
    scrape = (
        f'endpoint="{e.name}",job="{vllm_job(e.namespace, e.name)}",'
        f'namespace="{e.namespace}",node="gpu-1",pod="{e.name}-0"'
    )
    (rule,) = [
        r
        for g in alert_rules(config)["groups"]
        for r in g["rules"]
        if r["alert"] == "KvCacheL2HitRateNearZero"
    ]
    labels = {"severity": "warning", "namespace": e.namespace, "endpoint": e.name}

    def case(run: dict[tuple[str, str], float], fires: bool) -> dict[str, Any]:
        series = [
            {"series": f"{name}{{{own},{scrape}}}", "values": f"0+{rise}x60"}
            for (name, own), rise in run.items()
            if own and rise >= 0
        ]
        summary = expand(rule["annotations"]["summary"], labels, 0.0)
        alerts = [{"exp_labels": labels, "exp_annotations": {"summary": summary}}] if fires else []
        return {
            "interval": "1m",
            "input_series": series,
            "alert_rule_test": [
                {"eval_time": "50m", "alertname": "KvCacheL2HitRateNearZero", "exp_alerts": alerts}
            ],
        }

    assert any(k[0] == REQUESTS for k in runs["hit"])
    cases = [case(runs["hit"], False), case(runs["miss"], True)]
    run_rule_tests(yaml.safe_dump(alert_rules(config)), cases, tmp_path)


def test_verify_names_a_replica_whose_lmcache_is_degraded(fleet: Any) -> None:
    """Named from the Pod's own log before anything is sent to it (LMCache 0.3 stops vLLM's
    engine at the first request in that mode)."""
    outcome = _verify(fleet, "degraded", 13)
    assert isinstance(outcome, Check) and outcome.status == "fail", outcome
    assert "Pod pod-b: LMCache started in its degraded mode (recompute)" in outcome.detail
    assert "pod-a" not in outcome.detail
    assert fleet["degraded"].ready()  # nothing was sent to it


@pytest.mark.parametrize(
    ("second", "cause"),
    [
        ("other", "they do not share an L2 folder"),
        ("chunk", "chunk sizes (LMCACHE_CHUNK_SIZE) differ"),
        ("degraded", "LMCache runs in its degraded mode (recompute)"),
    ],
)
def test_bench_compare_fails_an_l2_target_naming_why(
    fleet: Any, second: str, cause: str, tmp_path: Path
) -> None:
    code, summary = _compare(tmp_path, f"curvine={fleet['a'].url},{fleet[second].url}")
    hit = _verdicts(summary)[("curvine", "cross-Pod hit")]
    assert (code, hit["status"]) == (1, "fail"), hit
    assert cause in hit["reason"], hit["reason"]
