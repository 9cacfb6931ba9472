"""Counters from a Pod's /metrics (Prometheus text format), summed over their label sets, and
their increase over a workload; and whether the Pod's LMCache runs in its degraded mode."""

from __future__ import annotations

import math
import re
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping

from infra.metrics.tiers import COUNTERS

Counters = dict[str, float]
Scrape = Callable[[str], Counters]  # metrics base URL -> counters
REQUESTS = "vllm:request_success_total"
"""Requests a replica finished: which replica served which request (``verdicts.two_pods``)."""
L2_WRITE_BYTES = "lmcache:num_remote_write_bytes_total"
"""Bytes written to L2: with the write requests, the size of a chunk (``cross_pod_cause``)."""
SCRAPED = (*COUNTERS, REQUESTS, L2_WRITE_BYTES)
DEGRADED = "degraded"
_LMCACHE_SERIES = re.compile(r'^(lmcache:[^{\s]*)\{[^}]*\brole="(\w+)"', re.M)
# LMCache's storage manager registers these gauges before its engine's device connector is made,
# so a worker whose engine then failed still shows them (0.4.x).
_BEFORE_ENGINE = "lmcache:storage_events_"
STATS_INTERVAL_S = 10.0
"""How often LMCache's engine writes its counters (``log_interval``): a healthy engine's first
ones appear at most this long after it started."""


def parse_counters(text: str, names: Iterable[str] = SCRAPED) -> Counters:
    """Each of ``names`` summed over its samples (every model, engine and worker label set);
    a name the page does not carry is left out."""
    wanted = set(names)
    found: Counters = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_part, _, rest = line.partition(" ")
        if "}" in line:
            name_part, _, rest = line.partition("}")
            name_part = name_part.split("{", 1)[0]
        name = name_part.strip()
        if name not in wanted:
            continue
        value = float(rest.split()[0])
        if not math.isnan(value):
            found[name] = found.get(name, 0.0) + value
    return found


def _page(base_url: str, timeout: float) -> str:
    with urllib.request.urlopen(f"{base_url.rstrip('/')}/metrics", timeout=timeout) as resp:
        text: str = resp.read().decode("utf-8", "replace")
        return text


def scrape_metrics(base_url: str, timeout: float = 30.0) -> Counters:
    """GET ``<base_url>/metrics``: vLLM serves it on its API port (LMCache's series appear once
    ``PROMETHEUS_MULTIPROC_DIR`` is set in the container)."""
    return parse_counters(_page(base_url, timeout))


def lmcache_state(text: str) -> str | None:
    """``DEGRADED`` when the page carries LMCache's series but none that its engine in vLLM's
    worker (role "worker") writes: LMCache's engine failed to start (its log says "degraded
    mode (recompute)") and every request is recomputed. LMCache 0.3.15 then shows its
    scheduler side's series only, 0.4.7 its storage manager's gauges of both roles
    (tests/fixtures/lmcache-metrics). None otherwise (LMCache up, or no LMCache series to judge
    by)."""
    series = _LMCACHE_SERIES.findall(text)
    engine = [n for n, role in series if role == "worker" and not n.startswith(_BEFORE_ENGINE)]
    return DEGRADED if series and not engine else None


def probe_lmcache(
    base_url: str, timeout: float = 30.0, wait: Callable[[float], None] = time.sleep
) -> str | None:
    """``lmcache_state`` of the Pod behind ``base_url``; a page that reads as degraded is read
    again after LMCache's stats interval, so that an engine started moments ago is not taken
    for one that failed."""
    state = lmcache_state(_page(base_url, timeout))
    if state == DEGRADED:
        wait(STATS_INTERVAL_S)
        state = lmcache_state(_page(base_url, timeout))
    return state


def increase(before: Mapping[str, float], after: Mapping[str, float]) -> Counters:
    """What each counter rose by; a counter that went down restarted (its Pod did), so its new
    value is the increase, as Prometheus's ``increase`` reads a reset."""
    out: Counters = {}
    for name, value in after.items():
        start = before.get(name, 0.0)
        out[name] = value - start if value >= start else value
    return out


def add(total: Mapping[str, float], more: Mapping[str, float]) -> Counters:
    return {k: total.get(k, 0.0) + more.get(k, 0.0) for k in set(total) | set(more)}
