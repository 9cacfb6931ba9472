"""The judges against two real vLLM servers (tests/server/conftest.py): the CLI's streaming client,
`bench compare` (sweep, multi-round chat, cross-Pod) and verify's cross-Pod row end to end; and the
fake model server the rest of the suite uses, held to what the real one sends and exposes, so the
two cannot drift.

What these servers are not: LMCache's vLLM connector does not run on vLLM's CPU platform (LMCache
0.3.15 knows only CUDA and XPU devices: ``get_vllm_torch_dev`` raises "Unsupported device platform
for LMCache engine", the engine comes up degraded, and its first request fails), so no L1 or L2
tier is served here: the endpoints are what ``l2_backend: none`` with vLLM's own prefix cache is.
"""

from __future__ import annotations

import csv
import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from infra.metrics.tiers import COUNTERS, L0_HITS, QUERIED, tier_shares
from scripts.cli import app
from scripts.lib.bench_compare.scrape import increase, parse_counters, scrape_metrics
from scripts.lib.clients import Clients
from scripts.lib.openai_stream import list_models, stream_completion
from scripts.lib.prompts import make_prompt
from scripts.lib.verify.cross_pod import CrossPodResult, cross_pod_l2
from tests.doubles.fake_kube import FakeKube
from tests.doubles.fake_tiers import Tiers, TierSpec
from tests.doubles.fake_vllm import FakeVllm
from tests.support.runtime import ask, runtime_images
from tests.support.verify import MapTransport

BPT = 147456
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\} (\S+)$", re.M)


def _metrics(url: str) -> str:
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as resp:
        return resp.read().decode()


def _families(text: str) -> tuple[dict[str, str], dict[str, set[str]]]:
    """TYPE of each family, and the label names of each sample name."""
    types = dict(re.findall(r"^# TYPE (\S+) (\w+)$", text, re.M))
    labels = {name: set(re.findall(r'(\w+)="', body)) for name, body, _ in SAMPLE.findall(text)}
    return types, labels


