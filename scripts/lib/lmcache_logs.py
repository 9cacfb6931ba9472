"""Parse LMCache's log lines into a cross-Pod L2 verdict.

Formats (LMCache ``cache_engine.py`` and the vLLM v1 connector, 0.3.x):

- ``Reqid: <id>, Total tokens 1925, LMCache hit tokens: 1792, need to load: 1792`` (older
  releases add ``Inference Engine computed tokens: N,`` before the hit count);
- ``Stored 1925 out of total 1925 tokens. size: 0.1028 gb, cost 10.7100 ms, throughput: ...``
  (the unit is ``gb`` in recent releases, ``GB`` in the layer-wise path; it is GiB: bytes/1024**3);
- ``Retrieved 1925 out of 1925 required tokens (from 1925 total tokens). size: 0.1028 gb,
  cost 55.7500 ms, throughput: ...`` (older releases: ``Retrieved N out of total M tokens``);
- ``Failed to initialize LMCacheManager components: <why>. System will operate in degraded mode
  (recompute).`` (lmcache/v1/manager.py, 0.3.15 and 0.4.7): LMCache could not start in this
  process (its engine, its storage, its device copy). vLLM reports itself healthy, then stops
  its engine at the first request (0.3.15 and 0.4.7 alike: 0.4.7's worker asserts it has an
  engine when it starts loading KV).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HIT = re.compile(
    r"(?:Reqid: (?P<req>[^,]+), )?Total tokens (?P<total>\d+),"
    r"(?: Inference Engine computed tokens: (?P<computed>\d+),)?"
    r" LMCache hit tokens: (?P<hit>\d+|None)(?:, need to load: (?P<load>-?\d+))?"
)
_HIT_BARE = re.compile(r"LMCache hit tokens: (?P<hit>\d+|None)")
_STORED = re.compile(
    r"Stored (?P<stored>\d+) out of total (?P<total>\d+) tokens\.?"
    r"(?: size: (?P<size>[0-9.]+) gb, cost (?P<cost>[0-9.]+) ms)?",
    re.IGNORECASE,
)
_DEGRADED = re.compile(
    r"(?:components: (?P<why>.*?)\.? )?System will operate in degraded mode "
    r"\(recompute\)"
)
_RETRIEVED = re.compile(
    r"Retrieved (?P<got>\d+) out of (?:(?P<required>\d+) required|total (?P<total_old>\d+))"
    r" tokens(?: \(from (?P<total>\d+) total tokens\))?\.?"
    r"(?: size: (?P<size>[0-9.]+) gb, cost (?P<cost>[0-9.]+) ms)?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class HitLine:
    hit_tokens: int
    total_tokens: int | None
    need_to_load: int | None
    request_id: str | None


@dataclass(frozen=True)
class StoreLine:
    stored_tokens: int
    total_tokens: int
    size_gib: float | None
    cost_ms: float | None


@dataclass(frozen=True)
class RetrieveLine:
    retrieved_tokens: int
    required_tokens: int
    total_tokens: int | None
    size_gib: float | None
    cost_ms: float | None


@dataclass(frozen=True)
class DegradedLine:
    """LMCache gave up at start and vLLM serves without it."""

    why: str


@dataclass
class LmcacheLog:
    hits: list[HitLine] = field(default_factory=list)
    stores: list[StoreLine] = field(default_factory=list)
    retrieves: list[RetrieveLine] = field(default_factory=list)
    degraded: list[DegradedLine] = field(default_factory=list)

    @property
    def hit_tokens(self) -> int:
        return sum(h.hit_tokens for h in self.hits)

    @property
    def retrieved_tokens(self) -> int:
        return sum(r.retrieved_tokens for r in self.retrieves)

    @property
    def stored_tokens(self) -> int:
        return sum(s.stored_tokens for s in self.stores)


def _float(text: str | None) -> float | None:
    return float(text) if text is not None else None


def parse_line(line: str) -> HitLine | StoreLine | RetrieveLine | DegradedLine | None:
    if m := _DEGRADED.search(line):
        return DegradedLine((m["why"] or "").strip())
    if m := _HIT.search(line):
        hit = m["hit"]
        return HitLine(
            hit_tokens=0 if hit == "None" else int(hit),
            total_tokens=int(m["total"]),
            need_to_load=int(m["load"]) if m["load"] is not None else None,
            request_id=m["req"],
        )
    if m := _HIT_BARE.search(line):
        hit = m["hit"]
        return HitLine(0 if hit == "None" else int(hit), None, None, None)
    if m := _STORED.search(line):
        return StoreLine(int(m["stored"]), int(m["total"]), _float(m["size"]), _float(m["cost"]))
    if m := _RETRIEVED.search(line):
        required = int(m["required"] or m["total_old"])
        total = int(m["total"]) if m["total"] else (int(m["total_old"]) if m["total_old"] else None)
        return RetrieveLine(int(m["got"]), required, total, _float(m["size"]), _float(m["cost"]))
    return None


# The last line of a traceback (LMCache 0.4 logs the failure's traceback before the degraded
# line), without the ``(Worker pid=N)`` prefix vLLM puts on a worker's output.
_RAISED = re.compile(r"^(?:\(\S+ pid=\d+\) )?(?P<error>\w+(?:Error|Exception): .+)$")


def parse_log(text: str) -> LmcacheLog:
    log = LmcacheLog()
    raised = ""
    for line in text.splitlines():
        if m := _RAISED.match(line):
            raised = m["error"].strip()
        parsed = parse_line(line)
        if isinstance(parsed, DegradedLine) and not parsed.why:
            parsed = DegradedLine(raised)
        if isinstance(parsed, HitLine):
            log.hits.append(parsed)
        elif isinstance(parsed, StoreLine):
            log.stores.append(parsed)
        elif isinstance(parsed, RetrieveLine):
            log.retrieves.append(parsed)
        elif isinstance(parsed, DegradedLine):
            log.degraded.append(parsed)
    return log


@dataclass(frozen=True)
class L2Verdict:
    ok: bool
    prompt_tokens: int | None
    stored_on_first: int
    hit_tokens_on_second: int
    hit_ratio: float
    l2_read_ms: float | None
    l2_read_gib: float | None
    reason: str


def l2_verdict(
    first: LmcacheLog, second: LmcacheLog, prompt_tokens: int | None, min_hit_ratio: float
) -> L2Verdict:
    """Did the second Pod (other node, empty L1) get the first Pod's KV blocks from L2?"""
    # LMCache's own count first: usage.prompt_tokens can include tokens LMCache never sees.
    total = second.hits[-1].total_tokens if second.hits else None
    if total is None:
        total = prompt_tokens
    if total is None and first.stores:
        total = first.stores[-1].total_tokens
    hit = second.hits[-1].hit_tokens if second.hits else second.retrieved_tokens
    ratio = min(1.0, hit / total) if total else 0.0
    cost = sum(r.cost_ms or 0.0 for r in second.retrieves) if second.retrieves else None
    size = sum(r.size_gib or 0.0 for r in second.retrieves) if second.retrieves else None
    if first.stored_tokens == 0:
        ok, reason = False, "the first Pod logged no 'Stored ...' line: nothing reached L1/L2"
    elif not second.hits and not second.retrieves:
        ok, reason = False, "the second Pod logged no LMCache lookup (is LMCache enabled?)"
    elif ratio < min_hit_ratio:
        ok, reason = (
            False,
            f"hit ratio {ratio:.2f} below {min_hit_ratio:.2f}: the second Pod recomputed the "
            "prompt (different PYTHONHASHSEED, L2 not mounted, or the URL is not fs://)",
        )
    else:
        ok, reason = True, f"{hit} of {total} prompt tokens came from L2 on the second Pod"
    return L2Verdict(ok, total, first.stored_tokens, hit, ratio, cost, size, reason)
