"""The server layer's replicas (``make test-server``): real vLLM CPU servers (the community CPU
build of each supported image's vLLM, with the image's own LMCache, in ``.venv-server/<tag>``)
started as an endpoint's model container runs: the Pod the operator renders and the L2 policy
admits (``tests/support/runtime.py``), its env and arguments as rendered, in a mount namespace
where the claim's subPath is bound at the rendered mountPath and the model folder at the
operator's model mount.

What differs from a GPU node, each for a reason of this machine:

- ``--port``: a free port per replica (they share one network); ``--host 127.0.0.1``.
- ``--dtype float32``: every vLLM CPU attention kernel accepts it, on CPUs with AMX or without
  (``tests/server/attention_kernel.py`` says why; ``test_attention_kernel.py`` holds it).
- ``--num-gpu-blocks-override``: a KV cache of a few MiB instead of ``VLLM_CPU_KVCACHE_SPACE``'s
  whole GiB, so that several replicas fit beside other work.
- ``--enforce-eager`` (``Sizing.eager``, all but ``make bench-ttft``'s own figures): vLLM CPU
  compiles its graphs for about a minute per image on two cores; LMCache's connector is called
  outside the compiled graphs (before the forward pass and after it), so what it stores, looks
  up and retrieves is the same either way.
- ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` with ``--enforce-eager``: vLLM CPU 0.23 otherwise moves
  the model's worker out of the engine-core process into a third one whose OpenMP threads it
  binds to every core, and two replicas starting together then took 66 s instead of 34 s. With
  it the worker runs inside the engine core, as vLLM runs a one-GPU engine (and vLLM CPU 0.16
  does anyway); the API server stays a process of its own.
- ``--kv-transfer-config`` names ``CpuLMCacheConnectorV1`` from ``tests.support.lmcache_cpu``
  (``PYTHONPATH`` reaches it): vLLM's LMCacheConnectorV1 with the CPU copy in the one place
  LMCache has none. The degraded replica keeps the rendered connector; a replica in LMCache's
  multiprocess mode names LMCache's own MP connector (``tests/support/lmcache_mp.py``).
- ``LMCACHE_MAX_LOCAL_CPU_SIZE``: 0.2 GiB (LMCache allocates its whole L1 at start).
- ``LMCACHE_PRE_CACHING_HASH_ALGORITHM=sha256_cbor`` only where LMCache's default chunk hash
  differs between two processes on this interpreter (LMCache 0.3.15 on Python 3.11: ``hash(None)``
  is an address before 3.12); the image's Python 3.12 gives every replica the same default keys.
- vLLM's and inductor's caches in one folder per image and kind of CPU beside the image's
  virtualenv (``.venv-server/<tag>/cache/<cpu_kind()>``), shared by every replica of every run:
  even eager, vLLM CPU's warm-up compiles a few kernels with inductor and a C++ compiler, 20 s of
  each start on two cores when the cache is cold. The kernels use the instructions the CPU has
  (AMX or not), so a folder moved to a machine of another kind starts a cache of its own.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.config import AppConfig, parse_config
from k8s.app import build_charts, manifests
from scripts.lib.bench_compare.scrape import scrape_metrics
from tests.support.config import SOURCE, with_overrides
from tests.support.runtime import ROOT, Container, in_container

IMAGES_ENV = "HPKV_SERVER_IMAGES"
CPU_CONNECTOR = {
    "kv_connector": "CpuLMCacheConnectorV1",
    "kv_connector_module_path": "tests.support.lmcache_cpu",
}
DTYPE = "float32"
KV_BLOCKS = 512  # of vLLM CPU's 128 tokens: 65,536 tokens, above --max-model-len
L1_GIB = "0.2"
START_TIMEOUT_S = 900.0


def rendered_endpoints(tag: str) -> tuple[AppConfig, list[dict[str, Any]]]:
    """dev with three endpoints of image ``tag`` in one namespace: two on one claim (two
    subPaths), the third without L2 (three GPU nodes to fit them)."""
    raw = with_overrides({"hyperpod.gpu_group.instance_count": 3})
    first = {**raw["kvcache"]["endpoints"][0], "image": f"lmcache/vllm-openai:{tag}", "replicas": 1}
    second = {**copy.deepcopy(first), "name": f"{first['name']}-b"}
    third = {**copy.deepcopy(second), "name": f"{first['name']}-c", "l2_backend": "none"}
    raw["kvcache"]["endpoints"] = [first, second, third]
    config = parse_config(raw, SOURCE, "dev")
    return config, [o for chart in manifests(build_charts(config)).values() for o in chart]


def server_images() -> list[str]:
    """The image tags whose vLLM CPU build `make test-server` installed."""
    return os.environ.get(IMAGES_ENV, "").split()


def python_of(tag: str) -> Path:
    return ROOT / ".venv-server" / tag / "bin" / "python"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@functools.cache
def cpu_kind() -> str:
    """A digest of this CPU's feature flags (``/proc/cpuinfo``): what a compiled kernel may use."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = " ".join(sorted(line.partition(":")[2].split()))
            return hashlib.sha256(flags.encode()).hexdigest()[:12]
    return "unknown"


