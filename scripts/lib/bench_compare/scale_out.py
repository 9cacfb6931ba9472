"""The scale-out workload: does a replica that did not exist when a prefix was written start
warm? A fresh prompt (the known prefix) is written through the first running replica; then a
replica joins (``Joiner``), and its first request is that prefix. Its TTFT and its own LMCache
counters, read around that one request, say where it found the prefix: a shared L2 serves it,
an endpoint without L2 (the baseline) recomputes it like any cold replica.

How a replica joins: on a cluster the endpoint is scaled out by one and the new Pod reached
(``scripts.lib.scale_endpoint``, restored afterwards); with ``--joining TIER=URL`` a replica
that has served nothing yet is named (checked on its /metrics). A tier with neither is not
run.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

from scripts.lib.bench_compare.scrape import REQUESTS, Counters, Scrape, increase
from scripts.lib.bench_compare.targets import BenchTarget
from scripts.lib.bench_compare.workloads import Sample, Sender, Tick, Waits, _Clock, _sample
from scripts.lib.errors import OperationError
from scripts.lib.prompts import make_prompt, seed_for

Joiner = Callable[[], AbstractContextManager[str]]
"""Adds a replica for the duration; yields its base URL (which serves /metrics too)."""


def named_replica(url: str, scrape: Scrape) -> Joiner:
    """A replica given by URL: it must not have served a request yet, or its GPU and CPU
    caches may hold the prefix already and pass for L2."""

    @contextlib.contextmanager
    def join() -> Iterator[str]:
        served = scrape(url).get(REQUESTS)
        if served:
            raise OperationError(
                f"--joining {url}: it served {served:.0f} request(s) already; name a replica "
                "that has served none (a new Pod)"
            )
        yield url

    return join


def scale_out(
    send: Sender,
    t: BenchTarget,
    join: Joiner,
    words: int,
    seed: int,
    max_tokens: int,
    scrape: Scrape,
    waits: Waits,
    tick: Tick,
) -> tuple[list[Sample], Counters]:
    """The samples (the write on the first replica: cold; the new replica's first request:
    warm, on replica index ``t.pods``) and the new replica's counters' increase over it."""
    clock = _Clock()
    prompt = make_prompt(seed_for(seed, 40), words)
    at = clock.now()
    first = send(t.urls[0], prompt, max_tokens)
    samples = [_sample("scale_out", t, "cold", 0, first, at, prompt_words=words)]
    tick(f"{t.l2_backend} scale-out: prefix written on a running replica")
    time.sleep(waits.settle_s)  # LMCache stores after the response
    with join() as url:
        before = scrape(url)
        at = clock.now()
        got = send(url, prompt, max_tokens)
        time.sleep(waits.flush_s)
        deltas = increase(before, scrape(url))
    samples.append(_sample("scale_out", t, "warm", t.pods, got, at, prompt_words=words))
    tick(f"{t.l2_backend} scale-out: first request on the new replica")
    return samples, deltas
