"""The comparison in order: each workload on each tier in turn (one tier at a time, so the tiers
do not load each other), the counters of every replica read around it, then the verdicts."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from kubernetes.client.exceptions import ApiException

from infra.config.bench import BenchConfig, ChatWorkload
from scripts.lib.bench_compare.scale_out import Joiner, scale_out
from scripts.lib.bench_compare.scrape import (
    DEGRADED,
    Counters,
    Scrape,
    add,
    increase,
    probe_lmcache,
)
from scripts.lib.bench_compare.targets import BenchTarget
from scripts.lib.bench_compare.verdicts import Verdict, judge, tier_result
from scripts.lib.bench_compare.workloads import (
    Sender,
    Waits,
    WorkloadRun,
    chat,
    cross_pod,
    sweep,
)
from scripts.lib.errors import OperationError, describe_failure
from scripts.lib.progress import Steps

WORKLOADS = ("sweep", "chat", "cross_pod", "scale_out")


@dataclass(frozen=True)
class Plan:
    seed: int
    lengths: tuple[int, ...]
    repeats: int
    chat: ChatWorkload
    cross_pod_words: int
    max_tokens: int
    waits: Waits
    workloads: tuple[str, ...] = WORKLOADS


@dataclass(frozen=True)
class Overrides:
    """What the command line sets instead of ``bench`` in config (None: not given)."""

    lengths: tuple[int, ...] | None = None
    repeats: int | None = None
    users: int | None = None
    rounds: int | None = None
    concurrency: int | None = None
    max_tokens: int | None = None
    workloads: tuple[str, ...] | None = None


def plan_from(bench: BenchConfig, seed: int, waits: Waits, given: Overrides) -> Plan:
    """``bench`` in config with the command line's ``given`` values; the speedup verdict's
    length joins the sweep's lengths."""
    lengths = given.lengths or bench.sweep_prompt_words
    if bench.speedup_prompt_words not in lengths:
        lengths = tuple(sorted((*lengths, bench.speedup_prompt_words)))
    chat_given = {"users": given.users, "rounds": given.rounds, "concurrency": given.concurrency}
    return Plan(
        seed,
        tuple(lengths),
        given.repeats or bench.sweep_repeats,
        bench.chat.model_copy(update={k: v for k, v in chat_given.items() if v is not None}),
        bench.cross_pod_prompt_words,
        given.max_tokens or bench.max_tokens,
        waits,
        given.workloads or WORKLOADS,
    )


def request_count(plan: Plan, targets: list[BenchTarget], joinable: Mapping[str, Joiner]) -> int:
    per_tier = {
        "sweep": 2 * len(plan.lengths) * plan.repeats,
        "chat": plan.chat.users * plan.chat.rounds,
        "cross_pod": 2,
        "scale_out": 2,
    }
    skipped = {
        "cross_pod": lambda t: t.pods < 2,
        "scale_out": lambda t: 2 * (t.endpoint not in joinable),
    }
    return sum(
        per_tier[w] - skipped.get(w, lambda t: 0)(t) for w in plan.workloads for t in targets
    )


@dataclass
class Comparison:
    plan: Plan
    targets: list[BenchTarget]
    models: dict[str, str]
    """Endpoint -> the model id its first replica serves."""
    at_words: int
    """The sweep length the speedup verdict reads (``bench.speedup_prompt_words``)."""
    started: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"))
    runs: list[WorkloadRun] = field(default_factory=list)
    judged: list[tuple[WorkloadRun, Verdict]] = field(default_factory=list)
    """Each judged run beside its verdict, in run order."""

    @property
    def verdicts(self) -> list[Verdict]:
        return [v for _, v in self.judged]

    @property
    def failed(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.status == "fail"]

    def verdicts_of(self, target: BenchTarget) -> list[Verdict]:
        """The verdicts of this target's runs (by the target itself: two targets may share an
        endpoint label)."""
        return [v for run, v in self.judged if run.target is target]

    def result_of(self, target: BenchTarget) -> str:
        return tier_result(self.verdicts_of(target))


def _counters(scrape: Scrape, t: BenchTarget) -> list[Counters]:
    return [scrape(u) for u in t.metrics_urls]


