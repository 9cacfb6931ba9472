"""The hot path in LMCache's multiprocess (MP) mode, on real engines: replicas started as the
endpoint's Pod would run with an ``lmcache server`` sidecar (tests/support/lmcache_mp.py). A
prompt replica A served is stored by A's sidecar in the claim's subPath; replica B, its own
sidecar with an empty L1, serves it from there: B's sidecar counts every whole chunk looked up
and prefetched from L2, vLLM counts the tokens its connector loaded, and B answers what A's cold
computation answered, top-5 log-probabilities included (the tiny model's greedy tokens repeat
one word: the log-probabilities are what tells answers apart). Each judge both ways: the
second endpoint's replica (same claim, its own subPath) finds nothing of A's prompt, and noise
written over the chunks in L2 changes what B answers. The TTFT bench's checks in MP mode
(tools/bench/ttft.py) refuse figures from that replica.

Only the image whose LMCache has the MP server and connector that run on vLLM's CPU platform
(``v0.4.7``). A, B and the other endpoint's replica start together (a start is CPU-bound: three
at once end sooner than A alone and then the other two); B and the other replica are asked
nothing until A has served and stopped, so they find nothing of A's but its files.
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from infra.metrics.tiers import LMCACHE_CHUNK_TOKENS
from scripts.lib.bench_compare.scrape import parse_counters
from scripts.lib.openai_stream import list_models
from scripts.lib.prompts import make_prompt
from tests.support.lmcache_mp import (
    EXTERNAL_HITS,
    L2_PREFETCH_HITS,
    L2_STORED,
    LOOKUP_HITS,
    MP_IMAGES,
    MpReplica,
    settled_mp,
    start_mp,
    stop_mp,
    wait_ready_mp,
)
from tests.support.runtime import (
    container_of,
    endpoint_pod,
    mount_namespace_available,
    operator_of,
)
from tests.support.vllm_server import (
    Answer,
    complete,
    metrics_page,
    python_of,
    rendered_endpoints,
    same_answer,
    server_images,
)
from tools.bench import ttft

(TAG,) = MP_IMAGES
WORDS = 500  # about 1,100 tokens of the tiny model's tokenizer: four whole chunks

pytestmark = pytest.mark.skipif(
    TAG not in server_images(),
    reason=f"MP mode runs on the CPU with LMCache 0.4.7's server and connector: {TAG} only",
)


@dataclass
class Served:
    """What a replica answered, and what its sidecar and vLLM counted meanwhile."""

    answer: Answer
    sidecar: dict[str, float]
    external_hits: float


@dataclass
class Stored:
    """Replica A's cold answers to two prompts and the chunk files each left in L2."""

    prompts: list[str]
    cold: list[Served]
    files: list[set[Path]]
    folder: Path


def _external_hits(r: MpReplica) -> float:
    return parse_counters(metrics_page(r.server.url), [EXTERNAL_HITS]).get(EXTERNAL_HITS, 0.0)


def _serve(r: MpReplica, prompt: str, want: Callable[[int], dict[str, float]]) -> Served:
    """``r``'s answer to ``prompt``; its sidecar's counters once each of ``want(whole chunks of
    the prompt)`` rose that far (the sidecar stores and prefetches in the background)."""
    before, external = r.sidecar.counters(), _external_hits(r)
    answer = complete(r.server.url, list_models(r.server.url)[0], prompt)
    rise = settled_mp(r.sidecar, before, want(_whole(answer)))
    return Served(answer, rise, _external_hits(r) - external)


def _whole(answer: Answer) -> int:
    return answer.prompt_tokens // LMCACHE_CHUNK_TOKENS


def _stores(whole: int) -> dict[str, float]:
    return {L2_STORED: whole}


def _hits(whole: int) -> dict[str, float]:
    return {LOOKUP_HITS: whole * LMCACHE_CHUNK_TOKENS, L2_PREFETCH_HITS: whole}


@pytest.fixture(scope="module")
def pods() -> dict[str, dict[str, Any]]:
    if not python_of(TAG).exists():
        pytest.fail(f"no .venv-server/{TAG}: run `make test-server`")
    if not mount_namespace_available():
        pytest.skip("binding the claim at the rendered mountPath needs root and unshare")
    config, objs = rendered_endpoints(TAG)
    first, second, _ = config.kvcache.endpoints
    operator = operator_of(config)
    return {
        "a": endpoint_pod(objs, first, operator),
        "b": endpoint_pod(objs, first, operator),
        "other": endpoint_pod(objs, second, operator),
    }


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp(f"mp-{TAG}")


def _replicas(
    roles: list[str], pods: dict[str, dict[str, Any]], model: Path, work: Path
) -> list[MpReplica]:
    started: list[MpReplica] = []
    try:
        for role in roles:
            container = container_of(pods[role], work / "claims", work / f"pod-{role}")
            started.append(start_mp(TAG, role, container, model, work))
        wait_ready_mp(started)
    except BaseException:
        stop_mp(started)
        raise
    return started


