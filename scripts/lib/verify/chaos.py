"""``verify --chaos``: break the cache on purpose and check that it heals. Disruptive: it deletes
an endpoint Pod and (on Curvine) one Curvine worker Pod.

- ``endpoint Pod replaced``: a prefix stored through one Pod, that Pod deleted, its replacement
  (from the Deployment) Ready, the prefix replayed on the new Pod: it must be read from L2 (the
  new Pod's GPU and CPU caches start empty), at least ``min_hit`` of its whole chunks.
- ``endpoint scaled out``: a prefix stored through a running Pod, the endpoint scaled out by
  one (``scripts.lib.scale_endpoint``: its replicas, or under autoscaling its floor), the new
  Pod's first request is the prefix and must be read from L2 the same way; the endpoint is
  scaled back afterwards.
- ``requests while a Curvine worker is lost``: one worker Pod deleted, requests keep succeeding
  (LMCache recomputes what it cannot read: ``kv_load_failure_policy`` recompute).
- ``L2 after the Curvine worker returns``: once the DaemonSet's replacement is Ready, a fresh
  prefix stored on one endpoint Pod is read from L2 on another again (retried until
  ``timeout_s``: a worker re-registers with the master after it starts).
- ``L2 kept across the Curvine worker's loss``: a prefix stored just before the worker was
  deleted is read from L2 on another endpoint Pod once it is back. Curvine v0.4.1 drops the cached
  copy of a lost worker's files only for cache-mode files, those with a UFS source
  (``curvine-master/src/master/meta/fs_dir.rs`` ``invalidate_lost_cache_files``); what LMCache
  writes through the FUSE mount has none, so its blocks keep their normal recovery path. The
  replacement worker finds them on the node's NVMe (hostPath, ``format_worker = false``) under
  the same worker id (kept in the data directory,
  ``crates/adapters/curvine-storage-local/src/version.rs``) and reports them to the master, so
  nothing stored before the loss has to be recomputed after it.

The L2 hit is read from the reading Pod's LMCache counters (``infra.metrics.tiers.l2_hit_share``),
as ``bench compare`` reads it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from infra.metrics.tiers import l2_hit_share
from k8s.names import WORKER_WL
from scripts.lib.bench_compare.scrape import increase, scrape_metrics
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.errors import OperationError
from scripts.lib.kube import Transport, find_endpoint_deployment, pod_ready, pods_of
from scripts.lib.openai_stream import StreamError, list_models, stream_completion
from scripts.lib.progress import Show, wait_for
from scripts.lib.prompts import make_prompt, seed_for
from scripts.lib.scale_endpoint import scaled_out

POD_REPLACED = "chaos: endpoint Pod replaced"
SCALED_OUT = "chaos: endpoint scaled out"
DURING_LOSS = "chaos: requests while a Curvine worker is lost"
L2_BACK = "chaos: L2 after the Curvine worker returns"
L2_KEPT = "chaos: L2 kept across the Curvine worker's loss"
CURVINE_STAGES = (DURING_LOSS, L2_BACK, L2_KEPT)
STAGES = (POD_REPLACED, SCALED_OUT, *CURVINE_STAGES)
# Each stage's prompts come from a seed of its own: a prefix another stage sent sits in some Pod's
# GPU or CPU cache, where a read would pass for one from L2.
SEED_PARTS = {POD_REPLACED: 30, DURING_LOSS: 31, L2_BACK: 32, SCALED_OUT: 33, L2_KEPT: 34}


@dataclass(frozen=True)
class ChaosOptions:
    prompt_words: int = 2500
    max_tokens: int = 4
    seed: int | None = None
    min_hit: float = 0.99
    """Share of the prompt's whole chunks the reading Pod must read from L2."""
    timeout_s: float = 900.0
    """For each wait: the replacement Pod, the worker, L2 serving again."""
    interval_s: float = 10.0
    settle_s: float = 2.0
    """Between storing a prefix and reading it elsewhere (LMCache stores after the response)."""
    flush_s: float = 11.0
    """Before reading counters after a request (LMCache publishes every 10 s)."""
    requests_during_loss: int = 3


def _names(pods: list[dict[str, Any]]) -> set[str]:
    return {p["metadata"]["name"] for p in pods}


