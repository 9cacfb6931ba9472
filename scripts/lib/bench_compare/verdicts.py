"""Each tier's verdicts against ``bench`` in config, from the source post's figures: the second
replica reads a repeated prompt from L2 (``min_cross_pod_hit``, 100 % in the post), and a warm
prompt's first token comes ``min_warm_speedup`` times sooner than a cold one's at about 2,500
tokens (2.7x in the post). An endpoint without L2 is the baseline: its verdicts are n/a. A
verdict that cannot be measured (one replica, no LMCache counters) fails, with the reason."""

from __future__ import annotations

from dataclasses import dataclass

from infra.config.bench import BenchConfig
from infra.tiers import l2_hit_share
from scripts.lib.bench_compare.stats import figures
from scripts.lib.bench_compare.workloads import WorkloadRun

CROSS_POD = "cross-Pod hit"
SPEEDUP = "warm/cold TTFT"


@dataclass(frozen=True)
class Verdict:
    l2_backend: str
    endpoint: str
    check: str
    measured: float | None
    threshold: float
    status: str
    """pass, fail or n/a."""
    reason: str


def _verdict(run: WorkloadRun, check: str, measured: float | None, threshold: float,
             missing: str) -> Verdict:  # fmt: skip
    t = run.target
    if measured is None:
        return Verdict(t.l2_backend, t.endpoint, check, None, threshold, "fail", missing)
    ok = measured >= threshold
    reason = f"{measured:.2f} {'>=' if ok else '<'} {threshold:g}"
    return Verdict(
        t.l2_backend, t.endpoint, check, measured, threshold, "pass" if ok else "fail", reason
    )


def cross_pod_hit(run: WorkloadRun, kv_bytes_per_token: int) -> float | None:
    """Share of the prompt's whole chunks (LMCache stores whole 256-token chunks; the tail is
    recomputed) that the second replica read from L2, from its counters; None when there is no
    second replica or its /metrics has no LMCache counters."""
    deltas = run.extra.get("second_replica")
    warm = [s for s in run.samples if s.kind == "warm"]
    if deltas is None or not warm:
        return None
    prompt = warm[0].prompt_tokens or warm[0].detail.get("prompt_words", 0)
    return l2_hit_share(deltas, prompt, run.target.l2_backend, kv_bytes_per_token)


def verdicts(runs: list[WorkloadRun], bench: BenchConfig, kv_bytes_per_token: int) -> list[Verdict]:
    out = []
    for run in runs:
        t = run.target
        if run.workload not in ("sweep", "cross_pod"):
            continue
        check = CROSS_POD if run.workload == "cross_pod" else SPEEDUP
        threshold = bench.min_cross_pod_hit if check == CROSS_POD else bench.min_warm_speedup
        if t.l2_backend == "none":
            out.append(Verdict(t.l2_backend, t.endpoint, check, None, threshold, "n/a",
                               "no L2: the baseline the others are compared with"))  # fmt: skip
            continue
        if t.pods < 2:
            out.append(Verdict(t.l2_backend, t.endpoint, check, None, threshold, "fail",
                               "not measured: one replica; give a second URL or Pod"))  # fmt: skip
            continue
        if check == CROSS_POD:
            measured = cross_pod_hit(run, kv_bytes_per_token)
            missing = "not measured: no LMCache counters on the second replica's /metrics " \
                      "(is PROMETHEUS_MULTIPROC_DIR set?)"  # fmt: skip
        else:
            measured = figures(run, kv_bytes_per_token, bench.speedup_prompt_words).speedup
            missing = f"not measured: no sweep at {bench.speedup_prompt_words} words"
        out.append(_verdict(run, check, measured, threshold, missing))
    return out