@functools.cache
def default_hash_is_stable(tag: str) -> bool:
    """Whether two processes of this image's LMCache derive the same default chunk keys here
    (PYTHONHASHSEED=0, as the product sets it). Asked once per image and run: the two processes
    run side by side."""
    code = (
        "from lmcache.v1.config import LMCacheEngineConfig\n"
        "from lmcache.v1.token_database import ChunkedTokenDatabase\n"
        "db = ChunkedTokenDatabase(LMCacheEngineConfig.from_defaults(chunk_size=4))\n"
        "print(db._hash_tokens([1, 2, 3, 4]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "0", "LMCACHE_TRACK_USAGE": "false"}
    runs = [
        subprocess.Popen(
            [str(python_of(tag)), "-c", code],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    keys = []
    for run in runs:
        out, err = run.communicate(timeout=300)
        if run.returncode != 0:
            raise RuntimeError(f"LMCache of {tag} did not hash a chunk:\n{err[-3000:]}")
        keys.append(out.split()[-1])
    return keys[0] == keys[1]


@dataclass(frozen=True)
class Sizing:
    """What a replica may hold here: vLLM's KV blocks (of 128 tokens), LMCache's L1, and the
    context (``--max-model-len``; None: as rendered); and whether vLLM runs its model eagerly
    instead of compiling it (module docstring)."""

    kv_blocks: int = KV_BLOCKS
    l1_gib: str = L1_GIB
    max_model_len: int | None = None
    eager: bool = True


def server_args(
    rendered: list[str],
    port: int,
    connector: dict[str, Any] | None,
    sizing: Sizing = Sizing(),
) -> list[str]:
    """The rendered arguments with this machine's substitutions (module docstring)."""
    args = list(rendered)
    args[args.index("--port") + 1] = str(port)
    if sizing.max_model_len is not None:
        args[args.index("--max-model-len") + 1] = str(sizing.max_model_len)
    if connector is not None:
        at = args.index("--kv-transfer-config") + 1
        args[at] = json.dumps({**json.loads(args[at]), **connector})
    extra = ["--dtype", DTYPE, "--num-gpu-blocks-override", str(sizing.kv_blocks)]
    eager = ["--enforce-eager"] if sizing.eager else []
    return [*args, "--host", "127.0.0.1", *extra, *eager]


@dataclass
class Server:
    """One replica: its URL, its log (stdout and stderr) and the container it runs as."""

    name: str
    url: str
    log: Path
    container: Container
    process: subprocess.Popen[bytes]
    env: dict[str, str] = field(default_factory=dict)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False


def start(
    tag: str,
    name: str,
    container: Container,
    model: Path,
    work: Path,
    connector: dict[str, Any] | None = CPU_CONNECTOR,
    stable_hash: bool = True,
    sizing: Sizing = Sizing(),
) -> Server:
    """Start replica ``name`` of image ``tag`` as ``container`` runs, ``model``'s files in its
    model mount (the folder ``--model`` names); ``connector``'s keys over the rendered
    ``--kv-transfer-config``'s."""
    weights = container.mounts[container.args[container.args.index("--model") + 1]]
    assert weights is not None
    for f in model.iterdir():
        shutil.copy2(f, weights / f.name)
    cache = python_of(tag).parent.parent / "cache" / cpu_kind()
    cache.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {
        **container.env,
        "LMCACHE_MAX_LOCAL_CPU_SIZE": sizing.l1_gib,
        "LMCACHE_TRACK_USAGE": "false",
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "VLLM_HOST_IP": "127.0.0.1",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CACHE_ROOT": str(cache / "vllm"),
        "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
        "XDG_CACHE_HOME": str(cache),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    if not stable_hash:
        env["LMCACHE_PRE_CACHING_HASH_ALGORITHM"] = "sha256_cbor"
    if sizing.eager:
        env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    run = Container(env, container.args, container.mounts, container.claims, container.own)
    python = python_of(tag)
    command = [
        str(python),
        "-m",
        "vllm.entrypoints.cli.main",
        "serve",
        *server_args(container.args, port, connector, sizing),
    ]
    log = work / f"{name}.log"
    process = subprocess.Popen(
        in_container(run, command, keep=(cache,)),
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("LMCACHE_")},
    )
    return Server(name, f"http://127.0.0.1:{port}", log, run, process, env)


def wait_ready(servers: list[Server], timeout: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    for s in servers:
        while not s.ready():
            if s.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"vLLM {s.name} at {s.url} did not start:\n{s.log_text()[-4000:]}"
                )
            time.sleep(1)


def stop(servers: list[Server]) -> None:
    stop_processes([s.process for s in servers])


def stop_processes(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each one's session, then SIGKILL to those still up after a minute."""
    for p in processes:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in processes:
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=30)


@dataclass(frozen=True)
class Answer:
    """A greedy completion: its prompt's token count, the tokens it chose and the top
    log-probabilities at each step."""

    prompt_tokens: int
    tokens: list[str]
    top: list[dict[str, float]]


def same_answer(x: Answer, y: Answer) -> bool:
    """The same tokens, each step's top log-probabilities the same ones to 1e-4."""
    return x.tokens == y.tokens and all(
        a.keys() == b.keys() and all(math.isclose(a[k], b[k], abs_tol=1e-4) for k in a)
        for a, b in zip(x.top, y.top, strict=True)
    )


def complete(url: str, model: str, prompt: str, max_tokens: int = 8) -> Answer:
    body = json.dumps(
        {
            "model": model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": 0,
            "logprobs": 5,
        }
    ).encode()
    request = urllib.request.Request(
        f"{url}/v1/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=300) as resp:
        answer = json.load(resp)
    logprobs = answer["choices"][0]["logprobs"]
    return Answer(answer["usage"]["prompt_tokens"], logprobs["tokens"], logprobs["top_logprobs"])


def wait_for_files(folder: Path, count: int, timeout: float = 60.0) -> set[Path]:
    """The chunk files in ``folder`` once there are ``count`` (LMCache writes L2 after the
    response, in the background)."""
    deadline = time.monotonic() + timeout
    while True:
        found = set(folder.glob("*.data"))
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def settled(url: str, before: dict[str, float], timeout: float = 15.0) -> dict[str, float]:
    """The server's counters once LMCache has published what the last request did: its stats
    thread writes them every 10 s (``log_interval``, lmcache/v1/cache_engine.py). Whatever the
    counters read at ``timeout`` when none of LMCache's moved (a replica without LMCache)."""
    deadline = time.monotonic() + timeout
    while True:
        now = scrape_metrics(url)
        moved = any(now.get(k, 0.0) != before.get(k, 0.0) for k in now if k.startswith("lmcache:"))
        if moved or time.monotonic() > deadline:
            return now
        time.sleep(0.5)


def metrics_page(url: str) -> str:
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as resp:
        return str(resp.read().decode())
