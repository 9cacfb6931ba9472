"""LMCache log lines in the formats LMCache prints (cache_engine.py, the vLLM v1 connector), from
the seed's measurements: a store, a hit and its retrieve, a miss, and a partial hit."""

from __future__ import annotations

PREFIX = "(EngineCore_DP0 pid=412) [2026-11-30 10:02:11,481] LMCache INFO:"
SEED_STORE = (
    f"{PREFIX} Stored 1925 out of total 1925 tokens. size: 0.1028 gb, cost 10.7100 ms, "
    "throughput: 9.5986 GB/s; offload_time: 10.2400 ms, put_time: 0.4700 ms "
    "(cache_engine.py:312:lmcache.v1.cache_engine)"
)
SEED_HIT = (
    f"{PREFIX} Reqid: cmpl-8d1c0f3b2a-0, Total tokens 1925, LMCache hit tokens: 1925, "
    "need to load: 1925 (vllm_v1_adapter.py:1044:lmcache.integration.vllm.vllm_v1_adapter)"
)
SEED_RETRIEVE = (
    f"{PREFIX} Retrieved 1925 out of 1925 required tokens (from 1925 total tokens). "
    "size: 0.1028 gb, cost 55.7500 ms, throughput: 1.8440 GB/s; "
    "(cache_engine.py:540:lmcache.v1.cache_engine)"
)
MISS = (
    f"{PREFIX} Reqid: cmpl-11aa-0, Total tokens 1925, Inference Engine computed tokens: 0, "
    "LMCache hit tokens: 0, need to load: 0"
)
PARTIAL_HIT = (
    f"{PREFIX} Reqid: cmpl-22bb-0, Total tokens 1925, LMCache hit tokens: 1792, need to load: 1792"
)
PARTIAL_RETRIEVE = (
    f"{PREFIX} Retrieved 1792 out of 1792 required tokens (from 1925 total tokens). "
    "size: 0.0957 gb, cost 48.1200 ms, throughput: 1.9888 GB/s;"
)
