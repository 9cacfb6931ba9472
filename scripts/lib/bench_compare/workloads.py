"""The three workloads, each run against one tier's replicas; every request becomes a ``Sample``.

- ``sweep``: at each prompt length, a fresh seeded prompt on Pod A (cold), then the same bytes
  on Pod B (warm: what A stored, read back through L2); with one URL both go to it.
- ``chat``: multi-round chat with many users, the shape of vLLM production-stack's multi-round
  QA benchmark: a system prompt all users share, a context of each user's own, and each round
  the whole conversation so far plus a new question. Round r of every user goes out before
  round r+1 of any, at most ``concurrency`` at a time, user u's round r to replica (u + r) mod
  n, so a conversation moves between Pods and its history has to come from L2.
- ``cross_pod``: one fresh prompt written on Pod A and read on Pod B; the counters of B alone
  (scraped around its request) say where B found it.

Prompts are byte-identical across tiers for one seed (``scripts/lib/prompts.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from infra.config.bench import ChatWorkload
from scripts.lib.bench_compare.scrape import Counters, Scrape, increase
from scripts.lib.bench_compare.targets import BenchTarget
from scripts.lib.openai_stream import StreamResult
from scripts.lib.prompts import make_prompt, seed_for

Sender = Callable[[str, str, int], StreamResult]  # (base URL, prompt, max tokens) -> result
Tick = Callable[[str], None]  # one request done: what it was


@dataclass(frozen=True)
class Waits:
    """``settle_s``: between writing a prefix on Pod A and reading it on Pod B (LMCache stores
    after the response). ``flush_s``: before reading counters after a workload: LMCache
    publishes its counters to /metrics every 10 s (``LMCacheStatsLogger``, log_interval 10 in
    0.3.15's cache_engine.py), vLLM's at once."""

    settle_s: float = 2.0
    flush_s: float = 11.0


@dataclass
class Sample:
    """One request as the report's CSVs list it."""

    workload: str
    l2_backend: str
    kind: str
    """cold or warm."""
    replica: int
    ttft_ms: float
    total_ms: float
    prompt_tokens: int | None
    completion_tokens: int | None
    started_s: float
    """Seconds from the start of the workload on this tier."""
    detail: dict[str, int] = field(default_factory=dict)
    """prompt_words and repeat (sweep), user and round (chat)."""


@dataclass
class WorkloadRun:
    workload: str
    target: BenchTarget
    samples: list[Sample] = field(default_factory=list)
    wall_s: float = 0.0
    deltas: Counters = field(default_factory=dict)
    """Every replica's counters' increase over the workload, summed (the cross-Pod test: the
    second replica's over its own request)."""
    replica_deltas: list[Counters] = field(default_factory=list)
    """Each replica's counters' increase over the workload, in the order of its URLs."""
    extra: dict[str, Any] = field(default_factory=dict)


class _Clock:
    def __init__(self) -> None:
        self.start = time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self.start


def _sample(
    workload: str,
    t: BenchTarget,
    kind: str,
    replica: int,
    r: StreamResult,
    at: float,
    **detail: int,
) -> Sample:
    return Sample(
        workload,
        t.l2_backend,
        kind,
        replica,
        # Microseconds: the CSVs print these, and the report's figures must be the CSVs'.
        round(r.ttft_ms, 3),
        round(r.total_ms, 3),
        r.prompt_tokens,
        r.completion_tokens,
        round(at, 4),
        detail,
    )


def sweep(
    send: Sender,
    t: BenchTarget,
    lengths: Sequence[int],
    repeats: int,
    seed: int,
    max_tokens: int,
    tick: Tick,
) -> list[Sample]:
    clock, out = _Clock(), []
    warm = 1 if t.pods > 1 else 0
    for n in lengths:
        for r in range(repeats):
            prompt = make_prompt(seed_for(seed, 1, n, r), n)
            for kind, replica in (("cold", 0), ("warm", warm)):
                at = clock.now()
                got = send(t.urls[replica], prompt, max_tokens)
                out.append(_sample("sweep", t, kind, replica, got, at, prompt_words=n, repeat=r))
                tick(f"{t.l2_backend} sweep {n} words #{r} {kind}")
    return out


def chat(send: Sender, t: BenchTarget, w: ChatWorkload, seed: int, tick: Tick) -> list[Sample]:
    clock, out = _Clock(), []
    system = make_prompt(seed_for(seed, 10), w.system_prompt_words, prefix="System: ")
    history = [
        f"{system}\nFor user {u}: {make_prompt(seed_for(seed, 11, u), w.user_context_words)}\n"
        for u in range(w.users)
    ]

    def one(u: int, rnd: int) -> tuple[Sample, str]:
        question = make_prompt(seed_for(seed, 12, u, rnd), w.question_words)
        prompt = f"{history[u]}User: {question}\nAssistant:"
        replica = (u + rnd) % t.pods
        at = clock.now()
        got = send(t.urls[replica], prompt, w.answer_tokens)
        kind = "cold" if rnd == 0 else "warm"
        sample = _sample("chat", t, kind, replica, got, at, user=u, round=rnd + 1)
        return sample, f"{prompt}{got.text}\n"

    with ThreadPoolExecutor(max_workers=w.concurrency) as pool:
        for rnd in range(w.rounds):
            done = list(pool.map(lambda u, r=rnd: one(u, r), range(w.users)))
            for u, (sample, conversation) in enumerate(done):
                history[u] = conversation
                out.append(sample)
                tick(f"{t.l2_backend} chat round {rnd + 1} user {u}")
    return out


def cross_pod(
    send: Sender,
    t: BenchTarget,
    words: int,
    seed: int,
    max_tokens: int,
    scrape: Scrape,
    waits: Waits,
    tick: Tick,
) -> tuple[list[Sample], Counters | None]:
    """The samples (A cold, B warm) and B's counters' increase over its own request (None
    with one replica: nothing to read across)."""
    clock = _Clock()
    prompt = make_prompt(seed_for(seed, 20), words)
    at = clock.now()
    first = send(t.urls[0], prompt, max_tokens)
    samples = [_sample("cross_pod", t, "cold", 0, first, at, prompt_words=words)]
    tick(f"{t.l2_backend} cross-Pod write on Pod A")
    if t.pods < 2:
        return samples, None
    time.sleep(waits.settle_s)  # LMCache stores after the response; let A's write reach L2
    before = scrape(t.metrics_urls[1])
    at = clock.now()
    second = send(t.urls[1], prompt, max_tokens)
    time.sleep(waits.flush_s)
    b_deltas = increase(before, scrape(t.metrics_urls[1]))
    samples.append(_sample("cross_pod", t, "warm", 1, second, at, prompt_words=words))
    tick(f"{t.l2_backend} cross-Pod read on Pod B")
    return samples, b_deltas
