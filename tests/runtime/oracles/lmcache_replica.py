"""Runs inside a runtime virtualenv, as one replica's model container: LMCache's own engine
(``LMCacheEngineBuilder``: its CPU backend, its remote backend with the connector the env names,
its token hashing and its Prometheus counters) stores or retrieves a prompt's KV.

stdin: {"env": {...}, "role": "store" | "retrieve", "tokens": N, "seed": S,
        "model": {"name": ..., "layers": L, "kv_heads": H, "head_dim": D}}.
stdout: {"keys": [...], "lookup": hit tokens, "retrieved": tokens, "equal": bytes equal to what
the storing replica wrote, "exposition": the /metrics text of LMCache's counters}.

The one stand-in is the copy between GPU memory and LMCache's buffers (no GPU here): a CPU tensor
in LMCache's own KV layout, [2, layers, tokens, kv_heads * head_dim]. The process always ends with
os._exit: LMCache leaves a non-daemon event-loop thread behind when its storage fails to start.
"""

import json
import os
import sys

request = json.load(sys.stdin)
answer_to, sys.stdout = sys.stdout, sys.stderr
for name in [n for n in os.environ if n.startswith("LMCACHE_")]:
    del os.environ[name]
os.environ.update(request["env"])
os.environ.setdefault("LMCACHE_TRACK_USAGE", "false")


def main() -> dict[str, object]:
    import torch
    from lmcache.v1.cache_engine import LMCacheEngineBuilder
    from lmcache.v1.config import LMCacheEngineConfig
    from lmcache.v1.gpu_connector.gpu_connectors import GPUConnectorInterface
    from lmcache.v1.metadata import LMCacheMetadata
    from prometheus_client import CollectorRegistry, generate_latest, multiprocess

    model = request["model"]
    layers, width = model["layers"], model["kv_heads"] * model["head_dim"]
    n = request["tokens"]

    class CpuMemory(GPUConnectorInterface):
        """The model's KV as a CPU tensor in LMCache's layout."""

        def from_gpu(self, memory_obj, start, end, **kw):  # type: ignore[no-untyped-def]
            memory_obj.tensor.copy_(kw["kv"][:, :, start:end, :])

        def to_gpu(self, memory_obj, start, end, **kw):  # type: ignore[no-untyped-def]
            kw["kv"][:, :, start:end, :].copy_(memory_obj.tensor)

        def batched_from_gpu(self, memory_objs, starts, ends, **kw):  # type: ignore[no-untyped-def]
            for m, s, e in zip(memory_objs, starts, ends, strict=True):
                self.from_gpu(m, s, e, **kw)

        def batched_to_gpu(self, memory_objs=None, starts=None, ends=None, **kw):  # type: ignore[no-untyped-def]
            for m, s, e in zip(memory_objs, starts, ends, strict=True):
                self.to_gpu(m, s, e, **kw)

        def get_shape(self, num_tokens):  # type: ignore[no-untyped-def]
            return torch.Size([2, layers, num_tokens, width])

    config = LMCacheEngineConfig.from_env()
    metadata = LMCacheMetadata(
        model_name=model["name"],
        world_size=1,
        local_world_size=1,
        worker_id=0,
        local_worker_id=0,
        kv_dtype=torch.bfloat16,
        kv_shape=(layers, 2, config.chunk_size, model["kv_heads"], model["head_dim"]),
        role="worker",
        # vLLM's served model name, as vLLM's connector passes it (LMCache labels its counters
        # with it): without --served-model-name, the model path.
        served_model_name=model["name"],
    )
    engine = LMCacheEngineBuilder.get_or_create(
        "replica",
        config,
        metadata,
        CpuMemory(),
        broadcast_fn=lambda t, src: None,
        broadcast_object_fn=lambda o, src: o,
    )
    engine.post_init()
    tokens = torch.arange(1000, 1000 + n, dtype=torch.long)
    generator = torch.Generator().manual_seed(request["seed"])
    written = torch.randn((2, layers, n, width), generator=generator).to(torch.bfloat16)
    keys = [k.to_string() for _, _, k in engine.token_database.process_tokens(tokens)]
    result: dict[str, object] = {"keys": keys}
    if request["role"] == "store":
        engine.store(tokens, kv=written)
        remote = engine.storage_manager.storage_backends.get("RemoteBackend")
        while remote is not None and remote.put_tasks:  # the L2 writes are asynchronous
            pass
    else:
        result["lookup"] = engine.lookup(tokens)
        read = torch.zeros_like(written)
        got = int(engine.retrieve(tokens, kv=read).sum())
        result["retrieved"] = got
        result["equal"] = bool(
            torch.equal(read[:, :, :got].view(torch.int16), written[:, :, :got].view(torch.int16))
        )
    # What the stats thread does every 10 s, once, now: counters into the multiprocess files.
    stats = LMCacheEngineBuilder._stat_loggers["replica"]
    stats.prometheus_logger.log_prometheus(stats.monitor.get_stats_and_clear())
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    result["exposition"] = generate_latest(registry).decode()
    return result


try:
    answer_to.write(json.dumps(main()))
    answer_to.flush()
    code = 0
except Exception as exc:
    answer_to.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
    answer_to.flush()
    code = 1
os._exit(code)