@pytest.fixture(scope="module")
def started(
    pods: dict[str, dict[str, Any]], model_dir: Path, work: Path
) -> Iterator[dict[str, MpReplica]]:
    """A, B (the first endpoint, A's folder) and the second endpoint's replica, all new."""
    replicas = _replicas(["a", "b", "other"], pods, model_dir, work)
    try:
        yield {r.server.name: r for r in replicas}
    finally:
        stop_mp(replicas)


@pytest.fixture(scope="module")
def stored(started: dict[str, MpReplica]) -> Stored:
    """A serves two prompts cold, then stops: their chunks are in A's claim folder."""
    a = started["a"]
    try:
        prompts = [make_prompt(seed, WORDS) for seed in (501, 502)]
        cold, files = [], []
        for prompt in prompts:
            before = set(a.l2.glob("*.data"))
            cold.append(_serve(a, prompt, _stores))
            files.append(set(a.l2.glob("*.data")) - before)
        return Stored(prompts, cold, files, a.l2)
    finally:
        stop_mp([a])


@pytest.fixture(scope="module")
def readers(stored: Stored, started: dict[str, MpReplica]) -> dict[str, MpReplica]:
    """B and the second endpoint's replica, once A has stored its prompts and stopped."""
    return {"b": started["b"], "other": started["other"]}


def test_a_stores_a_long_prompts_chunks_in_the_claims_subpath(stored: Stored) -> None:
    (first, *_) = rendered_endpoints(TAG)[0].kvcache.endpoints
    for served, files in zip(stored.cold, stored.files, strict=True):
        whole = _whole(served.answer)
        assert served.answer.prompt_tokens >= 1024 and whole >= 4
        assert served.sidecar.get(LOOKUP_HITS, 0.0) == served.external_hits == 0
        assert served.sidecar[L2_STORED] == len(files) == whole
    assert stored.folder.name == first.name  # the endpoint's subPath of the claim


def test_b_with_an_empty_l1_serves_from_l2_what_a_computed_cold(
    stored: Stored, readers: dict[str, MpReplica]
) -> None:
    cold = stored.cold[0]
    whole = _whole(cold.answer)
    warm = _serve(readers["b"], stored.prompts[0], _hits)
    assert warm.sidecar[LOOKUP_HITS] == warm.external_hits == whole * LMCACHE_CHUNK_TOKENS
    assert warm.sidecar[L2_PREFETCH_HITS] == len(stored.files[0]) == whole
    assert warm.sidecar.get(L2_STORED, 0.0) == 0  # nothing new to store
    assert same_answer(warm.answer, cold.answer), (warm.answer, cold.answer)


def test_another_endpoints_replica_on_the_same_claim_finds_none_of_it(
    stored: Stored, readers: dict[str, MpReplica]
) -> None:
    """Its own subPath: A's prompt is a miss there, computed and stored in its own folder under
    the same keys."""
    other = readers["other"]
    mine = set(other.l2.glob("*.data"))
    served = _serve(other, stored.prompts[0], _stores)
    assert (served.sidecar.get(LOOKUP_HITS, 0.0), served.external_hits) == (0, 0)
    assert served.sidecar.get(L2_PREFETCH_HITS, 0.0) == 0
    assert other.l2 != stored.folder
    assert {f.name for f in set(other.l2.glob("*.data")) - mine} == {
        f.name for f in stored.files[0]
    }
    assert same_answer(served.answer, stored.cold[0].answer)


def test_bench_ttft_refuses_mp_figures_that_did_not_come_from_the_tier(
    stored: Stored, readers: dict[str, MpReplica]
) -> None:
    """``make bench-ttft --mode mp``'s own checks (tools/bench/ttft.py) on these replicas: the
    second endpoint's replica, whose vLLM KV cache holds the prefixes it is asked again, and
    which does not share A's folder, refuses both the L1 and the L2 figure."""
    other = readers["other"]
    probe = ttft.MultiProcess(other)
    model = list_models(other.server.url)[0]
    again = ttft._prefixes(other.server.url, model, 600, 2, 77)
    with pytest.raises(SystemExit, match=r"vLLM's KV cache held them"):
        ttft.on_a(other.server, other.l2, again, probe)
    fresh = ttft._prefixes(other.server.url, model, 600, 1, 88)
    theirs = [sorted(stored.files[1])]
    with pytest.raises(SystemExit, match=r"replica B read 0 chunks from L2"):
        ttft.on_b(other.server, fresh, stored.prompts[1:], theirs, probe)


def test_noise_over_the_chunks_in_l2_changes_what_b_serves(
    stored: Stored, readers: dict[str, MpReplica]
) -> None:
    """The equality above judges the KV B loads: the second prompt's chunk files overwritten
    with noise (finite float32 values, as the replicas' KV is; the fs adapter stores the raw
    KV, no header), B still loads every one of them from L2 and answers otherwise."""
    noise = random.Random(0)
    for f in stored.files[1]:
        values = array("f", (noise.gauss(0.0, 1.0) for _ in range(f.stat().st_size // 4)))
        f.write_bytes(values.tobytes())
    served = _serve(readers["b"], stored.prompts[1], _hits)
    assert served.sidecar[L2_PREFETCH_HITS] == len(stored.files[1])
    assert not same_answer(served.answer, stored.cold[1].answer)
