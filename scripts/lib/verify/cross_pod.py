"""The cross-Pod L2 test of ``verify``: a prompt on one Pod, the same prompt on a Pod of another
node, and LMCache's logs of both say whether the second read the first one's KV from L2."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.kube import (
    Transport,
    container_port,
    model_container_index,
    pick_pods_on_two_nodes,
)
from scripts.lib.lmcache_logs import L2Verdict, l2_verdict, parse_log
from scripts.lib.openai_stream import StreamResult, list_models, stream_completion
from scripts.lib.prompts import make_prompt


@dataclass
class CrossPodResult:
    pod_a: str
    node_a: str
    pod_b: str
    node_b: str
    first: dict[str, Any]
    second: dict[str, Any]
    verdict: L2Verdict

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": asdict(self.verdict)}


def _result_dict(r: StreamResult) -> dict[str, Any]:
    return {"ttft_ms": round(r.ttft_ms, 2), "prompt_tokens": r.prompt_tokens, "text": r.text}


def cross_pod_l2(
    clients: Clients,
    pods: list[dict[str, Any]],
    transport: Transport,
    *,
    prompt_words: int = 1900,
    max_tokens: int = 4,
    seed: int | None = None,
    min_hit_ratio: float = 0.5,
    port: int | None = None,
    log_wait_s: float = 3.0,
) -> CrossPodResult | Check:
    pair = pick_pods_on_two_nodes(pods)
    if pair is None:
        return Check(
            "cross-Pod L2",
            "fail",
            "need two Ready Pods on different nodes",
            "scale the endpoint to 2 replicas with anti-affinity across GPU nodes",
        )
    pod_a, pod_b = pair
    idx = model_container_index(pod_a["spec"]) or 0
    container = pod_a["spec"]["containers"][idx]
    the_port = port or container_port(container)
    # A fresh prefix per run, unless --seed pins it: a prompt already in L2 would hit on Pod A.
    prompt = make_prompt(seed if seed is not None else time.time_ns() % (2**31), prompt_words)
    started = time.time()
    with transport.open(pod_a, the_port) as url_a:
        model = list_models(url_a)[0]
        first = stream_completion(url_a, model, prompt, max_tokens=max_tokens)
    with transport.open(pod_b, the_port) as url_b:
        second = stream_completion(url_b, model, prompt, max_tokens=max_tokens)
    time.sleep(log_wait_s)  # LMCache logs the store after the response
    since = max(1, math.ceil(time.time() - started) + 5)
    logs = []
    for pod in (pod_a, pod_b):
        # _preload_content=False: kubernetes 36 turns a text/plain body into "b'...'" otherwise.
        resp = clients.core().read_namespaced_pod_log(
            pod["metadata"]["name"],
            pod["metadata"]["namespace"],
            container=container["name"],
            since_seconds=since,
            _preload_content=False,
        )
        logs.append(parse_log(resp.data.decode("utf-8", "replace")))
    verdict = l2_verdict(
        logs[0], logs[1], second.prompt_tokens or first.prompt_tokens, min_hit_ratio
    )
    return CrossPodResult(
        pod_a["metadata"]["name"],
        pod_a["spec"].get("nodeName", ""),
        pod_b["metadata"]["name"],
        pod_b["spec"].get("nodeName", ""),
        _result_dict(first),
        _result_dict(second),
        verdict,
    )
