"""Each tier's verdicts against ``bench`` in config, from the source post's figures: the second
replica reads a repeated prompt from L2 (``min_cross_pod_hit``, 100 % in the post), and a warm
prompt's first token comes ``min_warm_speedup`` times sooner than a cold one's at about 2,500
tokens (2.7x in the post). An endpoint without L2 is the baseline: its verdicts are n/a. A
verdict that cannot be measured fails, with the reason: no LMCache counters, or warm requests
that cannot be shown to have run on another Pod than the one that computed the prompt (one URL,
a router, two URLs of one Pod: ``two_pods``). A tier's result is the conjunction of its
verdicts (``tier_result``). A replica whose LMCache runs in its degraded mode (its /metrics:
``scrape.lmcache_state``) fails every verdict of its tier, named; a cross-Pod miss is explained
from the two replicas' L2 counters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from infra.config.bench import BenchConfig
from infra.metrics.tiers import L2_READS, L2_WRITES, LOADED, l2_hit_share
from scripts.lib.bench_compare.scrape import L2_WRITE_BYTES, REQUESTS, Counters
from scripts.lib.bench_compare.stats import figures
from scripts.lib.bench_compare.workloads import WorkloadRun

CROSS_POD = "cross-Pod hit"
SPEEDUP = "warm/cold TTFT"
SCALE_OUT = "new replica L2 share"


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


def _verdict(
    run: WorkloadRun,
    check: str,
    measured: float | None,
    threshold: float,
    missing: str,
    why: str = "",
) -> Verdict:
    t = run.target
    if measured is None:
        return Verdict(t.l2_backend, t.endpoint, check, None, threshold, "fail", missing)
    ok = measured >= threshold
    reason = f"{measured:.2f} {'>=' if ok else '<'} {threshold:g}"
    if not ok and why:
        reason = f"{reason}: {why}"
    return Verdict(
        t.l2_backend, t.endpoint, check, measured, threshold, "pass" if ok else "fail", reason
    )


def _chunk_bytes(deltas: Counters) -> float | None:
    writes = deltas.get(L2_WRITES, 0.0)
    return deltas.get(L2_WRITE_BYTES, 0.0) / writes if writes else None


def cross_pod_miss(run: WorkloadRun) -> str:
    """Why the second replica read less than the first one stored, from each replica's L2
    counters over the test: a chunk of another size (another chunk size: other keys), or no
    read of chunks the first wrote (not one L2 folder, or other keys: PYTHONHASHSEED)."""
    if len(run.replica_deltas) < 2:
        return ""
    first, second = run.replica_deltas[:2]
    wrote, size_a, size_b = first.get(L2_WRITES, 0.0), _chunk_bytes(first), _chunk_bytes(second)
    if size_a and size_b and size_a != size_b:
        return (
            f"the replicas write chunks of {size_a:,.0f} and {size_b:,.0f} bytes: their chunk "
            "sizes (LMCACHE_CHUNK_SIZE) differ, so do their chunk keys"
        )
    if wrote == 0 and first.get(LOADED, 0.0) > 0:
        return "the first replica found the prompt already cached (a seed used before?)"
    if wrote == 0:
        return "the first replica wrote nothing to L2 (is its L2 mounted and writable?)"
    read = second.get(L2_READS, 0.0)
    return (
        f"the second replica read {read:g} of the {wrote:g} chunks the first wrote to L2: they "
        "do not share an L2 folder (claim, subPath) or do not key chunks alike (PYTHONHASHSEED)"
    )


def cross_pod_hit(run: WorkloadRun, kv_bytes_per_token: int) -> float | None:
    """Share of the prompt's whole chunks (LMCache stores whole 256-token chunks; the tail is
    recomputed) that the second replica (the scale-out: the new one) read from L2, from its
    counters; None when there is no such replica or its /metrics has no LMCache counters."""
    deltas = run.extra.get("second_replica", run.extra.get("new_replica"))
    warm = [s for s in run.samples if s.kind == "warm"]
    if deltas is None or not warm:
        return None
    prompt = warm[0].prompt_tokens or warm[0].detail.get("prompt_words", 0)
    return l2_hit_share(deltas, prompt, run.target.l2_backend, kv_bytes_per_token)


TWO_PODS = "not measured: needs two distinct Pods"


def two_pods(run: WorkloadRun) -> str | None:
    """Why the warm requests of ``run`` cannot be shown to have run on another Pod than the
    cold ones that computed their prompts; None when they can. Shown when the replicas are two
    URLs and each replica's /metrics counted exactly the requests sent to it
    (``vllm:request_success_total``): two URLs of one Pod (two port-forwards to one Service)
    count every request on both, and a router spreads them so the counts do not match."""
    t = run.target
    if t.pods < 2:
        return f"{TWO_PODS}; one URL given (a router or one Ready Pod): give a second Pod"
    if len(set(t.urls)) < 2 or len(set(t.metrics_urls)) < 2:
        return f"{TWO_PODS}; both replicas are {t.urls[0]}: give a second Pod"
    for i, deltas in enumerate(run.replica_deltas):
        sent = sum(1 for s in run.samples if s.replica == i)
        counted = deltas.get(REQUESTS)
        if counted is None:
            return (
                f"{TWO_PODS}; replica {i + 1}'s /metrics has no {REQUESTS} to show which "
                "Pod served the warm requests"
            )
        if counted != sent:
            return (
                f"{TWO_PODS}; replica {i + 1} ({t.urls[i]}) counted {counted:g} requests "
                f"where {sent} were sent to it (one Pod behind both URLs, a router, or "
                "other traffic)"
            )
    return None


def _unmeasured(run: WorkloadRun, degraded: Sequence[str]) -> tuple[str, str] | None:
    """The status and reason of a verdict not measured: n/a without L2, a failure when a
    replica's LMCache is degraded or the warm requests may have run on the Pod that computed
    their prompts."""
    if run.target.l2_backend == "none":
        return "n/a", "no L2: the baseline the others are compared with"
    down = [f"replica {i + 1} ({u})" for i, u in enumerate(run.target.urls) if u in degraded]
    if down:
        why = (
            f"{', '.join(down)}: LMCache runs in its degraded mode (recompute): its /metrics has "
            "none of the series LMCache's engine writes; its log says why"
        )
        return "fail", why
    reason = two_pods(run)
    return None if reason is None else ("fail", reason)


def judge(
    runs: list[WorkloadRun],
    bench: BenchConfig,
    kv_bytes_per_token: int,
    degraded: Sequence[str] = (),
) -> list[tuple[WorkloadRun, Verdict]]:
    """The verdict of each judged run (the sweep, the cross-Pod test and the scale-out),
    beside its run. ``degraded``: the URLs of replicas whose LMCache is degraded."""
    out = []
    for run in runs:
        t = run.target
        if run.workload == "scale_out":
            if "not_run" not in run.extra:
                out.append((run, _scale_out_verdict(run, bench, kv_bytes_per_token)))
            continue
        if run.workload not in ("sweep", "cross_pod"):
            continue
        check = CROSS_POD if run.workload == "cross_pod" else SPEEDUP
        threshold = bench.min_cross_pod_hit if check == CROSS_POD else bench.min_warm_speedup
        unmeasured = _unmeasured(run, degraded)
        if unmeasured is not None:
            status, why = unmeasured
            verdict = Verdict(t.l2_backend, t.endpoint, check, None, threshold, status, why)
            out.append((run, verdict))
            continue
        if check == CROSS_POD:
            measured = cross_pod_hit(run, kv_bytes_per_token)
            missing = (
                "not measured: no LMCache counters on the second replica's /metrics "
                "(is PROMETHEUS_MULTIPROC_DIR set?)"
            )
            why = cross_pod_miss(run)
        else:
            measured = figures(run, kv_bytes_per_token, bench.speedup_prompt_words).speedup
            missing = f"not measured: no sweep at {bench.speedup_prompt_words} words"
            why = ""
        out.append((run, _verdict(run, check, measured, threshold, missing, why)))
    return out


def _scale_out_verdict(run: WorkloadRun, bench: BenchConfig, kv_bytes_per_token: int) -> Verdict:
    """The new replica's L2 share of the known prefix: n/a without L2, a failure when no
    replica joined."""
    t, threshold = run.target, bench.min_scale_out_l2_share
    if t.l2_backend == "none":
        why = "no L2: the new replica starts cold, the baseline the others are compared with"
        return Verdict(t.l2_backend, t.endpoint, SCALE_OUT, None, threshold, "n/a", why)
    if "error" in run.extra:
        return Verdict(
            t.l2_backend, t.endpoint, SCALE_OUT, None, threshold, "fail", run.extra["error"]
        )
    missing = (
        "not measured: no LMCache counters on the new replica's /metrics "
        "(is PROMETHEUS_MULTIPROC_DIR set?)"
    )
    return _verdict(run, SCALE_OUT, cross_pod_hit(run, kv_bytes_per_token), threshold, missing)


def tier_result(verdicts: Sequence[Verdict]) -> str:
    """A tier's result, the conjunction of its verdicts: ``pass`` when every one passed,
    ``baseline`` when every one is n/a (no L2), ``not judged`` when its workloads gave none
    (the chat alone), else ``fail``."""
    statuses = {v.status for v in verdicts}
    if not statuses:
        return "not judged"
    if statuses == {"n/a"}:
        return "baseline"
    return "pass" if statuses == {"pass"} else "fail"
