"""Kubernetes look-ups shared by verify, patch, bench and teardown (plain dicts, camelCase), and
the transports that turn a Pod into a base URL."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any, Protocol

from kubernetes.client.exceptions import ApiException

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from k8s.names import REMOTE_URL_ENV
from scripts.lib.clients import Clients
from scripts.lib.endpoints import IEC_GROUP, IEC_PLURAL, IEC_VERSION
from scripts.lib.errors import OperationError

MERGE_PATCH = "application/merge-patch+json"


def env_value(container: dict[str, Any], name: str) -> str | None:
    for item in container.get("env") or []:
        if item.get("name") == name:
            return item.get("value")
    return None


def model_container_index(pod_spec: dict[str, Any]) -> int | None:
    """The container that carries LMCACHE_REMOTE_URL, wherever it sits in the list."""
    for i, container in enumerate(pod_spec.get("containers") or []):
        if any(e.get("name") == REMOTE_URL_ENV for e in container.get("env") or []):
            return i
    return None


def read_endpoint(clients: Clients, ref: EndpointConfig) -> dict[str, Any] | None:
    try:
        return clients.custom().get_namespaced_custom_object(
            IEC_GROUP, IEC_VERSION, ref.namespace, IEC_PLURAL, ref.name
        )
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def find_endpoint_deployment(
    clients: Clients, ref: EndpointConfig, name: str | None = None
) -> dict[str, Any] | None:
    """The Deployment the operator rendered for the endpoint (status name, else by content)."""
    apps = clients.apps()
    if name is None:
        iec = read_endpoint(clients, ref) or {}
        name = ((iec.get("status") or {}).get("deploymentStatus") or {}).get("name")
    if name:
        try:
            return clients.to_dict(apps.read_namespaced_deployment(name, ref.namespace))
        except ApiException as exc:
            if exc.status != 404:
                raise
    listed = clients.to_dict(apps.list_namespaced_deployment(ref.namespace))
    for dep in listed.get("items") or []:
        spec = dep["spec"]["template"]["spec"]
        if dep["metadata"]["name"].startswith(ref.name) and model_container_index(spec) is not None:
            return dep
    return None


def selector_string(match_labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(match_labels.items()))


def gpu_nodes(clients: Clients, cfg: AppConfig) -> list[dict[str, Any]]:
    """The nodes of the GPU group: by its labels, else by its instance type."""
    core = clients.core()
    group = cfg.hyperpod.gpu_group
    if group.labels:
        nodes = clients.to_dict(core.list_node(label_selector=selector_string(group.labels)))
        if nodes.get("items"):
            return list(nodes["items"])
    nodes = clients.to_dict(
        core.list_node(label_selector=f"node.kubernetes.io/instance-type={group.instance_type}")
    )
    return list(nodes.get("items") or [])


def pods_of(clients: Clients, deployment: dict[str, Any]) -> list[dict[str, Any]]:
    labels = deployment["spec"]["selector"].get("matchLabels") or {}
    ns = deployment["metadata"]["namespace"]
    pods = clients.to_dict(
        clients.core().list_namespaced_pod(ns, label_selector=selector_string(labels))
    )
    return list(pods.get("items") or [])


def pod_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pick_pods_on_two_nodes(
    pods: list[dict[str, Any]],
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    ready = [p for p in pods if pod_ready(p)]
    for a in ready:
        for b in ready:
            if a["spec"].get("nodeName") != b["spec"].get("nodeName"):
                return a, b
    return None


class Transport(Protocol):
    """Turns a Pod into a base URL the client can reach (port-forward, Pod IP, or a test)."""

    def open(self, pod: dict[str, Any], port: int) -> contextlib.AbstractContextManager[str]: ...


class DirectPodIp:
    """For hosts inside the VPC: talk to the Pod IP directly."""

    @contextlib.contextmanager
    def open(self, pod: dict[str, Any], port: int) -> Iterator[str]:
        ip = (pod.get("status") or {}).get("podIP")
        if not ip:
            raise OperationError(f"Pod {pod['metadata']['name']} has no IP yet")
        yield f"http://{ip}:{port}"


class KubectlPortForward:
    """``kubectl port-forward`` to a free local port (works from a workstation)."""

    def __init__(self, kubectl: str = "kubectl", context: str | None = None) -> None:
        self.kubectl = kubectl
        self.context = context

    @contextlib.contextmanager
    def open(self, pod: dict[str, Any], port: int) -> Iterator[str]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            local = s.getsockname()[1]
        cmd = [
            self.kubectl,
            "port-forward",
            "-n",
            pod["metadata"]["namespace"],
            f"pod/{pod['metadata']['name']}",
            f"{local}:{port}",
        ]
        if self.context:
            cmd[1:1] = ["--context", self.context]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                with (
                    contextlib.suppress(OSError),
                    socket.create_connection(("127.0.0.1", local), timeout=1),
                ):
                    break
                if proc.poll() is not None:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    raise OperationError(f"kubectl port-forward exited: {err.strip()}")
                time.sleep(0.2)
            yield f"http://127.0.0.1:{local}"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def container_port(container: dict[str, Any], default: int = 8000) -> int:
    for p in container.get("ports") or []:
        if p.get("containerPort"):
            return int(p["containerPort"])
    return default
