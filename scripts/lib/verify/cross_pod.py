"""The cross-Pod L2 test of ``verify``: a prompt on one Pod, the same prompt on a Pod of another
node, and LMCache's logs of both say whether the second read the first one's KV from L2. A Pod
whose LMCache started in its degraded mode is named before anything is sent; a miss is explained
from the two Pods (``cross_pod_cause``)."""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

from scripts.lib.bench_compare.scrape import probe_lmcache
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.kube import (
    Transport,
    container_port,
    model_container_index,
    pick_pods_on_two_nodes,
)
from scripts.lib.lmcache_logs import L2Verdict, LmcacheLog, l2_verdict, parse_log
from scripts.lib.openai_stream import StreamResult, list_models, stream_completion
from scripts.lib.prompts import make_prompt
from scripts.lib.verify.cross_pod_cause import cause, degraded


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
    # LMCache says once, when the container starts, that it gave up: the whole log, and
    # /metrics (a rotated log may have lost the line).
    with transport.open(pod_a, the_port) as url_a, transport.open(pod_b, the_port) as url_b:
        states = [_lmcache_state(url_a), _lmcache_state(url_b)]
        logs = _logs(clients, [pod_a, pod_b], container["name"], None)
        found = degraded([pod_a, pod_b], logs, states)
        if found is not None:
            return found
        # A fresh prefix per run, unless --seed pins it: a prompt already in L2 would hit on A.
        prompt = make_prompt(seed if seed is not None else time.time_ns() % (2**31), prompt_words)
        started = time.time()
        model = list_models(url_a)[0]
        first = stream_completion(url_a, model, prompt, max_tokens=max_tokens)
        second = stream_completion(url_b, model, prompt, max_tokens=max_tokens)
    time.sleep(log_wait_s)  # LMCache logs the store after the response
    since = max(1, math.ceil(time.time() - started) + 5)
    logs = _logs(clients, [pod_a, pod_b], container["name"], since)
    verdict = l2_verdict(
        logs[0], logs[1], second.prompt_tokens or first.prompt_tokens, min_hit_ratio
    )
    if not verdict.ok:
        why = cause((pod_a, pod_b), idx, logs[0], logs[1])
        verdict = replace(verdict, reason=f"{verdict.reason}; {why}")
    return CrossPodResult(
        pod_a["metadata"]["name"],
        pod_a["spec"].get("nodeName", ""),
        pod_b["metadata"]["name"],
        pod_b["spec"].get("nodeName", ""),
        _result_dict(first),
        _result_dict(second),
        verdict,
    )


def _logs(
    clients: Clients, pods: list[dict[str, Any]], container: str, since: int | None
) -> list[LmcacheLog]:
    """LMCache's lines in each Pod's log of its model container (the last ``since`` seconds)."""
    out = []
    for pod in pods:
        extra = {} if since is None else {"since_seconds": since}
        # _preload_content=False: kubernetes 36 turns a text/plain body into "b'...'" otherwise.
        resp = clients.core().read_namespaced_pod_log(
            pod["metadata"]["name"],
            pod["metadata"]["namespace"],
            container=container,
            _preload_content=False,
            **extra,
        )
        out.append(parse_log(resp.data.decode("utf-8", "replace")))
    return out


def _lmcache_state(url: str) -> str | None:
    """The Pod's LMCache state from its /metrics; None when the page cannot be read (its log
    still tells, and the requests below say whether the Pod serves)."""
    try:
        return probe_lmcache(url)
    except OSError:
        return None
