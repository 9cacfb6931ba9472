"""Counters read from a /metrics page: summed over label sets, their increase across a Pod
restart. No double: Prometheus text as vLLM and LMCache print it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from scripts.lib.bench_compare import scrape
from scripts.lib.bench_compare.scrape import DEGRADED, increase, lmcache_state, parse_counters

PAGES = Path(__file__).resolve().parents[3] / "fixtures" / "lmcache-metrics"

PAGE = """\
# HELP vllm:prefix_cache_queries_total Prefix cache queries.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="/opt/ml/model"} 1024.0
vllm:prefix_cache_queries_total{engine="1",model_name="/opt/ml/model"} 512.0
vllm:prefix_cache_queries_created{engine="0",model_name="/opt/ml/model"} 1.7e9
lmcache:num_hit_tokens_total{model_name="/opt/ml/model",worker_id="0"} 768.0 1767225600000
lmcache:num_remote_read_requests_total 3
vllm:num_requests_running{engine="0",model_name="/opt/ml/model"} 2.0
"""


def test_each_counter_is_summed_over_its_label_sets_and_other_series_are_left_out() -> None:
    assert parse_counters(PAGE) == {
        "vllm:prefix_cache_queries_total": 1536.0,
        "lmcache:num_hit_tokens_total": 768.0,
        "lmcache:num_remote_read_requests_total": 3.0,
    }


def test_a_counter_that_went_down_restarted_so_its_value_is_the_increase() -> None:
    before = {"a": 100.0, "b": 50.0}
    assert increase(before, {"a": 130.0, "b": 20.0, "c": 5.0}) == {"a": 30.0, "b": 20.0, "c": 5.0}


# A replica's LMCache series as vLLM CPU servers with LMCache in process exposed them
# (tests/server): the scheduler's logger always, the engine's (role worker) once it started.
SCHEDULER = (
    'lmcache:storage_events_ongoing_count{model_name="/opt/ml/model",role="scheduler",'
    'served_model_name="/opt/ml/model",worker_id="0"} 0.0\n'
)
WORKER = (
    'lmcache:num_hit_tokens_total{model_name="/opt/ml/model",role="worker",'
    'served_model_name="/opt/ml/model",worker_id="0"} 1280.0\n'
)


def test_lmcache_is_degraded_when_only_its_scheduler_side_exposes_series() -> None:
    assert lmcache_state(PAGE + SCHEDULER) == DEGRADED
    assert lmcache_state(PAGE + SCHEDULER + WORKER) is None
    assert lmcache_state(PAGE + WORKER) is None
    assert lmcache_state(PAGE) is None  # no LMCache series: nothing to judge by


@pytest.mark.parametrize("tag", ["v0.3.15", "v0.4.7"])
def test_a_real_replicas_page_reads_degraded_only_when_its_lmcache_engine_failed(tag: str) -> None:
    """Pages of real vLLM CPU replicas before any request (tests/fixtures/lmcache-metrics): 0.4.7's
    degraded replica still shows its storage manager's gauges in the worker role."""
    assert lmcache_state((PAGES / f"{tag}-degraded.prom").read_text()) == DEGRADED
    assert lmcache_state((PAGES / f"{tag}-healthy.prom").read_text()) is None


def _serving(pages: list[str]) -> Callable[[str, float], str]:
    """A ``_page`` that serves ``pages`` one after the other."""
    served = iter(pages)
    return lambda url, timeout: next(served)


def test_a_page_that_reads_degraded_is_read_again_after_lmcaches_stats_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An engine that started moments ago has not written its counters yet: its second page
    decides."""
    degraded = (PAGES / "v0.4.7-degraded.prom").read_text()
    healthy = (PAGES / "v0.4.7-healthy.prom").read_text()
    for pages, want in (([degraded, healthy], None), ([degraded, degraded], DEGRADED)):
        waited: list[float] = []
        monkeypatch.setattr(scrape, "_page", _serving(pages))
        assert scrape.probe_lmcache("http://pod:8000", wait=waited.append) == want
        assert waited == [scrape.STATS_INTERVAL_S]
    monkeypatch.setattr(scrape, "_page", lambda url, timeout: healthy)
    waited = []
    assert scrape.probe_lmcache("http://pod:8000", wait=waited.append) is None
    assert waited == []
