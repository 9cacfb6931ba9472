"""LMCache's fs:// connector against the disk under it: put and get throughput of chunks of
Qwen3-8B's KV (36 layers x 2 x 256 tokens x 8 heads x 128, bf16: 36 MiB each) through LMCache's
own store and retrieve paths (its remote backend: every chunk of a batch in flight at once, on
asyncio's default thread pool through aiofiles, as a replica uses it), beside plain writes and
reads of the same bytes in the same folder with the same concurrency (a pool of as many threads,
every chunk submitted at once). Writes are timed until the data is on disk (os.sync); reads
start cold (each file fsynced and dropped from the page cache before the round's reads) and
land in memory allocated before the clock starts, as the connector's land in its L1's pool.
The side that goes first alternates by round, and each side's write rate is taken from the
rounds it wrote first: on a virtual disk the second write of a round waits out the first's
write-back (the order alone moved the ratio from 3.8 to 0.2). Printed in MB/s as the median
with the range, and the connector-to-disk ratio of the medians.

Runs with a runtime virtualenv's Python (make bench: .venv-runtime/<image>/bin/python), which has
LMCache; it imports nothing of the app. ``hpkv size --curvine-read-mb-per-s`` takes a read rate
measured this way (on a node, on the Curvine mount).

Usage: .venv-runtime/v0.3.15/bin/python tools/bench/l2_throughput.py [--chunks 32] [--rounds 6]
       [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

LAYERS, KV_HEADS, HEAD_DIM, CHUNK = 36, 8, 128, 256
# asyncio's default executor, which aiofiles (LMCache's fs connector) runs each file call on.
WORKERS = min(32, (os.cpu_count() or 1) + 4)


def drop_from_page_cache(paths: Iterable[Path]) -> None:
    """Each file on disk and out of the page cache: the next read comes from the disk."""
    for path in paths:
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


def _write_one(path: Path, payload: bytes) -> None:
    with open(path.with_suffix(".tmp"), "wb") as f:
        f.write(payload)
    os.replace(path.with_suffix(".tmp"), path)


def _write(paths: list[Path], payload: bytes) -> None:
    """The same bytes, every file submitted at once to ``WORKERS`` threads (a temporary name,
    then a rename, as LMCache's connector does), until on disk."""
    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(lambda p: _write_one(p, payload), paths))
    os.sync()


def _get(remote: Any, keys: list[Any]) -> None:
    """LMCache's retrieve path: the chunks read back from its remote backend at once."""
    found = remote.batched_get_blocking(keys)
    assert all(obj is not None for obj in found)
    for obj in found:
        obj.ref_count_down()


def _read_one(path: Path, buffer: bytearray) -> None:
    with open(path, "rb", buffering=0) as f:
        f.readinto(buffer)


def _read(paths: list[Path], buffers: list[bytearray]) -> None:
    """Every file submitted at once to ``WORKERS`` threads, each into a buffer of its own (as
    the connector reads each chunk into an object of its own). The buffers exist before the
    clock starts: allocating them inside it halved the rate (page faults, not the disk)."""
    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(_read_one, paths, buffers))


def measure(root: Path, chunks: int, rounds: int) -> dict[str, list[float]]:
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
        model_name="bench",
        world_size=1,
        local_world_size=1,
        worker_id=0,
        local_worker_id=0,
        kv_dtype=torch.bfloat16,
        kv_shape=(LAYERS, 2, CHUNK, KV_HEADS, HEAD_DIM),
    )
    storage = StorageManager(config, meta, event_manager=EventManager())
    remote: Any = storage.storage_backends["RemoteBackend"]
    source = storage.allocate(meta.get_shapes(), meta.get_dtypes())
    source.tensor.copy_(torch.randn(source.tensor.shape).to(torch.bfloat16))
    payload = bytes(source.byte_array)
    total = chunks * len(payload)
    lmcache_dir, plain_dir = root / "lmcache", root / "plain"
    plain_dir.mkdir(parents=True, exist_ok=True)
    buffers = [bytearray(len(payload)) for _ in range(chunks)]
    rates: dict[str, list[float]] = {}

    def rate(name: str, seconds: float) -> None:
        rates.setdefault(name, []).append(total / seconds / 1e6)

    for r in range(rounds):
        keys = [
            CacheEngineKey("bench", 1, 0, 1_000_000 * r + i, torch.bfloat16) for i in range(chunks)
        ]
        plain = [plain_dir / f"{r}-{i}.data" for i in range(chunks)]
        writes = [
            ("connector put", partial(_put, remote, source, keys)),
            ("plain write", partial(_write, plain, payload)),
        ]
        reads = [
            ("connector get", partial(_get, remote, keys)),
            ("plain read", partial(_read, plain, buffers)),
        ]
        if r % 2:
            writes.reverse()
            reads.reverse()
        (first, write), (_, other_write) = writes
        rate(first, _timed(write))
        other_write()  # its files, for the reads; its rate is from the rounds it goes first
        drop_from_page_cache(lmcache_dir.iterdir())
        drop_from_page_cache(plain_dir.iterdir())
        for name, read in reads:
            rate(name, _timed(read))
        # One round's chunks on disk at a time (each round is 2 x chunks x 36 MiB).
        for path in [*lmcache_dir.iterdir(), *plain]:
            path.unlink()
    storage.close()
    return rates


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} [{min(values):,.0f}-{max(values):,.0f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=32)
    parser.add_argument(
        "--rounds", type=int, default=6, help="an even number: each side goes first in half"
    )
    parser.add_argument("--dir", type=Path, help="folder to measure in (default: a new one)")
    args = parser.parse_args(argv)
    if args.rounds < 2 or args.rounds % 2:
        parser.error(
            f"--rounds {args.rounds}: an even number from 2, so each side goes first in half"
        )
    root = args.dir or Path(tempfile.mkdtemp(prefix="l2-throughput-", dir=Path.cwd()))
    try:
        rates = measure(root.resolve(), args.chunks, args.rounds)
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    gib = args.chunks * 37_748_736 / 2**30
    print(
        f"L2 fs connector vs the disk ({args.chunks} chunks of Qwen3-8B KV, {gib:.2f} GiB; both "
        f"with every chunk in flight on {WORKERS} threads; writes until on disk, in the "
        f"{args.rounds // 2} rounds each side wrote first; reads with the page cache dropped, "
        f"into memory allocated beforehand, in all {args.rounds} rounds; MB/s, median "
        "[min-max]):"
    )
    for what, ours, disk in (
        ("write", "connector put", "plain write"),
        ("read", "connector get", "plain read"),
    ):
        mine, plain = statistics.median(rates[ours]), statistics.median(rates[disk])
        spread = f"connector {_spread(rates[ours])}, plain {_spread(rates[disk])}"
        print(f"  {what}: {spread}, ratio of medians {mine / plain:.2f}")
    os._exit(0)  # LMCache's event-loop thread would keep the interpreter alive


if __name__ == "__main__":
    main()
