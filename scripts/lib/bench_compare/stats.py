"""The figures of one workload on one tier: TTFT p50/p95 cold and warm, the speedup, throughput
and each tier's share of the prompt tokens (``infra.metrics.tiers.tier_shares`` of the counters'
increase)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from infra.metrics.tiers import LOADED, QUERIED, TierShares, tier_shares
from scripts.lib.bench_compare.workloads import WorkloadRun


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile by linear interpolation between the closest ranks (numpy's default,
    ``statistics.quantiles(method="inclusive")``): p50 of an even count is the mean of the two
    middle values; p95 of 3 values lies 90 % of the way from the second to the third."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class Figures:
    workload: str
    l2_backend: str
    endpoint: str
    requests: int
    cold_p50_ms: float | None
    cold_p95_ms: float | None
    warm_p50_ms: float | None
    warm_p95_ms: float | None
    output_tokens_per_s: float
    requests_per_s: float
    shares: TierShares | None
    """None when the replicas' /metrics carry none of the counters."""

    @property
    def speedup(self) -> float | None:
        if self.cold_p50_ms is None or not self.warm_p50_ms:
            return None
        return self.cold_p50_ms / self.warm_p50_ms


def figures(run: WorkloadRun, kv_bytes_per_token: int, at_words: int | None = None) -> Figures:
    """``at_words``: the TTFT of the sweep's requests of that prompt length only (throughput
    and shares stay the whole workload's)."""
    timed = [s for s in run.samples if at_words is None or s.detail.get("prompt_words") == at_words]
    cold = [s.ttft_ms for s in timed if s.kind == "cold"]
    warm = [s.ttft_ms for s in timed if s.kind == "warm"]
    wall = run.wall_s or math.inf
    tokens = sum(s.completion_tokens or 0 for s in run.samples)
    shares = None
    if QUERIED in run.deltas:
        shares = tier_shares(run.deltas, run.target.l2_backend, kv_bytes_per_token)
        if LOADED not in run.deltas:  # no LMCache series on /metrics: L1 and L2 unknown
            shares = replace(shares, l1=None, l2=None, recomputed=None)
    return Figures(
        run.workload,
        run.target.l2_backend,
        run.target.endpoint,
        len(run.samples),
        percentile(cold, 0.5),
        percentile(cold, 0.95),
        percentile(warm, 0.5),
        percentile(warm, 0.95),
        tokens / wall,
        len(run.samples) / wall,
        shares,
    )
