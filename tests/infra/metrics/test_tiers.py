"""Each tier's share of the prompt tokens, from the counters vLLM and LMCache export: the Python
form ``hpkv bench compare`` applies to scraped counters, and the PromQL form the dashboard,
the alerts and ``hpkv report`` query, which Prometheus's ``promtool`` evaluates here over series
rising by the same amounts (so the two forms cannot drift apart).

No double: the config model and promtool (skipped with the reason where it is absent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config import AppConfig, parse_config
from infra.config.kvcache import L2Backend
from infra.metrics.dashboards import Queries
from infra.metrics.tiers import (
    L0_HITS,
    L2_READ_BYTES,
    L2_READS,
    LMCACHE_CHUNK_TOKENS,
    LOADED,
    PROMISED,
    QUERIED,
    tier_shares,
)
from tests.support.config import SOURCE, with_overrides
from tests.support.promtool import needs_promtool, run_rule_tests

BPT = 147456  # observability.kv_bytes_per_token's default (Qwen3-8B, bf16)
# One second of traffic on an endpoint (the series below rise 60 times as much a minute):
# 10,240 prompt tokens looked up, 2,048 on the GPU, 6,144 promised by LMCache of which 5,120
# loaded, 12 chunks of them from L2.
PER_SECOND = {QUERIED: 10240, L0_HITS: 2048, PROMISED: 6144, LOADED: 5120, L2_READS: 12}


def _config(**endpoint: Any) -> AppConfig:
    raw = with_overrides({f"kvcache.endpoints.0.{k}": v for k, v in endpoint.items()})
    return parse_config(raw, SOURCE, "dev")


def test_fs_reads_count_one_chunk_each_and_l1_is_what_lmcache_loaded_beyond_them() -> None:
    shares = tier_shares(PER_SECOND, "curvine", BPT)
    l2 = 12 * LMCACHE_CHUNK_TOKENS / 10240
    assert shares.l0 == 0.2 and shares.l2 == pytest.approx(l2)
    assert shares.l1 == pytest.approx(0.5 - l2)
    assert shares.recomputed == pytest.approx(0.3)
    assert shares.load_shortfall == pytest.approx(1024 / 6144)


def test_tiered_storage_reads_are_halved_bytes_because_the_connector_counts_them_twice() -> None:
    doubled = {**PER_SECOND, L2_READ_BYTES: 2 * 3072 * BPT, L2_READS: 999}
    assert tier_shares(doubled, "tieredstorage", BPT).l2 == pytest.approx(0.3)


def test_an_endpoint_without_l2_has_no_l2_share_and_nothing_looked_up_has_no_shares() -> None:
    none = tier_shares(PER_SECOND, "none", BPT)
    assert none.l2 is None and none.l1 == pytest.approx(0.5)
    idle = tier_shares({}, "curvine", BPT)
    assert (idle.l0, idle.l1, idle.l2, idle.load_shortfall) == (None, None, None, None)


def _series(l2_backend: L2Backend, labels: dict[str, str]) -> list[dict[str, str]]:
    per_second = {**PER_SECOND, L2_READ_BYTES: 2 * 3072 * BPT}
    inner = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return [
        {"series": f"{name}{{{inner}}}", "values": f"0+{60 * value}x20"}
        for name, value in per_second.items()
    ]


@needs_promtool
@pytest.mark.parametrize("backend", ["curvine", "fsx_lustre"])
def test_the_dashboard_queries_give_the_shares_bench_computes(backend: str, tmp_path: Path) -> None:
    """Prometheus evaluates each endpoint's L0, L1, L2 and failed-load queries over counters
    rising by ``PER_SECOND`` every second; each equals ``tier_shares`` of one second's increase."""
    config = parse_config(with_overrides({"kvcache.l2_backend": backend}), SOURCE, "dev")
    e = config.kvcache.endpoints[0]
    q = Queries(config, e)
    labels = {"endpoint": e.name, "namespace": e.namespace, "pod": "p-1"}
    shares = tier_shares(PER_SECOND, e.l2_backend, config.observability.kv_bytes_per_token)
    expected = {
        q.l0_hit_rate(): shares.l0,
        q.l1_hit_rate(): shares.l1,
        q.l2_hit_rate(): shares.l2,
        q.failed_load_rate(): shares.load_shortfall,
    }
    case = {
        "interval": "1m",
        "input_series": _series(e.l2_backend, labels),
        "promql_expr_test": [
            {"expr": expr, "eval_time": "10m", "exp_samples": [{"labels": "{}", "value": v}]}
            for expr, v in expected.items()
        ],
    }
    empty = yaml.safe_dump({"groups": []})
    run_rule_tests(empty, [case], tmp_path)
