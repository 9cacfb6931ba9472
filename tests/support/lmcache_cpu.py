"""The one piece of LMCache's in-process vLLM connector that has no CPU build: the copy between
vLLM's paged KV cache and LMCache's chunks. Loaded by a real vLLM CPU server through
``kv_connector_module_path`` (tests/server), under a class name of its own: vLLM 0.16 looks a
registered name up in its own registry before any module path.

Everything else stays LMCache's and vLLM's: the scheduler-side lookup, the worker-side store and
retrieve, the storage backends, the counters and the log lines. What this module changes:

- LMCache 0.3.15's ``get_vllm_torch_dev`` refuses vLLM's CPU platform
  (lmcache/integration/vllm/utils.py) and 0.4.7's ``CreateGPUConnector`` has no connector for it
  (lmcache/v1/gpu_connector/__init__.py): both answer the CPU here, with ``CpuPagedKV``.
- vLLM CPU's cache layout differs by release: 0.16 keeps each layer as
  ``[2, blocks, kv_heads, block, head]``, 0.23 as ``[blocks, kv_heads, block, 2 * head]``.
  LMCache is handed views of the same memory in the order its CUDA path expects,
  ``[2, blocks, block, kv_heads, head]`` (0.3.15 infers the hidden size from that order), and
  the copy skips 0.4.7's step that makes such views contiguous (a copy of the whole cache).

Runs inside a server virtualenv (vLLM CPU with the image's LMCache); imports nothing of the app.
"""

from __future__ import annotations

from typing import Any

import torch
from lmcache.v1.gpu_connector.gpu_connectors import GPUConnectorInterface
from vllm.distributed.kv_transfer.kv_connector.v1.lmcache_connector import LMCacheConnectorV1


def paged_view(layer: torch.Tensor) -> torch.Tensor:
    """``layer`` (one layer of vLLM CPU's cache) as ``[2, blocks, block, kv_heads, head]``, a
    view of the same memory."""
    if layer.dim() == 5 and layer.shape[0] == 2:  # vLLM 0.16: [2, blocks, heads, block, head]
        return layer.permute(0, 1, 3, 2, 4)
    if layer.dim() == 4:  # vLLM 0.23: [blocks, heads, block, 2 * head]
        blocks, heads, block, both = layer.shape
        return layer.view(blocks, heads, block, 2, both // 2).permute(3, 0, 2, 1, 4)
    raise ValueError(f"unknown vLLM CPU KV layout {tuple(layer.shape)}")


class CpuPagedKV(GPUConnectorInterface):  # type: ignore[misc]
    """LMCache's chunks (``[2, layers, tokens, kv_heads * head]``) to and from the paged views."""

    def __init__(self, layers: int, hidden: int) -> None:
        self.layers, self.hidden = layers, hidden
        self.kvcaches: list[torch.Tensor] | None = None

    def initialize_kvcaches_ptr(self, **kwargs: Any) -> None:
        if "kvcaches" in kwargs:
            self.kvcaches = kwargs["kvcaches"]

    def _slots(self, start: int, end: int, kwargs: dict[str, Any]) -> tuple[Any, Any, int]:
        self.initialize_kvcaches_ptr(**kwargs)
        assert self.kvcaches is not None, "vLLM registered no KV cache"
        slots = kwargs["slot_mapping"][start:end].to(torch.long)
        block = self.kvcaches[0].shape[2]
        return slots // block, slots % block, end - start

    def from_gpu(self, memory_obj: Any, start: int, end: int, **kwargs: Any) -> None:
        blocks, offsets, n = self._slots(start, end, kwargs)
        assert self.kvcaches is not None
        out = memory_obj.tensor
        for i, layer in enumerate(self.kvcaches):
            out[:, i, :n].copy_(layer[:, blocks, offsets].reshape(2, n, self.hidden))

    def to_gpu(self, memory_obj: Any, start: int, end: int, **kwargs: Any) -> None:
        blocks, offsets, n = self._slots(start, end, kwargs)
        assert self.kvcaches is not None
        src = memory_obj.tensor
        for i, layer in enumerate(self.kvcaches):
            layer[:, blocks, offsets] = src[:, i, :n].reshape(2, n, *layer.shape[3:])

    def batched_from_gpu(self, memory_objs: Any, starts: Any, ends: Any, **kwargs: Any) -> None:
        for obj, start, end in zip(memory_objs, starts, ends, strict=True):
            self.from_gpu(obj, start, end, **kwargs)

    def batched_to_gpu(
        self, memory_objs: Any = None, starts: Any = None, ends: Any = None, **kwargs: Any
    ) -> None:
        for obj, start, end in zip(memory_objs, starts, ends, strict=True):
            self.to_gpu(obj, start, end, **kwargs)

    def get_shape(self, num_tokens: int) -> torch.Size:
        return torch.Size([2, self.layers, num_tokens, self.hidden])


class _CpuDevice:
    """What LMCache 0.3.15 asks of the device module it gets: a count and a no-op select."""

    @staticmethod
    def device_count() -> int:
        return 1

    @staticmethod
    def set_device(_: int) -> None:
        return None


def _cpu_connector(config: Any, metadata: Any, engine: Any, **_: Any) -> CpuPagedKV:
    layers, _, _, heads, head = metadata.kv_shape
    return CpuPagedKV(layers, heads * head)


def _use_the_cpu() -> None:
    """Point LMCache's device-specific factory (and 0.3.15's device probe) at the CPU."""
    import lmcache.v1.gpu_connector as factory

    factory.CreateGPUConnector = _cpu_connector
    try:  # LMCache 0.3.x: the manager holds its own reference, the probe refuses the CPU
        import lmcache.integration.vllm.utils as utils
        import lmcache.v1.manager as manager

        manager.CreateGPUConnector = _cpu_connector  # type: ignore[attr-defined]
        utils.get_vllm_torch_dev = lambda: (_CpuDevice, "cpu")  # type: ignore[attr-defined]
    except (ImportError, AttributeError):
        pass


class CpuLMCacheConnectorV1(LMCacheConnectorV1):  # type: ignore[misc]
    """vLLM's own LMCacheConnectorV1, with the CPU copy in LMCache's device-specific place."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _use_the_cpu()
        super().__init__(*args, **kwargs)

    def register_kv_caches(self, kv_caches: dict[str, torch.Tensor]) -> None:
        super().register_kv_caches({name: paged_view(t) for name, t in kv_caches.items()})
