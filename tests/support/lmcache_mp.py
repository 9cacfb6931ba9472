"""One replica of an endpoint as its Pod would run with LMCache's multiprocess (MP) mode: the
rendered model container (``tests/support/vllm_server.py``) beside an ``lmcache server`` sidecar.
The product does not render this Pod (docs/architecture.md, "LMCache's multiprocess mode"); what
differs from the rendered one, and why:

- the model container's ``--kv-transfer-config`` names LMCache's own MP connector module and the
  sidecar's port (every key of the rendered value is named again, so it is replaced, not mixed).
  vLLM's built-in copy of that connector records CUDA events; LMCache's runs on vLLM's CPU
  platform as shipped, so no CPU copy of ours is needed. Its rendered ``LMCACHE_*`` env stays:
  the MP connector reads none of it.
- the sidecar, a container of its own (a mount namespace of its own, as Kubernetes gives each
  container): the claim's subPath at the rendered L2 mountPath, which its ``fs`` L2 adapter
  writes to and reads from; its chunk size the rendered ``LMCACHE_CHUNK_SIZE`` (LMCache's
  in-process default when the Pod does not set it), so both modes key the same chunk lengths.
  The two share this machine's ``/dev/shm``, as a Pod's containers share the Pod's: the sidecar's
  L1 is a shared-memory pool there that vLLM's worker copies KV in and out of.
- the sidecar's L1: ``L1_GIB`` (the rendered L1 is tens of GiB; the layer's replicas hold MiB).
- both listen on 127.0.0.1 at free ports (the replicas share one network here).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.metrics.tiers import LMCACHE_CHUNK_TOKENS
from scripts.lib.bench_compare.scrape import parse_counters
from tests.support.runtime import Container, in_container
from tests.support.vllm_server import (
    START_TIMEOUT_S,
    Server,
    Sizing,
    free_port,
    python_of,
    start,
    stop,
    stop_processes,
    wait_ready,
)

MP_CONNECTOR_MODULE = "lmcache.integration.vllm.lmcache_mp_connector"
MP_IMAGES = ("v0.4.7",)
"""The images whose LMCache has an MP server and connector that run on vLLM's CPU platform."""
L1_GIB = "0.2"
# The sidecar's own counters (its HTTP port's /metrics), summed over their labels.
LOOKUP_TOKENS = "lmcache_mp_lookup_requested_tokens_total"
LOOKUP_HITS = "lmcache_mp_lookup_hit_tokens_total"
L2_PREFETCH_HITS = "lmcache_mp_l2_prefetch_hit_chunks_total"
L2_STORED = "lmcache_mp_l2_store_completed_objects_chunks_total"
L1_READS = "lmcache_mp_l1_read_chunks_total"
# vLLM's own view of what its connector loaded (its API port's /metrics).
EXTERNAL_HITS = "vllm:external_prefix_cache_hits_total"
MP_COUNTERS = (LOOKUP_TOKENS, LOOKUP_HITS, L2_PREFETCH_HITS, L2_STORED, L1_READS)
# ``lmcache server`` is LMCache's console script; its shebang may name another folder's copy of
# the virtualenv, so the same entry point runs through the interpreter.
LMCACHE_CLI = "import sys; from lmcache.cli.main import main; sys.argv[0] = 'lmcache'; main()"


def mp_connector(port: int) -> dict[str, Any]:
    """The model container's ``--kv-transfer-config`` in MP mode: LMCache's connector, talking
    to the sidecar at ``port``; a KV load that fails is recomputed, as rendered."""
    return {
        "kv_connector": "LMCacheMPConnector",
        "kv_role": "kv_both",
        "kv_load_failure_policy": "recompute",
        "kv_connector_module_path": MP_CONNECTOR_MODULE,
        "kv_connector_extra_config": {
            "lmcache.mp.host": "tcp://127.0.0.1",
            "lmcache.mp.port": port,
        },
    }


def l2_mount(container: Container) -> str:
    """The rendered mountPath of the L2 claim."""
    (mount,) = container.claims
    return mount


def chunk_size(container: Container) -> int:
    return int(container.env.get("LMCACHE_CHUNK_SIZE", LMCACHE_CHUNK_TOKENS))


