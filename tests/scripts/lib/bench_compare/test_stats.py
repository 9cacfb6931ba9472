"""Percentiles and the figures of a workload, on recorded samples (no double)."""

from __future__ import annotations

import statistics

import pytest

from scripts.lib.bench_compare.stats import figures, percentile
from scripts.lib.bench_compare.targets import BenchTarget
from scripts.lib.bench_compare.workloads import Sample, WorkloadRun, sweep
from scripts.lib.openai_stream import StreamResult

T = BenchTarget("curvine", "inference/qwen3-8b", ("http://a", "http://b"), ("http://a", "http://b"))


def test_percentiles_interpolate_between_the_closest_ranks_like_statistics_inclusive() -> None:
    values = [40.0, 10.0, 30.0, 20.0]
    assert percentile(values, 0.5) == 25.0
    assert percentile([10.0, 20.0, 30.0], 0.95) == pytest.approx(29.0)
    for q in (0.5, 0.95):
        cuts = statistics.quantiles(values, n=100, method="inclusive")
        assert percentile(values, q) == pytest.approx(cuts[round(q * 100) - 1])
    assert percentile([], 0.5) is None


def _sample(kind: str, ttft: float, words: int, tokens: int = 8) -> Sample:
    return Sample(
        "sweep",
        "curvine",
        kind,
        0 if kind == "cold" else 1,
        ttft,
        ttft + 10,
        words,
        tokens,
        0.0,
        {"prompt_words": words},
    )


def test_the_sweep_reads_ttft_at_one_length_and_throughput_over_the_whole_run() -> None:
    run = WorkloadRun("sweep", T, wall_s=2.0)
    run.samples = [
        _sample("cold", 300.0, 2500),
        _sample("warm", 100.0, 2500),
        _sample("cold", 120.0, 1000),
        _sample("warm", 60.0, 1000),
    ]
    f = figures(run, 147456, at_words=2500)
    assert (f.cold_p50_ms, f.warm_p50_ms, f.speedup) == (300.0, 100.0, 3.0)
    assert (f.requests_per_s, f.output_tokens_per_s) == (2.0, 16.0)
    assert f.shares is None  # no counters were read


def test_without_lmcache_counters_the_l1_and_l2_shares_are_unknown_not_zero() -> None:
    vllm_only = {"vllm:prefix_cache_queries_total": 100.0, "vllm:prefix_cache_hits_total": 25.0}
    run = WorkloadRun("sweep", T, wall_s=1.0, deltas=vllm_only)
    shares = figures(run, 147456).shares
    assert shares is not None and shares.l0 == 0.25
    assert (shares.l1, shares.l2, shares.recomputed) == (None, None, None)


def test_the_figures_are_those_of_the_times_the_csv_prints() -> None:
    """A first token timed at 1001.0500004 ms prints as 1001.05 in requests.csv; the report's
    p50 is that figure's (1001.0 once rounded to 0.1), not the unrounded one's (1001.1)."""
    timed = iter([1001.0500004, 300.0])

    def send(url: str, prompt: str, max_tokens: int) -> StreamResult:
        ttft = next(timed)
        return StreamResult(ttft, ttft + 5.0000004, "ok", 10, 1)

    run = WorkloadRun("sweep", T, wall_s=1.0)
    run.samples = sweep(send, T, [50], 1, 7, 1, lambda _: None)
    printed = [float(str(s.ttft_ms)) for s in run.samples]  # what csv.DictWriter writes
    assert printed == [1001.05, 300.0] and run.samples[0].total_ms == 1006.05
    f = figures(run, 147456)
    assert f.cold_p50_ms is not None and f"{f.cold_p50_ms:.1f}" == f"{printed[0]:.1f}" == "1001.0"
