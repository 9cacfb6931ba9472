"""A model of where a vLLM + LMCache Pod finds a prompt's KV, for the fake model server
(``fake_vllm``): L0 (the GPU prefix cache) and L1 (LMCache's CPU backend) per server, L2 a
directory shared by the servers of one tier (as Curvine or FSx is shared by the Pods that mount
it), and the counters vLLM and LMCache export, fed the way their code feeds them
(``infra/metrics/tiers.py`` says how):

- a prompt is split into words (one word, one token) and chunks of ``chunk`` tokens, each chunk
  named by a hash of the whole prefix up to its end (LMCache's chained chunk keys);
- lookup walks the chunks in order: a chunk on the GPU is L0, else in L1, else in L2, and the
  first chunk found nowhere ends the walk (a prefix cache);
- LMCache's retrieve loads the L1 and L2 chunks in order and stops at the first that fails to
  read (``l2_state`` ``unreadable``), so the rest is recomputed; with ``l2_state`` ``down`` the
  store cannot be reached at all: lookups miss and writes fail (LMCache counts neither);
- after the request every whole chunk is stored on the GPU, in L1 and in L2 (LMCache's
  ``save_unfull_chunk`` is false from 0.3.11: a partial last chunk is not stored).

The first token leaves after ``base_ms`` plus, for each token, the per-token delay of where it
came from (``cold`` for a recomputed one): a prompt held wholly in one tier answers after that
tier's delay, which is what a test can check a benchmark's figures against.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

L2State = Literal["up", "unreadable", "down"]
COUNTERS = (
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:request_success_total",
    "lmcache:num_requested_tokens_total",
    "lmcache:num_hit_tokens_total",
    "lmcache:num_remote_read_requests_total",
    "lmcache:num_remote_read_bytes_total",
    "lmcache:num_remote_write_requests_total",
    "lmcache:num_remote_write_bytes_total",
)
WHERE = ("l0", "l1", "l2", "cold")  # where a prompt token came from


@dataclass(frozen=True)
class TierSpec:
    """What one fake server is: its tier's name, the shared L2 directory (None: no L2) and
    the per-token delays in milliseconds."""

    tier: str = "none"
    l2_dir: str | None = None
    ms_per_token: dict[str, float] = field(
        default_factory=lambda: {"l0": 0.0, "l1": 0.0, "l2": 0.0, "cold": 0.0}
    )
    base_ms: float = 0.0
    chunk: int = 256
    l0_tokens: int = 0
    """GPU prefix-cache capacity in tokens (0: nothing stays on the GPU between requests)."""
    l1_tokens: int = 1 << 30
    """LMCache CPU capacity in tokens (0: no L1)."""
    kv_bytes_per_token: int = 147456

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Lru:
    def __init__(self, capacity_chunks: int) -> None:
        self.capacity = capacity_chunks
        self.keys: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, key: str) -> bool:
        return key in self.keys

    def add(self, key: str) -> None:
        if self.capacity <= 0:
            return
        self.keys[key] = None
        self.keys.move_to_end(key)
        while len(self.keys) > self.capacity:
            self.keys.popitem(last=False)


def chunk_keys(words: list[str], chunk: int) -> list[str]:
    """One key per whole chunk: a hash of every word up to the chunk's end."""
    digest = hashlib.sha256()
    keys = []
    for start in range(0, len(words) - len(words) % chunk, chunk):
        digest.update(" ".join(words[start : start + chunk]).encode() + b"\0")
        keys.append(digest.copy().hexdigest()[:32])
    return keys


@dataclass
class Served:
    """Where one request's prompt tokens came from and how long its first token waited."""

    tokens: dict[str, int]
    delay_ms: float