NOT_JOINABLE = (
    "no replica to join: endpoints from config scale out by one; with --target "
    "name a new replica with --joining TIER=URL"
)


def _scale_out(
    run: WorkloadRun,
    plan: Plan,
    send: Sender,
    scrape: Scrape,
    join: Joiner | None,
    tick: Callable[[str], None],
) -> None:
    """The new replica's counters go to ``extra["new_replica"]``; a replica that could not
    join (at its maximum, never Ready) leaves the reason in ``extra["error"]``."""
    t = run.target
    if join is None:
        run.extra["not_run"] = NOT_JOINABLE
        return
    try:
        run.samples, run.extra["new_replica"] = scale_out(
            send,
            t,
            join,
            plan.cross_pod_words,
            plan.seed,
            plan.max_tokens,
            scrape,
            plan.waits,
            tick,
        )
    except (OperationError, ApiException) as exc:
        # One line, as a command's failure is (the API's answer, with its headers, is not).
        failure = describe_failure(exc)
        run.extra["error"] = f"no replica joined: {failure.message if failure else exc}"


def _run_one(
    workload: str,
    t: BenchTarget,
    plan: Plan,
    send: Sender,
    scrape: Scrape,
    tick: Callable[[str], None],
    join: Joiner | None = None,
) -> WorkloadRun:
    before = _counters(scrape, t)
    start = time.perf_counter()
    run = WorkloadRun(workload, t)
    if workload == "sweep":
        run.samples = sweep(send, t, plan.lengths, plan.repeats, plan.seed, plan.max_tokens, tick)
    elif workload == "chat":
        run.samples = chat(send, t, plan.chat, plan.seed, tick)
    elif workload == "cross_pod":
        run.samples, second = cross_pod(
            send, t, plan.cross_pod_words, plan.seed, plan.max_tokens, scrape, plan.waits, tick
        )
        run.extra["second_replica"] = second
    else:
        _scale_out(run, plan, send, scrape, join, tick)
    run.wall_s = time.perf_counter() - start
    if workload in ("sweep", "chat"):
        time.sleep(plan.waits.flush_s)  # the others waited for their own reading
    run.replica_deltas = [increase(b, a) for b, a in zip(before, _counters(scrape, t), strict=True)]
    total: Counters = {}
    for deltas in run.replica_deltas:
        total = add(total, deltas)
    # The cross-Pod test's shares are the second replica's: where it found the first's prompt;
    # the scale-out's the new replica's.
    second = run.extra.get("second_replica", run.extra.get("new_replica"))
    run.deltas = second if second is not None else total
    return run


def compare(
    targets: list[BenchTarget],
    plan: Plan,
    send: Sender,
    scrape: Scrape,
    steps: Steps,
    bench: BenchConfig,
    kv_bytes_per_token: int,
    models: dict[str, str],
    joiners: Mapping[str, Joiner] | None = None,
    probe: Callable[[str], str | None] = probe_lmcache,
) -> Comparison:
    """``joiners``: by endpoint label, how a replica joins it (the scale-out workload).
    ``probe``: a replica's LMCache state by its metrics URL (``scrape.lmcache_state``), read
    once before any request: LMCache in its degraded mode stops vLLM's engine at the
    first request."""
    result = Comparison(plan, targets, models, bench.speedup_prompt_words)
    pairs = [(u, m) for t in targets for u, m in zip(t.urls, t.metrics_urls, strict=True)]
    degraded = [u for u, m in pairs if probe(m) == DEGRADED]
    for workload in plan.workloads:
        for t in targets:
            if any(u in degraded for u in t.urls):
                # Nothing is sent to it: its judged workloads fail on that (verdicts.judge).
                if workload in ("sweep", "cross_pod"):
                    result.runs.append(WorkloadRun(workload, t))
                continue
            steps.phase(f"{workload} on {t.l2_backend} ({t.endpoint})")
            join = (joiners or {}).get(t.endpoint)
            result.runs.append(_run_one(workload, t, plan, send, scrape, steps.advance, join))
    result.judged = judge(result.runs, bench, kv_bytes_per_token, degraded)
    return result
