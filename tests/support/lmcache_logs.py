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
# LMCache's start failing in the worker, as vLLM CPU servers printed it (tests/server): 0.3.15 in
# one line, 0.4.7 with the traceback first (vLLM 0.23 prefixes a worker's lines).
DEGRADED_0_3 = (
    "(EngineCore_DP0 pid=26777) \x1b[31;20m[2026-12-06 07:07:01,687] LMCache ERROR:\x1b[0m Failed "
    "to initialize LMCacheManager components: Unsupported device platform for LMCache engine.. "
    "System will operate in degraded mode (recompute). \x1b[3m(manager.py:111:lmcache.v1.manager)"
    "\x1b[0m"
)
DEGRADED_0_4 = "\n".join(
    [
        "(Worker pid=28618) \x1b[31;20m[2026-12-06 07:39:08,329] LMCache ERROR:\x1b[0m Failed to "
        "initialize LMCacheManager components: Traceback (most recent call last):",
        '(Worker pid=28618)   File "lmcache/v1/gpu_connector/__init__.py", line 193, in '
        "CreateGPUConnector",
        '(Worker pid=28618)     raise RuntimeError(f"No supported {torch_device_type} connector '
        'found.")',
        "(Worker pid=28618) RuntimeError: No supported cpu connector found.",
        "(Worker pid=28618) . System will operate in degraded mode (recompute). "
        "\x1b[3m(manager.py:107:lmcache.v1.manager)\x1b[0m",
    ]
)
