"""The cache at work before any cluster exists: time to first token of a long shared prefix on two
real vLLM CPU replicas of an endpoint with LMCache in process (the server layer's replicas,
tests/support/vllm_server.py: the rendered Pod's env and arguments, the claim's subPath bound
at the rendered mount), on a real architecture with random weights made here (Qwen3-0.6B's
config.json shape; nothing is downloaded). Prints one line per image, starting ``TTFT``:

- cold on B: B computes a prefix no one has seen (median of ``--requests``);
- L2 hit on B: B, its L1 without the prefix, reads what A stored in the shared folder (each
  prefix's chunk files dropped from the page cache first, as a read from another node's disk);
- L1 hit on A: A serves a prefix it stored again, after the next prefix pushed it out of vLLM's
  own KV cache (one prefix fits there, two in LMCache's L1);
- the ratio cold / L2 hit, and the floor an L2 hit cannot beat: a plain read of the same chunk
  files from the same disk (page cache dropped) plus one decode step of B.

Each phase is checked against the replicas' own counters and log lines (no L2 read on A, every
whole chunk read from L2 on B, LMCache's lookup hits): a run that did not serve from the tier
it names stops with the reason instead of printing a figure.

``--mode mp``: the same phases with LMCache's multiprocess server beside each replica
(tests/support/lmcache_mp.py); the checks read the server's counters (chunks prefetched from
L2) and vLLM's (tokens its connector loaded). Images whose LMCache runs that way here only.

Usage: python -m tools.bench.ttft [--image TAG]... [--shape qwen3-0.6b] [--prefix-tokens 4096]
       [--requests 5] [--mode in-process|mp]   (make bench-ttft; root and unshare, as the server
       layer)
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from infra.config.images import KNOWN, RECOMMENDED
from infra.metrics.tiers import L2_READS, LMCACHE_CHUNK_TOKENS
from scripts.lib.bench_compare.scrape import (
    STATS_INTERVAL_S,
    increase,
    parse_counters,
    scrape_metrics,
)
from scripts.lib.lmcache_logs import parse_log
from scripts.lib.openai_stream import StreamResult, list_models, stream_completion
from scripts.lib.prompts import make_prompt
from tests.support.lmcache_mp import (
    EXTERNAL_HITS,
    L2_PREFETCH_HITS,
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
    Server,
    Sizing,
    default_hash_is_stable,
    metrics_page,
    python_of,
    rendered_endpoints,
    server_images,
    settled,
    start,
    stop,
    wait_ready,
)
from tools.bench.l2_throughput import drop_from_page_cache

ROOT = Path(__file__).resolve().parents[2]
MAKE_MODEL = ROOT / "tests" / "server" / "make_model.py"
BLOCK = 128  # vLLM CPU's block size (vllm/platforms/cpu.py)
FLOAT32 = 4
MP_EVICTION_WATERMARK = 0.8  # the share of its L1 LMCache 0.4.7's MP server fills before evicting
MODES = ("in-process", "mp")


@dataclass(frozen=True)
class Figures:
    tokens: int
    cold_ms: float
    l2_ms: float
    l1_ms: float
    read_ms: float
    read_mb: float
    decode_ms: float

    @property
    def floor_ms(self) -> float:
        return self.read_ms + self.decode_ms


def _kv_bytes_per_token(model: Path) -> int:
    c = json.loads((model / "config.json").read_text())
    per: int = 2 * c["num_hidden_layers"] * c["num_key_value_heads"] * c["head_dim"] * FLOAT32
    return per


def _tokens(url: str, model: str, prompt: str) -> int:
    body = json.dumps({"model": model, "prompt": prompt}).encode()
    request = urllib.request.Request(
        f"{url}/tokenize", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as resp:
        count: int = json.load(resp)["count"]
        return count


def _prefixes(url: str, model: str, tokens: int, n: int, seed: int) -> list[str]:
    """``n`` distinct prompts of at least ``tokens`` tokens each (the model's tokenizer)."""
    out = []
    for i in range(n):
        words = tokens // 3
        while _tokens(url, model, make_prompt(seed + i, words)) < tokens:
            words += max(1, words // 20)
        out.append(make_prompt(seed + i, words))
    return out


def _read(files: list[Path]) -> tuple[float, int]:
    """Milliseconds and bytes of a plain sequential read of ``files`` (page cache dropped)."""
    drop_from_page_cache(files)
    size = sum(f.stat().st_size for f in files)
    buffer = bytearray(max(f.stat().st_size for f in files))
    start = time.perf_counter()
    for f in files:
        with open(f, "rb", buffering=0) as handle:
            handle.readinto(buffer)
    return (time.perf_counter() - start) * 1000, size


def _ask(server: Server, model: str, prompt: str) -> StreamResult:
    return stream_completion(server.url, model, prompt, max_tokens=2)


def _decode_ms(result: StreamResult) -> float:
    """One decode step: the second token's time after the first."""
    return max(0.0, result.total_ms - result.ttft_ms)


def _fail(why: str) -> SystemExit:
    return SystemExit(f"error: bench-ttft: {why}")


class Probe(Protocol):
    """What a replica's own counters (and, in process, LMCache's log lines) say it did since a
    mark: the chunks it read from L2, the tokens LMCache loaded into vLLM's KV cache."""

    @property
    def server(self) -> Server: ...

    def mark(self) -> Any: ...

    def l2_reads(self, mark: Any, want: float) -> float: ...

    def loaded(self, mark: Any) -> int: ...


@dataclass
class InProcess:
    """LMCache inside vLLM: its counters on vLLM's /metrics, its lookups in vLLM's log."""

    server: Server

    def mark(self) -> tuple[dict[str, float], int]:
        return scrape_metrics(self.server.url), len(self.server.log_text())

    def l2_reads(self, mark: tuple[dict[str, float], int], want: float) -> float:
        """The chunks read from L2 since ``mark``, once they reach ``want`` or LMCache has
        published its counters twice since (every ``STATS_INTERVAL_S``): the last request's
        reads show at the next publication, not with its answer."""
        deadline = time.monotonic() + 2 * STATS_INTERVAL_S + 1
        while True:
            read = increase(mark[0], settled(self.server.url, mark[0])).get(L2_READS, 0.0)
            if read >= want or time.monotonic() > deadline:
                return read
            time.sleep(0.5)

    def loaded(self, mark: tuple[dict[str, float], int]) -> int:
        """LMCache's lookups: what it loaded beyond vLLM's own KV cache."""
        log = parse_log(self.server.log_text()[mark[1] :])
        return sum(h.need_to_load or 0 for h in log.hits if h.hit_tokens)


@dataclass
class MultiProcess:
    """LMCache's MP server beside vLLM (tests/support/lmcache_mp.py): the chunks its sidecar
    prefetched from L2, the tokens vLLM's connector loaded (vLLM's own counter)."""

    replica: MpReplica

    @property
    def server(self) -> Server:
        return self.replica.server

    def _external(self) -> float:
        page = metrics_page(self.server.url)
        return parse_counters(page, [EXTERNAL_HITS]).get(EXTERNAL_HITS, 0.0)

    def mark(self) -> tuple[dict[str, float], float]:
        return self.replica.sidecar.counters(), self._external()

    def l2_reads(self, mark: tuple[dict[str, float], float], want: float) -> float:
        """Once the sidecar has counted ``want`` prefetched chunks (it counts as it looks a
        prompt up, before vLLM answers; 10 s for its metrics to show them)."""
        rise = settled_mp(self.replica.sidecar, mark[0], {L2_PREFETCH_HITS: want}, timeout=10)
        return rise.get(L2_PREFETCH_HITS, 0.0)

    def loaded(self, mark: tuple[dict[str, float], float]) -> int:
        """vLLM counts a request's loaded tokens as it finishes: read until they show (5 s)."""
        deadline = time.monotonic() + 5
        while (rise := self._external() - mark[1]) == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        return int(rise)


def on_a(
    a: Server, l2: Path, stored: list[str], probe: Probe | None = None
) -> tuple[list[float], list[list[Path]]]:
    """Replica A: each prefix cold, then the previous one again, which the new one pushed out
    of vLLM's KV cache: from LMCache's L1. The L1 times and each prefix's chunk files."""
    probe = probe or InProcess(a)
    model = list_models(a.url)[0]
    start = probe.mark()
    l1, files, whole, loaded = [], [], [], []
    for i, prompt in enumerate(stored):
        before = set(l2.glob("*.data"))
        whole.append((_ask(a, model, prompt).prompt_tokens or 0) // LMCACHE_CHUNK_TOKENS)
        deadline = time.monotonic() + 120
        while len(set(l2.glob("*.data")) - before) < whole[-1] and time.monotonic() < deadline:
            time.sleep(0.2)
        files.append(sorted(set(l2.glob("*.data")) - before))
        if i > 0:
            ask = probe.mark()
            l1.append(_ask(a, model, stored[i - 1]).ttft_ms)
            loaded.append(probe.loaded(ask))
    want = [n * LMCACHE_CHUNK_TOKENS for n in whole[:-1]]
    if probe.l2_reads(start, 0) != 0:
        raise _fail("replica A read from L2: its L1 did not hold the repeated prefixes")
    if any(got < 0.9 * w for got, w in zip(loaded, want, strict=True)):
        raise _fail(
            f"replica A's LMCache loaded {loaded} tokens of the repeated prefixes "
            f"(want about {want}: vLLM's KV cache held them)"
        )
    if [len(f) for f in files] != whole:
        raise _fail(f"replica A stored {[len(f) for f in files]} chunks (want {whole})")
    return l1, files


def on_b(
    b: Server,
    fresh: list[str],
    stored: list[str],
    files: list[list[Path]],
    probe: Probe | None = None,
) -> tuple[list[float], list[float], list[float]]:
    """Replica B: a prefix of its own, cold; then one A stored, from L2, its chunk files
    dropped from the page cache first. The cold and L2 times, and the decode steps."""
    probe = probe or InProcess(b)
    model = list_models(b.url)[0]
    start = probe.mark()
    cold, l2, decode = [], [], []
    for own, theirs, chunks in zip(fresh, stored, files, strict=False):
        cold.append(_ask(b, model, own).ttft_ms)
        drop_from_page_cache(chunks)
        hit = _ask(b, model, theirs)
        l2.append(hit.ttft_ms)
        decode.append(_decode_ms(hit))
    want = sum(len(f) for f in files[: len(fresh)])
    read = probe.l2_reads(start, want)
    if read != want:
        raise _fail(f"replica B read {read:g} chunks from L2 (want {want})")
    return cold, l2, decode


def line(tag: str, shape: str, f: Figures, requests: int, mode: str = "in-process") -> str:
    facts = KNOWN[tag]
    mp = mode == "mp"
    return (
        f"TTFT {tag}{' mp' if mp else ''} (LMCache {facts.lmcache}"
        f"{' multiprocess server' if mp else ''}, vLLM {facts.vllm} CPU, {shape} shape, random "
        f"weights, float32): prefix {f.tokens:,} tokens, median of {requests}: cold on B "
        f"{f.cold_ms:,.0f} ms, L2 hit on B {f.l2_ms:,.0f} ms, L1 hit on A {f.l1_ms:,.0f} ms; "
        f"cold/L2 {f.cold_ms / f.l2_ms:.1f}x; floor {f.floor_ms:,.0f} ms (plain read of "
        f"{f.read_mb:,.1f} MB of KV from the same disk, page cache dropped, {f.read_ms:,.0f} ms "
        f"+ one decode step {f.decode_ms:,.0f} ms)"
    )


def run_image(
    tag: str,
    shape: str,
    tokens: int,
    requests: int,
    work: Path,
    seed: int,
    mode: str = MODES[0],
    eager: bool = False,
) -> str:
    """The ``TTFT`` line of image ``tag`` in ``mode``; ``eager``: vLLM does not compile its
    model (the server layer's test of this tool: the same path, without a minute of compiling
    per replica)."""
    model = work / f"model-{shape}"
    if not model.exists():
        subprocess.run(
            [str(python_of(tag)), str(MAKE_MODEL), str(model), shape],
            check=True,
            capture_output=True,
            timeout=1800,
        )
    per_token = _kv_bytes_per_token(model)
    # vLLM's KV cache: one prefix and its answer. A's L1: three prefixes (the one it repeats,
    # the one that pushed it out of vLLM, the last touched) and a margin. B's: two (its cold
    # prefix, and the one it reads: LMCache brings L2 chunks into L1 first; with less room,
    # LMCache 0.3.15 waits for space that never comes and stops vLLM's engine).
    # LMCache's MP server evicts from its L1 in a loop once a second, a fifth of its chunks at a
    # time, while it is 80 % full or more (its --eviction-trigger-watermark): with room for three
    # prefixes above that, A read its repeated prefixes back from L2. In MP mode each sidecar's
    # L1 holds every prefix A stores below the watermark, so A evicts nothing.
    held = requests + 1 if mode == "mp" else 3
    usable = MP_EVICTION_WATERMARK if mode == "mp" else 1.0
    blocks = -(-(tokens + 2 * BLOCK) // BLOCK) + 2
    l1 = f"{held * tokens * per_token / 2**30 / usable + 0.2:.1f}"
    l1_b = f"{2 * tokens * per_token / 2**30 + 0.2:.1f}"
    sizing = Sizing(kv_blocks=blocks, max_model_len=blocks * BLOCK, eager=eager)
    config, objs = rendered_endpoints(tag)
    pod = endpoint_pod(objs, config.kvcache.endpoints[0], operator_of(config))
    claims, stable = work / f"claims-{tag}", default_hash_is_stable(tag)

    def launch(name: str, l1_gib: str) -> Probe:
        """The replica started, not yet ready."""
        container = container_of(pod, claims, work / f"pod-{tag}-{mode}-{name}")
        if mode == "mp":  # the sidecar's L1 is ``l1`` on A and B alike
            return MultiProcess(
                start_mp(tag, f"{tag}-{mode}-{name}", container, model, work, sizing, l1)
            )
        server = start(
            tag,
            f"{tag}-{name}",
            container,
            model,
            work,
            stable_hash=stable,
            sizing=replace(sizing, l1_gib=l1_gib),
        )
        return InProcess(server)

    # Compiling, one replica at a time: B finds A's compiled graphs, and A's L1 holds gigabytes.
    # Eager replicas compile only a few warm-up kernels, kept in the image's cache: B starts
    # beside A (both ready before A is timed) and gets no request until A is done.
    a = launch("a", l1)
    b: Probe | None = None
    try:
        b = launch("b", l1_b) if eager else None
        for probe in (a, b):
            if probe is not None:
                _wait(probe)
        (mount,) = a.server.container.claims
        l2 = a.server.container.mounts[mount]
        assert l2 is not None
        url = a.server.url
        model_id = list_models(url)[0]
        stored = _prefixes(url, model_id, tokens, requests + 1, seed)
        fresh = _prefixes(url, model_id, tokens, requests, seed + 1000)
        l1_ms, files = on_a(a.server, l2, stored, a)
        first = _tokens(url, model_id, stored[0])
    except BaseException:
        if b is not None:
            _stop(b)
        raise
    finally:
        _stop(a)
    b = b or launch("b", l1_b)
    try:
        _wait(b)
        cold, l2_ms, decode = on_b(b.server, fresh, stored, files, b)
    finally:
        _stop(b)
    timed = [_read(f) for f in files[:requests]]
    figures = Figures(
        tokens=first,
        cold_ms=statistics.median(cold),
        l2_ms=statistics.median(l2_ms),
        l1_ms=statistics.median(l1_ms),
        read_ms=statistics.median(ms for ms, _ in timed),
        read_mb=statistics.median(size for _, size in timed) / 1e6,
        decode_ms=statistics.median(decode),
    )
    return line(tag, shape, figures, requests, mode)


def _wait(probe: Probe) -> None:
    """Until ``probe``'s replica answers (its caller stops it, ready or not)."""
    if isinstance(probe, MultiProcess):
        wait_ready_mp([probe.replica])
    else:
        wait_ready([probe.server])


def _stop(probe: Probe) -> None:
    if isinstance(probe, MultiProcess):
        stop_mp([probe.replica])
    else:
        stop([probe.server])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", action="append", help="image tag (default: every installed)")
    parser.add_argument("--shape", default="qwen3-0.6b", choices=("qwen3-0.6b", "tiny"))
    parser.add_argument("--prefix-tokens", type=int, default=4096)
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--seed", type=int, default=4000)
    parser.add_argument("--work", type=Path, help="folder for the model and the replicas")
    parser.add_argument(
        "--mode", default=MODES[0], choices=MODES, help="LMCache inside vLLM, or its MP server"
    )
    args = parser.parse_args(argv)
    images = args.image or server_images() or [RECOMMENDED.rpartition(":")[2]]
    if args.mode == "mp":
        images = args.image or [t for t in images if t in MP_IMAGES] or [*MP_IMAGES]
        other = [t for t in images if t not in MP_IMAGES]
        if other:
            raise _fail(
                f"--image {other[0]} with --mode mp: MP mode runs with {', '.join(MP_IMAGES)} "
                "only (its LMCache's MP server and connector); name one of those"
            )
    missing = [t for t in images if not python_of(t).exists()]
    if missing:
        raise _fail(f"--image {missing[0]}: no .venv-server/{missing[0]}; run `make bench-ttft`")
    if args.prefix_tokens < 1 or args.requests < 1:
        raise _fail("--prefix-tokens and --requests take a positive number")
    if not mount_namespace_available():
        raise _fail("binding the claim at the rendered mount needs root and unshare")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-ttft-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        for tag in images:
            print(
                run_image(
                    tag, args.shape, args.prefix_tokens, args.requests, work, args.seed, args.mode
                ),
                flush=True,
            )
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