def _raw_stream(url: str, model: str, prompt: str) -> list[Any]:
    body = json.dumps(
        {
            "model": model,
            "prompt": prompt,
            "max_tokens": 3,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    ).encode()
    request = urllib.request.Request(f"{url}/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=120) as resp:
        events = [line[6:] for line in resp.read().decode().splitlines()
                  if line.startswith("data: ")]  # fmt: skip
    return [e if e == "[DONE]" else json.loads(e) for e in events]


def test_the_fake_streams_as_vllm_does(servers: list[Any]) -> None:
    """The chunks the CLI's client reads: text chunks of object text_completion, then one chunk
    with usage and no choices, then [DONE]."""
    real_url = servers[0].url
    model = list_models(real_url)[0]
    real = _raw_stream(real_url, model, make_prompt(1, 50))
    with FakeVllm() as fake:
        mocked = _raw_stream(fake.url, "m", make_prompt(1, 50))
    for events in (real, mocked):
        *chunks, usage, done = events
        assert done == "[DONE]"
        assert usage["choices"] == [] and set(usage["usage"]) >= {
            "prompt_tokens", "completion_tokens", "total_tokens"}  # fmt: skip
        assert all(c["object"] == "text_completion" and c["choices"][0]["text"] is not None
                   for c in chunks)  # fmt: skip
    assert real[-2]["usage"]["completion_tokens"] == 3


def test_the_fake_exposes_vllms_counters_as_vllm_does(servers: list[Any]) -> None:
    """Names, types and labels of the counters the judges read, as vLLM 0.16 exposes them with
    PROMETHEUS_MULTIPROC_DIR set (as the app sets it)."""
    real_types, real_labels = _families(_metrics(servers[0].url))
    fake_types, fake_labels = _families(Tiers(TierSpec(tier="none")).metrics_text("tiny"))
    for name in [c for c in COUNTERS if c.startswith("vllm:")]:
        family = next(f for f in (name, name.removesuffix("_total")) if f in real_types)
        assert fake_types.get(family) == real_types[family] == "counter", name
        assert fake_labels[name] == real_labels[name], name


def test_a_repeated_prompt_is_served_from_vllms_own_prefix_cache(servers: list[Any]) -> None:
    url = servers[1].url
    model = list_models(url)[0]
    prompt = make_prompt(7, 600)
    before = scrape_metrics(url)
    first = stream_completion(url, model, prompt, max_tokens=2)
    second = stream_completion(url, model, prompt, max_tokens=2)
    deltas = increase(before, scrape_metrics(url))
    assert first.prompt_tokens == second.prompt_tokens
    assert deltas[QUERIED] == 2 * first.prompt_tokens
    assert 0 < deltas[L0_HITS] < first.prompt_tokens  # whole blocks of the second request
    assert tier_shares(deltas, "none", BPT).l0 == pytest.approx(deltas[L0_HITS] / deltas[QUERIED])


def test_bench_compare_runs_every_workload_against_real_servers(
    servers: list[Any], tmp_path: Path
) -> None:
    out = tmp_path / "report"
    argv = ["bench", "compare", "--target", f"none={servers[0].url},{servers[1].url}",
            "--out", str(out), "--lengths", "300,600", "--repeats", "1", "--users", "2",
            "--rounds", "2", "--concurrency", "2", "--max-tokens", "2", "--settle-seconds", "0",
            "--counters-wait-seconds", "0", "--json"]  # fmt: skip
    result = CliRunner().invoke(app, argv)
    assert result.exit_code in (0, 1), result.output  # 1: a verdict missed, not an error
    summary = json.loads(result.stdout)
    assert {Path(f).name for f in summary["files"]} >= {"report.md", "summary.csv",
                                                        "results.json"}  # fmt: skip
    with (out / "requests.csv").open() as f:
        requests = list(csv.DictReader(f))
    assert {r["workload"] for r in requests} == {"sweep", "chat", "cross_pod"}
    assert all(float(r["ttft_ms"]) > 0 and int(r["prompt_tokens"]) > 0 for r in requests)
    data = json.loads((out / "results.json").read_text())
    # The chat's rounds repeat the conversation: vLLM's own prefix cache serves part of it.
    chat = next(c for c in data["counters"] if c["workload"] == "chat")["deltas"]
    assert chat[L0_HITS] > 0 and chat[QUERIED] > chat[L0_HITS]


class _LiveLogs(dict[str, str]):
    """Each Pod's log as its server's log file reads when the API is asked."""

    def __init__(self, files: dict[str, Path]) -> None:
        super().__init__()
        self.files = files

    def get(self, key: str, default: Any = None) -> Any:
        path = self.files.get(key)
        return default if path is None else path.read_text(errors="replace")


def test_verifys_cross_pod_row_reads_the_real_servers(servers: list[Any]) -> None:
    """Two Pods on two nodes reached through their URLs, their logs the servers' own: without
    LMCache nothing is read from L2, and the row says so from the real answers."""
    pods = []
    for i in range(len(servers)):
        name = f"tiny-{i}"
        pods.append({"metadata": {"name": name, "namespace": "models"},
                     "spec": {"nodeName": f"node-{i}", "containers": [
                         {"name": "inference", "ports": [{"containerPort": 8000}],
                          "env": [{"name": "LMCACHE_REMOTE_URL", "value": "x"}]}]},
                     "status": {"phase": "Running", "conditions": [
                         {"type": "Ready", "status": "True"}]}})  # fmt: skip
    names = [p["metadata"]["name"] for p in pods]
    transport = MapTransport(dict(zip(names, [s.url for s in servers], strict=True)))
    with FakeKube() as kube:
        kube.logs = _LiveLogs({f"default/{n}": s.log for n, s in zip(names, servers, strict=True)})
        clients = Clients("us-west-2", kube_factory=kube.api_client)
        outcome = cross_pod_l2(clients, pods, transport, prompt_words=400, seed=3,
                               log_wait_s=0)  # fmt: skip
    assert isinstance(outcome, CrossPodResult)
    assert outcome.first["prompt_tokens"] == outcome.second["prompt_tokens"] > 0
    assert not outcome.verdict.ok and outcome.verdict.hit_ratio == 0


@pytest.mark.skipif(not runtime_images(), reason="needs the runtime layer's LMCache")
def test_vllm_serves_the_counters_lmcache_writes_into_its_multiprocess_directory(
    servers: list[Any], tmp_path: Path
) -> None:
    """LMCache runs in vLLM's engine process and /metrics is served by its API server: they meet
    in the multiprocess directory. Here the real LMCache writes its counters there and the real
    vLLM serves them."""
    server = servers[1]
    env = {"PROMETHEUS_MULTIPROC_DIR": str(server.metrics_dir), "LMCACHE_MAX_LOCAL_CPU_SIZE": "0.5",
           "LMCACHE_REMOTE_URL": f"fs://localhost:0{tmp_path}/l2/",
           "LMCACHE_REMOTE_SERDE": "naive"}  # fmt: skip
    model = {"name": "tiny", "layers": 2, "kv_heads": 1, "head_dim": 32}
    answer = ask(
        runtime_images()[0],
        "lmcache_replica",
        {"env": env, "role": "store", "tokens": 600, "seed": 1, "model": model},
    )
    assert "error" not in answer
    served = parse_counters(_metrics(server.url), ["lmcache:num_remote_write_requests_total"])
    assert served == {"lmcache:num_remote_write_requests_total": 2.0}
