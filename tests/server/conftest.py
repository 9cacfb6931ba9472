"""Fixtures of the server layer (``make test-server``): two real vLLM servers on 127.0.0.1, the
community CPU build of the vLLM inside the serving image, on a tiny model this session makes
(tests/server/make_model.py), each with PROMETHEUS_MULTIPROC_DIR set as the app sets it in the
model container. Started once per session, stopped when it ends (or when one fails to start)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SERVER_PYTHON = os.environ.get("HPKV_SERVER_PYTHON", "")
MODEL_NAME = "tiny"
START_TIMEOUT_S = 600.0  # two cold starts side by side on two cores (~70 s each alone)


@dataclass
class Server:
    url: str
    log: Path
    metrics_dir: Path
    process: subprocess.Popen[bytes]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny-model")
    here = Path(__file__).parent / "make_model.py"
    subprocess.run([SERVER_PYTHON, str(here), str(out)], check=True, capture_output=True,
                   timeout=300)  # fmt: skip
    return out


@pytest.fixture(scope="session")
def servers(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Server]]:
    root = tmp_path_factory.mktemp("servers")
    cache = root / "cache"
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB; vLLM's CPU default would take half the machine
        "VLLM_HOST_IP": "127.0.0.1", "VLLM_CACHE_ROOT": str(cache / "vllm"),
        "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"), "XDG_CACHE_HOME": str(cache),
        "VLLM_RPC_BASE_PATH": str(cache / "rpc"),
    }  # fmt: skip
    (cache / "rpc").mkdir(parents=True)
    started: list[Server] = []
    try:
        for i in range(2):
            port, metrics = _free_port(), root / f"metrics-{i}"
            metrics.mkdir()
            log = root / f"server-{i}.log"
            command = [str(Path(SERVER_PYTHON).parent / "vllm"), "serve", str(model_dir),
                       "--served-model-name", MODEL_NAME, "--host", "127.0.0.1",
                       "--port", str(port), "--max-model-len", "16384",
                       "--enable-prefix-caching"]  # fmt: skip
            process = subprocess.Popen(
                command, env={**env, "PROMETHEUS_MULTIPROC_DIR": str(metrics)},
                stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            started.append(Server(f"http://127.0.0.1:{port}", log, metrics, process))
        deadline = time.monotonic() + START_TIMEOUT_S
        for s in started:
            while not _ready(s.url):
                if s.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"vLLM at {s.url} did not start:\n"
                                       f"{s.log.read_text(errors='replace')[-3000:]}")  # fmt: skip
                time.sleep(1)
        yield started
    finally:
        for s in started:
            if s.process.poll() is None:
                os.killpg(s.process.pid, signal.SIGTERM)
        for s in started:
            try:
                s.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(s.process.pid, signal.SIGKILL)