class _Endpoint:
    """The endpoint's Pods, reached one by one through ``transport``."""

    def __init__(
        self,
        clients: Clients,
        cfg: AppConfig,
        ref: EndpointConfig,
        transport: Transport,
        opts: ChaosOptions,
    ) -> None:
        self.clients, self.ref, self.transport, self.opts = clients, ref, transport, opts
        self.l2_backend = ref.l2_backend
        self.bpt = cfg.observability.kv_bytes_per_token
        self.model = ""

    def ready_pods(self) -> list[dict[str, Any]]:
        dep = find_endpoint_deployment(self.clients, self.ref)
        return [p for p in (pods_of(self.clients, dep) if dep else []) if pod_ready(p)]

    @contextlib.contextmanager
    def urls(self, pod: dict[str, Any]) -> Iterator[tuple[str, str]]:
        """The Pod's model URL and its /metrics base URL."""
        ref = self.ref
        with contextlib.ExitStack() as stack:
            # vLLM serves /metrics on the port it listens on (the config holds them equal).
            url = stack.enter_context(self.transport.open(pod, ref.container_port))
            yield url, url

    def send(self, pod: dict[str, Any], prompt: str) -> None:
        with self.urls(pod) as (url, _):
            self.model = self.model or list_models(url)[0]
            stream_completion(url, self.model, prompt, max_tokens=self.opts.max_tokens)

    def l2_hit(self, pod: dict[str, Any], prompt: str) -> float | None:
        """Send ``prompt`` to ``pod``; the share of its whole chunks the Pod read from L2."""
        with self.urls(pod) as (url, metrics):
            self.model = self.model or list_models(url)[0]
            before = scrape_metrics(metrics)
            got = stream_completion(url, self.model, prompt, max_tokens=self.opts.max_tokens)
            time.sleep(self.opts.flush_s)
            deltas = increase(before, scrape_metrics(metrics))
        tokens = got.prompt_tokens or len(prompt.split())
        return l2_hit_share(deltas, tokens, self.l2_backend, self.bpt)


def _share(v: float | None) -> str:
    return "no LMCache counters on /metrics" if v is None else f"{100 * v:.1f} % from L2"


def pod_replaced(ep: _Endpoint, seed: int, show: Show) -> Check:
    opts = ep.opts
    before = ep.ready_pods()
    if not before:
        return Check(POD_REPLACED, "fail", "no Ready endpoint Pod", "run verify without --chaos")
    victim = before[0]
    name, ns = victim["metadata"]["name"], victim["metadata"]["namespace"]
    prompt = make_prompt(seed_for(seed, SEED_PARTS[POD_REPLACED]), opts.prompt_words)
    ep.send(victim, prompt)
    time.sleep(opts.settle_s)
    ep.clients.core().delete_namespaced_pod(name, ns)
    known = _names(before)

    def replaced() -> tuple[bool, str]:
        new = [p for p in ep.ready_pods() if p["metadata"]["name"] not in known]
        return bool(new), f"{len(new)} new Ready Pod(s)"

    waited = wait_for(f"a Pod to replace {name}", replaced, opts.timeout_s, opts.interval_s, show)
    new_pod = next(p for p in ep.ready_pods() if p["metadata"]["name"] not in known)
    hit = ep.l2_hit(new_pod, prompt)
    ok = hit is not None and hit >= opts.min_hit
    detail = (
        f"deleted {name}; {new_pod['metadata']['name']} Ready after {waited:.0f}s read the "
        f"prefix {_share(hit)} (need {100 * opts.min_hit:.0f} %)"
    )
    fix = "" if ok else "check the new Pod's L2 mount and PYTHONHASHSEED (verify without --chaos)"
    return Check(POD_REPLACED, "pass" if ok else "fail", detail, fix)


def scaled_out_reads_l2(ep: _Endpoint, seed: int, show: Show) -> Check:
    opts = ep.opts
    running = ep.ready_pods()
    if not running:
        return Check(SCALED_OUT, "fail", "no Ready endpoint Pod", "run verify without --chaos")
    prompt = make_prompt(seed_for(seed, SEED_PARTS[SCALED_OUT]), opts.prompt_words)
    ep.send(running[0], prompt)
    time.sleep(opts.settle_s)
    with scaled_out(ep.clients, ep.ref, opts.timeout_s, opts.interval_s, show) as new_pod:
        hit = ep.l2_hit(new_pod, prompt)
    ok = hit is not None and hit >= opts.min_hit
    detail = (
        f"{new_pod['metadata']['name']} joined {len(running)} Ready Pod(s) and read the "
        f"prefix {_share(hit)} on its first request (need {100 * opts.min_hit:.0f} %); "
        "scaled back"
    )
    fix = "" if ok else "check the new Pod's L2 mount and PYTHONHASHSEED (verify without --chaos)"
    return Check(SCALED_OUT, "pass" if ok else "fail", detail, fix)


def _workers(clients: Clients, namespace: str) -> list[dict[str, Any]]:
    selector = ",".join(f"{k}={v}" for k, v in WORKER_WL.selector.items())
    listed = clients.core().list_namespaced_pod(namespace, label_selector=selector)
    return list(clients.to_dict(listed).get("items") or [])


