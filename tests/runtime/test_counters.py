"""LMCache's real counters, as a replica's /metrics gives them (prometheus_client's multiprocess
collector over the files LMCache's own PrometheusLogger wrote), feed the judges: bench compare's
and verify's read share, the L2 alerts through promtool, and the fake model server, whose
exposition must look the same (names, types, labels) so the tests built on it cannot drift."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config import AppConfig
from infra.metrics.alerts import alert_rules
from infra.metrics.tiers import L2_READS, LMCACHE_CHUNK_TOKENS, LOADED, QUERIED, tier_shares
from k8s.l2_pod import MULTIPROC_ENV
from k8s.names import vllm_job
from scripts.lib.bench_compare.scrape import parse_counters
from tests.doubles.fake_tiers import Tiers, TierSpec
from tests.support.promtool import expand, needs_promtool, run_rule_tests
from tests.support.runtime import (
    Container,
    container_of,
    endpoint_pod,
    needs_mount_namespace,
    operator_of,
)
from tests.support.runtime_replica import TOKENS, WHOLE, replica

pytestmark = needs_mount_namespace
Rendered = dict[str, tuple[AppConfig, list[dict[str, Any]]]]
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\} (\S+)$")


@pytest.fixture(scope="module")
def dev_pod(rendered: Rendered) -> tuple[AppConfig, Any, dict[str, Any]]:
    config, objs = rendered["dev"]
    (e,) = config.kvcache.mounted_l2_endpoints
    return config, e, endpoint_pod(objs, e, operator_of(config))


@pytest.fixture(scope="module")
def expositions(
    image: str, dev_pod: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """The reading replica's /metrics text: with the L2 as rendered, and with no claim mounted."""
    _, e, pod = dev_pod
    out = {}
    for case in ("healthy", "no claim"):
        tmp = tmp_path_factory.mktemp(case.replace(" ", "-"))
        a = container_of(pod, tmp / "claims", tmp / "a")
        b = container_of(pod, tmp / "claims", tmp / "b")
        if case == "no claim":
            for c in (a, b):
                c.mounts.pop(next(iter(c.claims)))
        replica(image, a, "store", e)
        out[case] = replica(image, b, "retrieve", e)["exposition"]
    return out


def _samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    found = []
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m and m[1].startswith("lmcache:"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m[2]))
            found.append((m[1], labels, float(m[3])))
    return found


def test_the_read_share_is_whole_chunks_from_the_real_counters(
    expositions: dict[str, str], dev_pod: Any
) -> None:
    config, e, _ = dev_pod
    bpt = config.observability.kv_bytes_per_token
    for case, want in (("healthy", WHOLE / TOKENS), ("no claim", 0.0)):
        deltas = parse_counters(expositions[case])
        # vLLM's queries of the same prompt (its own counter; no vLLM runs here).
        shares = tier_shares({**deltas, QUERIED: TOKENS}, e.l2_backend, bpt)
        assert shares.l2 == pytest.approx(want), case
        assert deltas.get(L2_READS, 0) * LMCACHE_CHUNK_TOKENS == want * TOKENS
    assert parse_counters(expositions["healthy"])[LOADED] == WHOLE


@needs_promtool
def test_the_l2_alert_fires_on_the_real_counters_of_a_broken_l2_only(
    expositions: dict[str, str], dev_pod: Any, tmp_path: Path
) -> None:
    """Series as the collector stores them: the real names and labels of LMCache's exposition,
    plus the labels the scrape job adds; each rises by the run's value every minute, beside
    vLLM's queries and requests of the same prompt."""
    config, e, _ = dev_pod
    rules = yaml.safe_dump(alert_rules(config))
    scrape = {
        "job": vllm_job(e.namespace, e.name),
        "namespace": e.namespace,
        "endpoint": e.name,
        "pod": f"{e.name}-0",
        "node": "gpu-1",
    }

    def series(text: str) -> list[dict[str, str]]:
        rising = [(n, {**labels, **scrape}, v) for n, labels, v in _samples(text)]
        rising += [
            ("vllm:prefix_cache_queries_total", {**scrape, "engine": "0"}, TOKENS),
            ("vllm:request_success_total", {**scrape, "engine": "0"}, 1.0),
        ]
        return [
            {
                "series": name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(lab.items())) + "}",
                "values": f"0+{value}x60",
            }
            for name, lab, value in rising
        ]

    (rule,) = [
        r
        for g in alert_rules(config)["groups"]
        for r in g["rules"]
        if r["alert"] == "KvCacheL2HitRateNearZero"
    ]
    labels = {"severity": "warning", "namespace": e.namespace, "endpoint": e.name}

    def case(text: str, fires: bool) -> dict[str, Any]:
        summary = expand(rule["annotations"]["summary"], labels, 0.0)
        alerts = [{"exp_labels": labels, "exp_annotations": {"summary": summary}}] if fires else []
        return {
            "interval": "1m",
            "input_series": series(text),
            "alert_rule_test": [
                {"eval_time": "50m", "alertname": "KvCacheL2HitRateNearZero", "exp_alerts": alerts}
            ],
        }

    cases = [case(expositions["healthy"], False), case(expositions["no claim"], True)]
    run_rule_tests(rules, cases, tmp_path)


def test_the_fake_model_server_exposes_lmcaches_counters_as_lmcache_does(
    image: str, expositions: dict[str, str]
) -> None:
    real = _samples(expositions["healthy"])
    real_types = dict(re.findall(r"^# TYPE (lmcache:\S+) (\w+)$", expositions["healthy"], re.M))
    text = Tiers(TierSpec(tier="curvine")).metrics_text("/opt/ml/model")
    fake_samples = {n: set(lab) for n, lab, _ in _samples(text)}
    fake_types = dict(re.findall(r"^# TYPE (lmcache:\S+) (\w+)$", text, re.M))
    for name, labels, _ in real:
        if name in fake_samples:
            assert fake_samples[name] == set(labels), name
            assert fake_types.get(name) == real_types[name] == "counter", name


def test_a_restarted_container_counts_only_its_own_requests(
    image: str, dev_pod: Any, tmp_path: Path
) -> None:
    """The Pod keeps its volumes across a container restart; the multiprocess directory must
    not be one of them, or the dead process's counters stay summed in."""
    _, e, pod = dev_pod

    def writes(container: Container) -> float:
        text = replica(image, container, "store", e)["exposition"]
        return parse_counters(text, ["lmcache:num_remote_write_requests_total"])[
            "lmcache:num_remote_write_requests_total"
        ]

    def start(n: int, on_volume: bool) -> Container:
        """The container's n-th start (a new claim each time, so every start stores)."""
        c = container_of(pod, tmp_path / f"claims-{on_volume}-{n}", tmp_path / f"pod-{on_volume}")
        if not on_volume:
            return c
        # The directory on a volume that outlives the container, as an emptyDir does.
        kept = tmp_path / "kept-metrics"
        kept.mkdir(exist_ok=True)
        env = {**c.env, MULTIPROC_ENV: "/srv/metrics"}
        return Container(
            env, c.args, {**c.mounts, "/srv/metrics": kept}, c.claims, c.own | {"/srv"}
        )

    chunks = WHOLE / LMCACHE_CHUNK_TOKENS
    assert [writes(start(n, on_volume=False)) for n in (1, 2)] == [chunks, chunks]
    assert [writes(start(n, on_volume=True)) for n in (1, 2)] == [chunks, 2 * chunks]
