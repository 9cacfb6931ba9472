"""LMCache log parsing. No double: the inputs are log lines in the formats LMCache prints
(cache_engine.py ``%d``/``%.4f`` formats, vLLM v1 connector lookup line), including the seed's
measurements."""

from __future__ import annotations

import pytest

from scripts.lib.lmcache_logs import (
    DegradedLine,
    HitLine,
    RetrieveLine,
    StoreLine,
    l2_verdict,
    parse_line,
    parse_log,
)
from tests.support.lmcache_logs import (
    DEGRADED_0_3,
    DEGRADED_0_4,
    MISS,
    PARTIAL_HIT,
    PARTIAL_RETRIEVE,
    SEED_HIT,
    SEED_RETRIEVE,
    SEED_STORE,
)


def test_seed_store_line() -> None:
    assert parse_line(SEED_STORE) == StoreLine(1925, 1925, 0.1028, 10.71)


def test_seed_retrieve_line() -> None:
    assert parse_line(SEED_RETRIEVE) == RetrieveLine(1925, 1925, 1925, 0.1028, 55.75)


def test_hit_line_with_and_without_engine_computed_tokens() -> None:
    assert parse_line(SEED_HIT) == HitLine(1925, 1925, 1925, "cmpl-8d1c0f3b2a-0")
    assert parse_line(MISS) == HitLine(0, 1925, 0, "cmpl-11aa-0")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # Layer-wise path prints GB in upper case.
        (
            "LMCache INFO: Stored 512 out of total 600 tokens. size: 0.0273 GB, "
            "cost 3.1000 ms, throughput: 8.8 GB/s",
            StoreLine(512, 600, 0.0273, 3.1),
        ),
        # Older releases: "Retrieved N out of total M tokens".
        (
            "LMCache INFO: Retrieved 256 out of total 300 tokens",
            RetrieveLine(256, 300, 300, None, None),
        ),
        ("some other vLLM line: Avg prompt throughput: 190.5 tokens/s", None),
    ],
)
def test_variants(line: str, expected: object) -> None:
    assert parse_line(line) == expected


def test_full_hit_verdict_from_the_seed() -> None:
    first = parse_log("\n".join(["INFO: started", MISS, SEED_STORE]))
    second = parse_log("\n".join([SEED_HIT, SEED_RETRIEVE, "INFO 200 OK"]))
    v = l2_verdict(first, second, prompt_tokens=1925, min_hit_ratio=0.5)
    assert v.ok and v.hit_ratio == 1.0
    assert v.l2_read_ms == pytest.approx(55.75) and v.l2_read_gib == pytest.approx(0.1028)
    assert v.stored_on_first == 1925


def test_partial_hit_verdict() -> None:
    v = l2_verdict(
        parse_log(SEED_STORE), parse_log(f"{PARTIAL_HIT}\n{PARTIAL_RETRIEVE}"), None, 0.5
    )
    assert v.ok
    assert v.prompt_tokens == 1925 and v.hit_tokens_on_second == 1792
    assert v.hit_ratio == pytest.approx(1792 / 1925)
    assert v.l2_read_ms == pytest.approx(48.12)


def test_zero_hit_fails_with_a_reason() -> None:
    v = l2_verdict(parse_log(SEED_STORE), parse_log(MISS), 1925, 0.5)
    assert not v.ok and v.hit_ratio == 0.0 and v.l2_read_ms is None
    assert "PYTHONHASHSEED" in v.reason


def test_nothing_stored_fails() -> None:
    v = l2_verdict(parse_log(MISS), parse_log(MISS), 1925, 0.5)
    assert not v.ok and "Stored" in v.reason


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (DEGRADED_0_3, "Unsupported device platform for LMCache engine."),
        (DEGRADED_0_4, "RuntimeError: No supported cpu connector found."),
    ],
    ids=["0.3.15", "0.4.7"],
)
def test_lmcaches_degraded_start_is_read_with_its_cause(text: str, why: str) -> None:
    log = parse_log(f"INFO: started\n{text}\n{MISS}")
    assert log.degraded == [DegradedLine(why)]
    assert parse_log(f"{SEED_STORE}\n{MISS}").degraded == []