def sidecar_of(container: Container) -> Container:
    """The sidecar container: the model container's L2 mount (the claim's subPath at its
    mountPath) and nothing else of it."""
    mount = l2_mount(container)
    env = {
        "LMCACHE_TRACK_USAGE": "false",
        "LMCACHE_DISABLE_BANNER": "1",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    own = {"/" + mount.strip("/").split("/")[0]}
    return Container(env, [], {mount: container.mounts[mount]}, {mount}, own)


def sidecar_args(container: Container, port: int, http_port: int, l1_gib: str) -> list[str]:
    """``lmcache server``'s arguments for the model container ``container``."""
    options = {
        "--host": "127.0.0.1",
        "--port": str(port),
        "--http-host": "127.0.0.1",
        "--http-port": str(http_port),
        "--chunk-size": str(chunk_size(container)),
        "--l1-size-gb": l1_gib,
        "--eviction-policy": "LRU",
        "--l2-adapter": json.dumps({"type": "fs", "base_path": l2_mount(container)}),
    }
    return ["server", *(part for option in options.items() for part in option)]


@dataclass
class Sidecar:
    """The ``lmcache server`` of one replica: its HTTP URL (/metrics, /healthcheck), its log."""

    url: str
    log: Path
    process: subprocess.Popen[bytes]

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/healthcheck", timeout=2) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def counters(self) -> dict[str, float]:
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=30) as resp:
            return parse_counters(resp.read().decode("utf-8", "replace"), MP_COUNTERS)


@dataclass
class MpReplica:
    """vLLM (the model container) and its sidecar."""

    server: Server
    sidecar: Sidecar

    @property
    def l2(self) -> Path:
        """The host folder behind the L2 mount (the claim's subPath)."""
        folder = self.server.container.mounts[l2_mount(self.server.container)]
        assert folder is not None
        return folder


def start_sidecar(
    tag: str, name: str, container: Container, work: Path, l1_gib: str = L1_GIB
) -> tuple[Sidecar, int]:
    """The sidecar of replica ``name`` and the port vLLM's connector reaches it at."""
    port, http_port = free_port(), free_port()
    command = [str(python_of(tag)), "-c", LMCACHE_CLI]
    command += sidecar_args(container, port, http_port, l1_gib)
    log = work / f"{name}-lmcache.log"
    process = subprocess.Popen(
        in_container(sidecar_of(container), command),
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("LMCACHE_")},
    )
    return Sidecar(f"http://127.0.0.1:{http_port}", log, process), port


def start_mp(
    tag: str,
    name: str,
    container: Container,
    model: Path,
    work: Path,
    sizing: Sizing | None = None,
    l1_gib: str = L1_GIB,
) -> MpReplica:
    """Replica ``name`` of image ``tag`` in MP mode: the sidecar first (vLLM's connector waits
    for it at start), then the model container with the MP connector."""
    sidecar, port = start_sidecar(tag, name, container, work, l1_gib)
    try:
        connector = mp_connector(port)
        server = start(tag, name, container, model, work, connector, sizing=sizing or Sizing())
    except BaseException:
        stop_processes([sidecar.process])
        raise
    return MpReplica(server, sidecar)


def wait_ready_mp(replicas: list[MpReplica], timeout: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    for r in replicas:
        while not r.sidecar.ready():
            if r.sidecar.process.poll() is not None or time.monotonic() > deadline:
                tail = r.sidecar.log_text()[-4000:]
                raise RuntimeError(f"lmcache server of {r.server.name} did not start:\n{tail}")
            time.sleep(1)
    wait_ready([r.server for r in replicas], max(1.0, deadline - time.monotonic()))


def stop_mp(replicas: list[MpReplica]) -> None:
    """vLLM first (its connector would otherwise wait on a server gone), then the sidecars."""
    try:
        stop([r.server for r in replicas])
    finally:
        stop_processes([r.sidecar.process for r in replicas])


def settled_mp(
    sidecar: Sidecar, before: dict[str, float], want: dict[str, float], timeout: float = 30.0
) -> dict[str, float]:
    """The sidecar's counters' increase once each of ``want`` rose by at least its value (the
    server counts L2 stores and prefetches in the background), or whatever they rose by at
    ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        now = sidecar.counters()
        rise = {k: now.get(k, 0.0) - before.get(k, 0.0) for k in {*now, *before}}
        if all(rise.get(k, 0.0) >= v for k, v in want.items()) or time.monotonic() > deadline:
            return rise
        time.sleep(0.3)
