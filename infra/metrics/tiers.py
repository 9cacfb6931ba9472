"""How each tier's share of the prompt tokens (L0, L1, the endpoint's L2 backend) is read from
vLLM's and LMCache's counters: one definition for the dashboards, the alerts, ``hpkv
report`` (PromQL, ``l2_tokens_expr``) and ``hpkv bench compare`` (counter deltas scraped from a
Pod's /metrics, ``tier_shares``).

What the counters count (LMCache 0.3.15 and 0.4.7, vLLM 0.16.0 and 0.23.0: the engines of the
supported images, ``infra/config/images.py``; ``infra.metrics.catalog`` names each file):

- ``vllm:prefix_cache_queries_total``: prompt tokens looked up in vLLM's GPU prefix cache, once
  per scheduled request: the base every share here is taken of.
- ``vllm:prefix_cache_hits_total``: of those, tokens found on the GPU (L0).
- ``lmcache:num_requested_tokens_total``: tokens LMCache's lookup promised beyond L0 and its
  retrieve was then asked for (the vLLM connector retrieves only what the lookup found);
  ``lmcache:num_hit_tokens_total``: tokens the retrieve delivered (L1 and L2 together). So
  hit/requested is not a hit rate (it is 1 whenever loads work) but the share of promised
  tokens that loaded; requested - hit is the load shortfall, the failure signal.
- ``lmcache:num_remote_read_requests_total`` / ``..._bytes_total``: L2 reads that returned an
  object (a miss or a failed read counts nothing). There is no per-tier hit counter, so L2
  tokens come from these, per backend (``l2_tokens``), and L1 is LMCache's total minus L2.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from infra.config.kvcache import MOUNTED_L2_BACKENDS, L2Backend

L2_LABELS: dict[L2Backend, str] = {
    "curvine": "L2 Curvine",
    "fsx_lustre": "L2 FSx for Lustre",
    "tieredstorage": "L2 Tiered Storage",
    "none": "no L2",
}

QUERIED = "vllm:prefix_cache_queries_total"
L0_HITS = "vllm:prefix_cache_hits_total"
PROMISED = "lmcache:num_requested_tokens_total"
LOADED = "lmcache:num_hit_tokens_total"
L2_READS = "lmcache:num_remote_read_requests_total"
L2_READ_BYTES = "lmcache:num_remote_read_bytes_total"
L2_WRITES = "lmcache:num_remote_write_requests_total"
COUNTERS = (QUERIED, L0_HITS, PROMISED, LOADED, L2_READS, L2_READ_BYTES, L2_WRITES)

# LMCache's chunk_size default (lmcache/v1/config.py; the product does not set
# LMCACHE_CHUNK_SIZE). save_unfull_chunk defaults to false in every supported LMCache (from
# 0.3.11): every stored chunk, so every fs:// read, is this many tokens.
LMCACHE_CHUNK_TOKENS = 256
# From LMCache 0.3.13 the sagemaker-hyperpod connector counts each read in its own get and again
# in the instrumented batched_get (code reading of 0.3.15, not observed): bytes twice, and
# requests = chunks + batches, so only bytes halve into tokens.
HYPERPOD_READ_COUNTED = 2


def l2_tokens(
    reads: float, read_bytes: float, l2_backend: L2Backend, kv_bytes_per_token: int
) -> float:
    """Tokens read from L2, from the read counters' increase (``reads`` requests,
    ``read_bytes`` bytes) on an endpoint of ``l2_backend``. LMCache's fs:// connector on a
    mounted backend makes one read request per chunk (no batched get)."""
    if l2_backend in MOUNTED_L2_BACKENDS:
        return reads * LMCACHE_CHUNK_TOKENS
    if l2_backend == "tieredstorage":
        return read_bytes / (HYPERPOD_READ_COUNTED * kv_bytes_per_token)
    return 0.0


def l2_hit_share(
    deltas: Mapping[str, float], prompt_tokens: int, l2_backend: L2Backend, kv_bytes_per_token: int
) -> float | None:
    """Share of a repeated prompt's whole chunks (LMCache stores whole 256-token chunks; the
    tail is recomputed) one Pod read from L2 while serving it, from that Pod's counters'
    increase over the request; None when its /metrics has no LMCache counters or the prompt
    has no whole chunk."""
    whole = prompt_tokens // LMCACHE_CHUNK_TOKENS * LMCACHE_CHUNK_TOKENS
    if LOADED not in deltas or whole == 0:
        return None
    read = l2_tokens(
        deltas.get(L2_READS, 0.0), deltas.get(L2_READ_BYTES, 0.0), l2_backend, kv_bytes_per_token
    )
    return min(1.0, min(read, deltas[LOADED]) / whole)


def l2_tokens_expr(
    rate: Callable[[str], str], l2_backend: L2Backend, kv_bytes_per_token: int
) -> str | None:
    """``l2_tokens`` in PromQL over ``rate(metric)`` expressions; None for an endpoint without
    L2 (it reads nothing from one by design)."""
    if l2_backend in MOUNTED_L2_BACKENDS:
        return f"({rate(L2_READS)} * {LMCACHE_CHUNK_TOKENS})"
    if l2_backend == "tieredstorage":
        return f"({rate(L2_READ_BYTES)} / {HYPERPOD_READ_COUNTED * kv_bytes_per_token})"
    return None


@dataclass(frozen=True)
class TierShares:
    """Each tier's share of the prompt tokens looked up (None when nothing was looked up, or
    for L2 on an endpoint without one), and the share of LMCache's promised tokens that did not
    load (None when it promised nothing)."""

    queried: float
    l0: float | None
    l1: float | None
    l2: float | None
    recomputed: float | None
    load_shortfall: float | None


def tier_shares(
    deltas: Mapping[str, float], l2_backend: L2Backend, kv_bytes_per_token: int
) -> TierShares:
    """``deltas``: each of ``COUNTERS``' increase over the run (absent counts as 0)."""
    d = {name: float(deltas.get(name, 0.0)) for name in COUNTERS}
    queried, promised = d[QUERIED], d[PROMISED]
    shortfall = (promised - d[LOADED]) / promised if promised > 0 else None
    if queried <= 0:
        return TierShares(0.0, None, None, None, None, shortfall)
    l2_tok = l2_tokens(d[L2_READS], d[L2_READ_BYTES], l2_backend, kv_bytes_per_token)
    l2_tok = min(l2_tok, d[LOADED])  # the estimate never exceeds what LMCache loaded
    l0, lmcache = d[L0_HITS] / queried, d[LOADED] / queried
    l2 = None if l2_backend == "none" else l2_tok / queried
    l1 = lmcache - (l2 or 0.0)
    return TierShares(queried, l0, l1, l2, max(0.0, 1.0 - l0 - lmcache), shortfall)
