"""LMCache's fs:// connector against the disk under it: put and get throughput of chunks of
Qwen3-8B's KV (36 layers x 2 x 256 tokens x 8 heads x 128, bf16: 36 MiB each) through LMCache's
own store and retrieve paths (its remote backend, batched and concurrent, as a replica uses it),
beside a plain sequential write and read of the same bytes in the same folder. Writes are timed
until the data is on disk (os.sync); reads start cold (each file fsynced and dropped from the page
cache). Printed in MB/s, and as the connector-to-disk ratio, the best of the rounds.

Runs with a runtime virtualenv's Python (make bench: .venv-runtime/<image>/bin/python), which has
LMCache; it imports nothing of the app. ``hpkv size --curvine-read-mb-per-s`` takes a read rate
measured this way (on a node, on the Curvine mount).

Usage: .venv-runtime/v0.3.15/bin/python tools/bench/l2_throughput.py [--chunks 32] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

LAYERS, KV_HEADS, HEAD_DIM, CHUNK = 36, 8, 128, 256


def _cold(folder: Path) -> None:
    """Every file of ``folder`` on disk and out of the page cache."""
    for path in folder.iterdir():
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _timed(run: Callable[..., None], *args: Any) -> float:
    start = time.perf_counter()
    run(*args)
    return time.perf_counter() - start


def _put(remote: Any, source: Any, keys: list[Any]) -> None:
    """LMCache's store path: the chunks submitted to its remote backend at once, until on disk."""
    source.ref_count_up()
    remote.batched_submit_put_task(keys, [source] * len(keys))
    while remote.put_tasks:
        time.sleep(0.001)
    source.ref_count_down()
    os.sync()


def _write(paths: list[Path], payload: bytes) -> None:
    """The same bytes written one file after the other (a temporary name, then a rename, as
    LMCache's connector does), until on disk."""
    for path in paths:
        with open(path.with_suffix(".tmp"), "wb") as f:
            f.write(payload)
        os.replace(path.with_suffix(".tmp"), path)
    os.sync()


def _get(remote: Any, keys: list[Any]) -> None:
    """LMCache's retrieve path: the chunks read back from its remote backend at once."""
    found = remote.batched_get_blocking(keys)
    assert all(obj is not None for obj in found)
    for obj in found:
        obj.ref_count_down()


def _read(paths: list[Path], buffer: bytearray) -> None:
    for path in paths:
        with open(path, "rb", buffering=0) as f:
            f.readinto(buffer)


def measure(root: Path, chunks: int, rounds: int) -> dict[str, float]:
    os.environ.update(
        LMCACHE_TRACK_USAGE="false",
        LMCACHE_LOG_LEVEL="WARNING",
        LMCACHE_REMOTE_SERDE="naive",
        # The L1 holds one round's chunks: a batched get lands them there.
        LMCACHE_MAX_LOCAL_CPU_SIZE=str(round(chunks * 37_748_736 / 2**30 + 0.5, 1)),
        LMCACHE_REMOTE_URL=f"fs://localhost:0{root}/lmcache/",
    )
    import torch
    from lmcache.utils import CacheEngineKey
    from lmcache.v1.config import LMCacheEngineConfig
    from lmcache.v1.event_manager import EventManager
    from lmcache.v1.metadata import LMCacheMetadata
    from lmcache.v1.storage_backend.storage_manager import StorageManager

    config = LMCacheEngineConfig.from_env()
    meta = LMCacheMetadata(
        model_name="bench", world_size=1, local_world_size=1, worker_id=0, local_worker_id=0,
        kv_dtype=torch.bfloat16, kv_shape=(LAYERS, 2, CHUNK, KV_HEADS, HEAD_DIM),
    )  # fmt: skip
    storage = StorageManager(config, meta, event_manager=EventManager())
    remote: Any = storage.storage_backends["RemoteBackend"]
    source = storage.allocate(meta.get_shapes(), meta.get_dtypes())
    source.tensor.copy_(torch.randn(source.tensor.shape).to(torch.bfloat16))
    payload = bytes(source.byte_array)
    total = chunks * len(payload)
    lmcache_dir, plain_dir = root / "lmcache", root / "plain"
    plain_dir.mkdir(parents=True, exist_ok=True)
    best: dict[str, float] = {}

    def rate(name: str, seconds: float) -> None:
        best[name] = max(best.get(name, 0.0), total / seconds / 1e6)

    buffer = bytearray(len(payload))
    for r in range(rounds):
        keys = [CacheEngineKey("bench", 1, 0, 1_000_000 * r + i, torch.bfloat16)
                for i in range(chunks)]  # fmt: skip
        plain = [plain_dir / f"{r}-{i}.data" for i in range(chunks)]
        rate("connector put", _timed(_put, remote, source, keys))
        rate("plain write", _timed(_write, plain, payload))
        _cold(lmcache_dir)
        _cold(plain_dir)
        rate("connector get", _timed(_get, remote, keys))
        rate("plain read", _timed(_read, plain, buffer))
    storage.close()
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="folder to measure in (default: a new one)")
    args = parser.parse_args(argv)
    root = args.dir or Path(tempfile.mkdtemp(prefix="l2-throughput-", dir=Path.cwd()))
    try:
        best = measure(root.resolve(), args.chunks, args.rounds)
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    gib = args.chunks * 37_748_736 / 2**30
    print(f"L2 fs connector vs the disk ({args.chunks} chunks of Qwen3-8B KV, {gib:.2f} GiB, "
          f"best of {args.rounds} rounds, MB/s):")  # fmt: skip
    for what, ours, disk in (("write", "connector put", "plain write"),
                             ("read", "connector get", "plain read")):  # fmt: skip
        print(f"  {what}: connector {best[ours]:,.0f}, plain {best[disk]:,.0f}, "
              f"ratio {best[ours] / best[disk]:.2f}")  # fmt: skip
    os._exit(0)  # LMCache's event-loop thread would keep the interpreter alive


if __name__ == "__main__":
    main()