def worker_lost(ep: _Endpoint, cfg: AppConfig, seed: int, show: Show) -> list[Check]:
    """Delete one Curvine worker; requests must keep succeeding; L2 must serve once it is back."""
    opts, ns = ep.opts, cfg.kvcache.curvine.namespace
    workers = [w for w in _workers(ep.clients, ns) if pod_ready(w)]
    pods = ep.ready_pods()
    if not workers or len(pods) < 2:
        why = "no Ready Curvine worker" if not workers else "fewer than two Ready endpoint Pods"
        return [Check(s, "fail", why, "run verify without --chaos") for s in CURVINE_STAGES]
    victim = workers[0]["metadata"]["name"]
    kept = make_prompt(seed_for(seed, SEED_PARTS[L2_KEPT]), opts.prompt_words)
    ep.send(pods[0], kept)
    time.sleep(opts.settle_s)
    ep.clients.core().delete_namespaced_pod(victim, ns)

    def stopped() -> tuple[bool, str]:  # a deleted Pod serves through its grace period
        still = [w for w in _workers(ep.clients, ns) if w["metadata"]["name"] == victim]
        return not any(pod_ready(w) for w in still), "terminating" if still else "gone"

    stop_s = wait_for(f"{victim} to stop", stopped, opts.timeout_s, opts.interval_s, show)
    failures = []
    for i in range(opts.requests_during_loss):
        try:
            prompt = make_prompt(seed_for(seed, SEED_PARTS[DURING_LOSS], i), opts.prompt_words)
            ep.send(pods[i % len(pods)], prompt)
        except (StreamError, OSError) as exc:
            failures.append(f"request {i + 1}: {type(exc).__name__}: {exc}")
    outcome = "; ".join(failures) or f"{opts.requests_during_loss} requests succeeded"
    during = Check(
        DURING_LOSS,
        "fail" if failures else "pass",
        f"deleted {victim} (stopped after {stop_s:.0f}s); {outcome}",
        "set kv_load_failure_policy recompute" if failures else "",
    )
    want = len(workers)
    gone = {victim}

    def back() -> tuple[bool, str]:
        ready = [w for w in _workers(ep.clients, ns) if pod_ready(w)]
        return len(ready) >= want and not gone & _names(ready), f"{len(ready)}/{want} Ready"

    attempts: list[float | None] = []

    def serving() -> tuple[bool, str]:
        prompt = make_prompt(seed_for(seed, SEED_PARTS[L2_BACK], len(attempts)), opts.prompt_words)
        ep.send(pods[0], prompt)
        time.sleep(opts.settle_s)
        attempts.append(ep.l2_hit(pods[1], prompt))
        hit = attempts[-1]
        return hit is not None and hit >= opts.min_hit, _share(hit)

    try:
        w_s = wait_for(
            f"Curvine workers after deleting {victim}", back, opts.timeout_s, opts.interval_s, show
        )
        l2_s = wait_for(
            "L2 hits on another endpoint Pod", serving, opts.timeout_s, opts.interval_s, show
        )
    except OperationError as exc:
        return [
            during,
            Check(
                L2_BACK,
                "fail",
                str(exc),
                "check the Curvine master's worker list and the FUSE mount on the endpoint's nodes",
            ),
            Check(L2_KEPT, "skip", "L2 did not serve again"),
        ]
    back_check = Check(
        L2_BACK,
        "pass",
        f"workers {want}/{want} Ready after {w_s:.0f}s; L2 "
        f"{_share(attempts[-1])} after {l2_s:.0f}s more, "
        f"{len(attempts)} attempt(s)",
    )
    # One read only: a miss is recomputed and stored again, so a second would hit what it wrote.
    hit = ep.l2_hit(pods[1], kept)
    ok = hit is not None and hit >= opts.min_hit
    kept_check = Check(
        L2_KEPT,
        "pass" if ok else "fail",
        f"the prefix stored before deleting {victim} read {_share(hit)} "
        f"(need {100 * opts.min_hit:.0f} %)",
        ""
        if ok
        else "check that the worker keeps its NVMe directory "
        "(hostPath, format_worker false) and its worker id",
    )
    return [during, back_check, kept_check]


def run_chaos(
    clients: Clients,
    cfg: AppConfig,
    ref: EndpointConfig,
    transport: Transport,
    opts: ChaosOptions,
    show: Show = True,
    guard: Callable[[], str | None] = lambda: None,
) -> list[Check]:
    """The chaos stages, each a row. ``guard`` returns why not to start (a failed verify)."""
    ep = _Endpoint(clients, cfg, ref, transport, opts)
    why = guard()
    if why is None and ep.l2_backend == "none":
        why = f"kvcache.endpoints {ref.name}: l2_backend is none: nothing to recover from L2"
    if why is not None:
        return [Check(s, "skip", why) for s in STAGES]
    seed = opts.seed if opts.seed is not None else time.time_ns() % (2**31)
    checks = _stage(POD_REPLACED, lambda: [pod_replaced(ep, seed, show)])
    checks += _stage(SCALED_OUT, lambda: [scaled_out_reads_l2(ep, seed, show)])
    if ep.l2_backend != "curvine":
        reason = f"l2_backend is {ep.l2_backend}: no Curvine worker to lose"
        return checks + [Check(s, "skip", reason) for s in CURVINE_STAGES]
    return checks + _stage(DURING_LOSS, lambda: worker_lost(ep, cfg, seed, show))


def _stage(stage: str, body: Callable[[], list[Check]]) -> list[Check]:
    try:
        return body()
    except (ApiException, OSError, StreamError, OperationError) as exc:
        return [Check(stage, "fail", f"{type(exc).__name__}: {exc}", "see the Pods' events")]
