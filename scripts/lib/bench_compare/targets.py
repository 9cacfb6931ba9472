"""What ``bench compare`` measures: one target per endpoint, each its L2 backend and the base URLs
of its replicas (Pod A first, the Pod on another node second) and of their /metrics.

From config: each endpoint named (``bench.endpoints`` or ``--endpoint``) with its ``l2_backend``,
two Ready Pods on different nodes reached one by one (kubectl port-forward per Pod, or the Pod IP
with ``--direct``), as ``verify`` reaches them. Explicit: ``--target L2_BACKEND=URL[,URL]`` (a
router URL alone measures no cross-Pod reuse).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, cast

from infra.config import AppConfig
from infra.config.kvcache import L2_BACKENDS, EndpointConfig, L2Backend
from scripts.lib.clients import Clients
from scripts.lib.errors import CliError, Exit, OperationError
from scripts.lib.kube import (
    Transport,
    find_endpoint_deployment,
    pick_pods_on_two_nodes,
    pod_ready,
    pods_of,
)


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


def parse_target(text: str) -> BenchTarget:
    """``L2_BACKEND=URL[,URL]``: the endpoint's L2 backend and its replicas' base URLs (each
    also serves /metrics)."""
    backend, sep, rest = text.partition("=")
    urls = tuple(u.strip().rstrip("/") for u in rest.split(",") if u.strip())
    web = all(u.startswith(("http://", "https://")) for u in urls)
    if not sep or backend not in L2_BACKENDS or not urls or len(urls) > 2 or not web:
        raise CliError(
            f"--target {text}: want L2_BACKEND=URL[,URL] with L2_BACKEND one of "
            f"{', '.join(L2_BACKENDS)} (it says how L2 reads are counted) and one or two "
            "http(s)://host:port URLs, the replica on another node second",
            Exit.USAGE,
        )
    return BenchTarget(cast(L2Backend, backend), urls[0], urls, urls)


def endpoints_to_compare(cfg: AppConfig, names: list[str]) -> list[EndpointConfig]:
    """The endpoints named (``--endpoint``, else ``bench.endpoints``, else all), in order."""
    wanted = names or list(cfg.bench.endpoints)
    configured = {e.name: e for e in cfg.kvcache.endpoints}
    unknown = [n for n in wanted if n not in configured]
    if unknown:
        raise CliError(
            f"endpoint {', '.join(unknown)}: not in kvcache.endpoints (configured: "
            f"{', '.join(configured)}); fix --endpoint or bench.endpoints",
            Exit.USAGE,
        )
    return [configured[n] for n in wanted] if wanted else list(cfg.kvcache.endpoints)


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
        url = stack.enter_context(transport.open(pod, ref.container_port))
        urls.append(url)
        if ref.metrics_port == ref.container_port:
            metrics.append(url)
        else:
            metrics.append(stack.enter_context(transport.open(pod, ref.metrics_port)))
    return BenchTarget(ref.l2_backend, f"{ref.namespace}/{ref.name}", tuple(urls), tuple(metrics))
