"""What ``bench compare`` measures: one target per endpoint, each its L2 backend and the base URLs
of its replicas (Pod A first, the Pod on another node second) and of their /metrics.

From config: each endpoint named (``bench.endpoints`` or ``--endpoint``) with its ``l2_backend``,
two Ready Pods on different nodes reached one by one (kubectl port-forward per Pod, or the Pod IP
with ``--direct``), as ``verify`` reaches them. Explicit: ``--target L2_BACKEND=URL[,URL]`` (a
router URL alone measures no cross-Pod reuse).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, cast

from infra.config import AppConfig
from infra.config.kvcache import L2_BACKENDS, EndpointConfig, L2Backend
from scripts.lib.clients import Clients
from scripts.lib.errors import OperationError, bad_option
from scripts.lib.kube import (
    Transport,
    find_endpoint_deployment,
    pick_pods_on_two_nodes,
    pod_ready,
    pods_of,
)
from scripts.lib.progress import Show
from scripts.lib.scale_endpoint import scaled_out

# A new Pod downloads and loads the model before it is Ready: minutes on a GPU node.
JOIN_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class BenchTarget:
    l2_backend: L2Backend
    endpoint: str
    """``namespace/name``, or the URL given for an explicit target."""
    urls: tuple[str, ...]
    metrics_urls: tuple[str, ...]

    @property
    def pods(self) -> int:
        return len(self.urls)


def parse_target(text: str, option: str = "--target") -> BenchTarget:
    """``L2_BACKEND=URL[,URL]``: the endpoint's L2 backend and its replicas' base URLs (each
    also serves /metrics)."""
    backend, sep, rest = text.partition("=")
    urls = tuple(u.strip().rstrip("/") for u in rest.split(",") if u.strip())
    web = all(u.startswith(("http://", "https://")) for u in urls)
    if not sep or backend not in L2_BACKENDS or not urls or len(urls) > 2 or not web:
        raise bad_option(
            option,
            text,
            f"L2_BACKEND=URL[,URL] with L2_BACKEND one of "
            f"{', '.join(L2_BACKENDS)} (it says how L2 reads are counted) and one or two "
            "http(s)://host:port URLs, the replica on another node second",
            "write it like curvine=http://127.0.0.1:8001,http://127.0.0.1:8002",
        )
    return BenchTarget(cast(L2Backend, backend), urls[0], urls, urls)


def one_per_tier(targets: list[BenchTarget]) -> list[BenchTarget]:
    """The report compares tiers: each L2 backend once (``--target``)."""
    seen: set[str] = set()
    for t in targets:
        if t.l2_backend in seen:
            raise bad_option(
                "--target",
                f"{t.l2_backend}=...",
                "each L2 backend once (bench compare "
                "measures one endpoint per tier); this one is given twice",
                f"keep one --target {t.l2_backend}=...",
            )
        seen.add(t.l2_backend)
    return targets


def endpoints_to_compare(cfg: AppConfig, names: list[str]) -> list[EndpointConfig]:
    """The endpoints named (``--endpoint``, else ``bench.endpoints``, else all), in order: one per
    tier, since the report compares tiers."""
    wanted = names or list(cfg.bench.endpoints)
    configured = {e.name: e for e in cfg.kvcache.endpoints}
    unknown = [n for n in wanted if n not in configured]
    if unknown:
        raise bad_option(
            "--endpoint" if names else f"config/{cfg.environment}.yaml: bench.endpoints",
            ",".join(unknown),
            f"names in kvcache.endpoints ({', '.join(configured)})",
            "name a configured endpoint" if names else "fix bench.endpoints",
        )
    chosen = [configured[n] for n in dict.fromkeys(wanted)] if wanted else list(configured.values())
    by_tier: dict[str, list[str]] = {}
    for e in chosen:
        by_tier.setdefault(e.l2_backend, []).append(e.name)
    shared = {tier: found for tier, found in by_tier.items() if len(found) > 1}
    if shared:
        tier, found = next(iter(shared.items()))
        raise bad_option(
            "--endpoint" if names else f"config/{cfg.environment}.yaml: bench.endpoints",
            ",".join(found),
            f"one endpoint per L2 tier (bench compare compares tiers); these "
            f"are all on l2_backend {tier}",
            "name one of them with --endpoint (or in bench.endpoints)",
        )
    return chosen


def _replicas(clients: Clients, ref: EndpointConfig) -> list[dict[str, Any]]:
    """Two Ready Pods on different nodes, else the one Ready Pod there is."""
    dep = find_endpoint_deployment(clients, ref)
    pods = pods_of(clients, dep) if dep else []
    pair = pick_pods_on_two_nodes(pods)
    if pair is not None:
        return list(pair)
    ready = [p for p in pods if pod_ready(p)]
    if not ready:
        raise OperationError(
            f"endpoint {ref.namespace}/{ref.name}: no Ready Pod (kubectl -n {ref.namespace} "
            f"get pods -l app={ref.name})"
        )
    return ready[:1]


def open_endpoint(
    stack: contextlib.ExitStack,
    clients: Clients,
    cfg: AppConfig,
    ref: EndpointConfig,
    transport: Transport,
) -> BenchTarget:
    """The endpoint's replicas reached through ``transport`` for as long as ``stack`` lasts."""
    urls, metrics = [], []
    for pod in _replicas(clients, ref):
        # vLLM serves /metrics on the port it listens on (the config holds them equal).
        url = stack.enter_context(transport.open(pod, ref.container_port))
        urls.append(url)
        metrics.append(url)
    return BenchTarget(ref.l2_backend, f"{ref.namespace}/{ref.name}", tuple(urls), tuple(metrics))


def scale_out_joiner(
    clients: Clients, ref: EndpointConfig, transport: Transport, show: Show
) -> Callable[[], AbstractContextManager[str]]:
    """The endpoint scaled out by one (``scripts.lib.scale_endpoint``) while the new Pod is
    reached through ``transport``; restored afterwards."""

    @contextlib.contextmanager
    def join() -> Iterator[str]:
        with contextlib.ExitStack() as stack:
            pod = stack.enter_context(scaled_out(clients, ref, JOIN_TIMEOUT_S, show=show))
            yield stack.enter_context(transport.open(pod, ref.container_port))

    return join
