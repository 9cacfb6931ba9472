"""One replica of an endpoint storing or retrieving a prompt's KV with LMCache's real engine
(the lmcache_replica oracle), run as a process of its model container.

Two things are set for this machine. LMCache allocates its whole L1 at start, so a replica asks
for 0.5 GiB instead of the rendered size (tests/runtime/test_lmcache_env.py judges the size
itself). LMCache's default chunk hash is Python's ``hash`` of a tuple holding ``None``; before
Python 3.12 ``hash(None)`` is an address, so two processes never derive the same keys whatever
PYTHONHASHSEED says, where the image's Python 3.12 (``ImageFacts.python``) does: on an older
interpreter the replicas use vLLM's ``sha256_cbor``, which gives the same keys everywhere.
"""

from __future__ import annotations

from typing import Any

from infra.config.images import facts
from infra.config.kvcache import EndpointConfig
from infra.metrics.tiers import LMCACHE_CHUNK_TOKENS
from tests.support.runtime import Container, ask, python_version, qwen3_8b

TOKENS = 3 * LMCACHE_CHUNK_TOKENS + 100  # three whole chunks and a tail LMCache does not store
WHOLE = TOKENS // LMCACHE_CHUNK_TOKENS * LMCACHE_CHUNK_TOKENS


def replica(image: str, container: Container, role: str, e: EndpointConfig) -> dict[str, Any]:
    """Store (``role`` "store") or retrieve the same prompt: the same seed, so the KV the storing
    replica wrote is what the reading one must get back."""
    env = {**container.env, "LMCACHE_MAX_LOCAL_CPU_SIZE": "0.5"}
    known = facts(e.image)
    if known is not None and python_version(image) < known.python:
        env["LMCACHE_PRE_CACHING_HASH_ALGORITHM"] = "sha256_cbor"
    run = Container(env, container.args, container.mounts, container.claims, container.own)
    request = {"env": env, "role": role, "tokens": TOKENS, "seed": 7, "model": qwen3_8b()}
    answer = ask(image, "lmcache_replica", request, run)
    assert "error" not in answer, answer["error"]
    return answer
