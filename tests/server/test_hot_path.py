"""The moment the product exists for, on real engines: a prompt replica A served is served by
replica B from L2, through LMCache's connector inside vLLM, without recomputing it
(tests/server/conftest.py starts the replicas as the endpoint's Pods run). B says so itself: its
/metrics counters and LMCache's log lines; and what B answers is what a cold recompute answers,
token for token, while noise written over the chunks in L2 changes it (so the KV B loads is what
it serves from)."""

from __future__ import annotations

import random
from array import array
from pathlib import Path
from typing import Any

import pytest

from infra.config.images import RECOMMENDED
from infra.metrics.tiers import L2_READS, LMCACHE_CHUNK_TOKENS, LOADED, PROMISED, l2_hit_share
from scripts.lib.bench_compare.scrape import increase, scrape_metrics
from scripts.lib.lmcache_logs import parse_log
from scripts.lib.openai_stream import list_models
from scripts.lib.prompts import make_prompt
from tests.support.vllm_server import Answer, Server, complete, same_answer, settled, wait_for_files

WORDS = 700
HEADER = 4096  # past LMCache's own header of a chunk file (fs_connector.py: a few dozen bytes)


def _folder(fleet: Any, role: str) -> Path:
    """The host folder behind the role's L2 mount (the claim's subPath)."""
    server: Server = fleet[role]
    (l2,) = server.container.claims
    folder = server.container.mounts[l2]
    assert folder is not None
    return folder


def _served(fleet: Any, role: str, prompt: str) -> tuple[Answer, dict[str, float], Any]:
    """The role's answer, the increase of its counters and what LMCache logged meanwhile."""
    server: Server = fleet[role]
    offset = len(server.log_text())
    before = scrape_metrics(server.url)
    answer = complete(server.url, list_models(server.url)[0], prompt)
    deltas = increase(before, settled(server.url, before))
    return answer, deltas, parse_log(server.log_text()[offset:])


def _stored_by_a(fleet: Any, prompt: str) -> tuple[Answer, set[Path]]:
    """A serves ``prompt`` cold; its whole chunks land in L2."""
    before = set(_folder(fleet, "a").glob("*.data"))
    cold, deltas, log = _served(fleet, "a", prompt)
    whole = cold.prompt_tokens // LMCACHE_CHUNK_TOKENS
    assert (deltas.get(LOADED, 0.0), log.hit_tokens) == (0.0, 0), "A found the prompt cached"
    files = wait_for_files(_folder(fleet, "a"), len(before) + whole) - before
    assert len(files) == whole
    return cold, files


def test_b_serves_from_l2_what_a_stored_as_a_cold_recompute_would(fleet: Any) -> None:
    prompt = make_prompt(101, WORDS)
    cold, files = _stored_by_a(fleet, prompt)
    whole = cold.prompt_tokens // LMCACHE_CHUNK_TOKENS * LMCACHE_CHUNK_TOKENS
    warm, deltas, log = _served(fleet, "b", prompt)
    # B's own counters: every whole chunk looked up, promised, loaded and read from L2. (Not
    # its writes: LMCache publishes every 10 s, so an earlier test's stores may land now.)
    assert deltas[PROMISED] == deltas[LOADED] == whole
    assert deltas[L2_READS] == len(files) == whole // LMCACHE_CHUNK_TOKENS
    bpt = fleet.config.observability.kv_bytes_per_token
    assert l2_hit_share(deltas, warm.prompt_tokens, "curvine", bpt) == 1.0
    # B's log lines: LMCache's lookup hit and its retrieve of the same tokens.
    assert (log.hit_tokens, log.retrieved_tokens, log.stored_tokens) == (whole, whole, 0)
    assert same_answer(warm, cold), (warm, cold)
    # The chunks sit in the claim under the endpoint's subPath, nowhere else.
    (endpoint, *_) = fleet.endpoints
    assert {f.parent.name for f in files} == {endpoint.name}


def test_noise_over_the_chunks_in_l2_changes_what_b_serves(fleet: Any) -> None:
    """The equality above is a judge of the KV B loads: with the KV in the chunk files
    overwritten by noise (finite float32 values, as the replicas' KV is; LMCache's header at the
    start of each file kept: LMCache 0.4 refuses a file whose header it cannot read), B still
    loads them from L2 and answers otherwise."""
    prompt = make_prompt(202, WORDS)
    cold, files = _stored_by_a(fleet, prompt)
    noise = random.Random(0)
    for f in files:
        data = f.read_bytes()
        values = array("f", (noise.gauss(0.0, 1.0) for _ in range((len(data) - HEADER) // 4)))
        f.write_bytes(data[:HEADER] + values.tobytes() + data[HEADER + 4 * len(values) :])
    warm, deltas, _ = _served(fleet, "b", prompt)
    assert deltas[L2_READS] == len(files)
    assert not same_answer(warm, cold)


def test_the_recommended_image_keys_chunks_with_lmcaches_default_hash(fleet: Any) -> None:
    """LMCache 0.4.7's default chunk hash gives every replica the same keys (the hit above),
    with nothing in the replicas' env choosing another."""
    if not RECOMMENDED.endswith(f":{fleet.image}"):
        pytest.skip(f"{fleet.image} is not the recommended image")
    for role in ("a", "b"):
        assert "LMCACHE_PRE_CACHING_HASH_ALGORITHM" not in fleet[role].env


def test_two_endpoints_on_one_claim_never_read_each_others_chunks(fleet: Any) -> None:
    """The second endpoint, same claim, its own subPath: A's prompt is a miss there, computed
    and stored in its own folder."""
    prompt = make_prompt(303, WORDS)
    _, files = _stored_by_a(fleet, prompt)
    mine = set(_folder(fleet, "other").glob("*.data"))
    answer, deltas, log = _served(fleet, "other", prompt)
    assert (deltas.get(L2_READS, 0.0), deltas.get(LOADED, 0.0), log.hit_tokens) == (0.0, 0.0, 0)
    stored = wait_for_files(_folder(fleet, "other"), len(mine) + len(files)) - mine
    assert {f.name for f in stored} == {f.name for f in files}  # the same keys, apart
    assert _folder(fleet, "other") != _folder(fleet, "a")
    assert answer.prompt_tokens > 0