class Tiers:
    def __init__(self, spec: TierSpec) -> None:
        self.spec = spec
        self.l0 = _Lru(spec.l0_tokens // spec.chunk)
        self.l1 = _Lru(spec.l1_tokens // spec.chunk)
        self.l2_state: L2State = "up"
        # Every series from the start, as a Pod shows them once LMCache has published once.
        self.counters: dict[str, float] = dict.fromkeys(COUNTERS, 0.0)
        self._lock = threading.Lock()

    def _l2_path(self, key: str) -> Path | None:
        return Path(self.spec.l2_dir) / key if self.spec.l2_dir else None

    def _in_l2(self, key: str) -> bool:
        path = self._l2_path(key)
        return path is not None and self.l2_state != "down" and path.exists()

    def _count(self, name: str, value: float) -> None:
        self.counters[name] = self.counters.get(name, 0.0) + value

    def serve(self, prompt: str, completion_tokens: int) -> Served:
        words = prompt.split()
        keys = chunk_keys(words, self.spec.chunk)
        with self._lock:
            on_gpu = 0  # vLLM's prefix match: the leading chunks on the GPU
            while on_gpu < len(keys) and keys[on_gpu] in self.l0:
                on_gpu += 1
            found = []  # then LMCache's lookup, until a chunk is nowhere
            for key in keys[on_gpu:]:
                if key in self.l1:
                    found.append("l1")
                elif self._in_l2(key):
                    found.append("l2")
                else:
                    break
            tokens = self._load(on_gpu * self.spec.chunk, found, len(words))
            self._store(keys)
            self._count_request(len(words), completion_tokens)
        spec = self.spec
        delay = spec.base_ms + sum(tokens[w] * spec.ms_per_token.get(w, 0.0) for w in WHERE)
        return Served(tokens, delay)

    def _load(self, l0: int, found: list[str], prompt_tokens: int) -> dict[str, int]:
        """LMCache's retrieve of the chunks its lookup ``found`` beyond the ``l0`` tokens on the
        GPU, in order, stopping at the first that fails to read; the counters as LMCache and
        vLLM feed them."""
        chunk = self.spec.chunk
        loaded = {"l1": 0, "l2": 0}
        for w in found:
            if w == "l2" and self.l2_state == "unreadable":
                break
            loaded[w] += chunk
        self._count_l2_reads(loaded["l2"] // chunk)
        self._count("vllm:prefix_cache_queries_total", prompt_tokens)
        self._count("vllm:prefix_cache_hits_total", l0)
        if found:
            self._count("lmcache:num_requested_tokens_total", len(found) * chunk)
            self._count("lmcache:num_hit_tokens_total", loaded["l1"] + loaded["l2"])
        cold = prompt_tokens - l0 - loaded["l1"] - loaded["l2"]
        return {"l0": l0, "l1": loaded["l1"], "l2": loaded["l2"], "cold": cold}

    def _count_l2_reads(self, chunks: int) -> None:
        """fs:// counts one read per chunk; from LMCache 0.3.13 the sagemaker-hyperpod
        connector counts each chunk in its own get and the batch again (bytes twice, requests
        chunks + batches: one batch per request here)."""
        if chunks == 0:
            return
        twice = self.spec.tier == "tieredstorage"
        size = chunks * self.spec.chunk * self.spec.kv_bytes_per_token
        self._count("lmcache:num_remote_read_requests_total", chunks + (1 if twice else 0))
        self._count("lmcache:num_remote_read_bytes_total", size * (2 if twice else 1))

    def _store(self, keys: list[str]) -> None:
        for key in keys:
            self.l0.add(key)
            self.l1.add(key)
            path = self._l2_path(key)
            if path is None or self.l2_state == "down" or path.exists():
                continue
            path.write_bytes(b"kv")
            self._count("lmcache:num_remote_write_requests_total", 1)
            self._count(
                "lmcache:num_remote_write_bytes_total",
                self.spec.chunk * self.spec.kv_bytes_per_token,
            )

    def _count_request(self, prompt_tokens: int, completion_tokens: int) -> None:
        self._count("vllm:prompt_tokens_total", prompt_tokens)
        self._count("vllm:generation_tokens_total", completion_tokens)
        self._count("vllm:request_success_total", 1)

    def metrics_text(self, model: str) -> str:
        """The counters in Prometheus's text format, named, typed and labelled as a model
        container's /metrics has them with PROMETHEUS_MULTIPROC_DIR set (prometheus_client's
        multiprocess collector types the ``_total`` name): LMCache inside vLLM labels its
        counters with vLLM's served model name as well (0.3.15 and 0.4.7). tests/server holds
        them to a real replica of each supported image, tests/runtime LMCache's to its engine."""
        with self._lock:
            counters = dict(self.counters)
        lines = []
        for name, value in sorted(counters.items()):
            if name == "vllm:request_success_total":
                # vLLM counts finished requests by why they finished: the fake's stop at
                # max_tokens.
                labels = f'engine="0",finished_reason="length",model_name="{model}"'
            elif name.startswith("vllm:"):
                labels = f'engine="0",model_name="{model}"'
            else:
                labels = (
                    f'model_name="{model}",role="worker",served_model_name="{model}",worker_id="0"'
                )
            lines += [f"# TYPE {name} counter", f"{name}{{{labels}}} {value}"]
        return "\n".join(lines) + "\n"
