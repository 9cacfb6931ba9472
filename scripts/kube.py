"""Kubernetes look-ups shared by verify, patch, bench and teardown (plain dicts, camelCase), and
``wait_for``, the one helper every long wait of the CLI goes through."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, TextIO

from kubernetes.client.exceptions import ApiException
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from infra.config.kvcache import EndpointConfig
from k8s.names import REMOTE_URL_ENV
from scripts.clients import Clients
from scripts.common import OperationError
from scripts.endpoints import IEC_GROUP, IEC_PLURAL, IEC_VERSION

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


def fmt_duration(seconds: float) -> str:
    """``42s``, ``5m07s``, ``1h02m03s``."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


@dataclass
class Clock:
    """Time as waits see it; tests pass a fake one so nothing really sleeps."""

    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep


@dataclass
class Reporter:
    """Where a long wait reports and how: a rich progress line on a terminal, otherwise plain
    timestamped lines (one every ``every_s`` seconds, and one whenever the state changes).
    ``stream`` None means sys.stderr at the time of writing, so stdout keeps the JSON object."""

    stream: TextIO | None = None
    clock: Clock = field(default_factory=Clock)
    tty: bool | None = None  # None: ask the stream
    every_s: float = 30.0
    enabled: bool = True

    def out(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stderr

    def is_tty(self) -> bool:
        if self.tty is not None:
            return self.tty
        isatty = getattr(self.out(), "isatty", None)
        return bool(isatty and isatty())

    def stamp(self) -> str:
        return datetime.fromtimestamp(self.clock.wall(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def line(self, text: str) -> None:
        """One plain progress line (also on a terminal: phases, not the live bar)."""
        if self.enabled:
            print(f"{self.stamp()} {text}", file=self.out(), flush=True)


Show = bool | Reporter
Poll = Callable[[], bool | tuple[bool, str]]


def reporter(show: Show) -> Reporter:
    return show if isinstance(show, Reporter) else Reporter(enabled=show)


def _poll(check: Poll) -> tuple[bool, str]:
    got = check()
    if isinstance(got, tuple):
        return got
    return bool(got), ""


def wait_for(
    what: str,
    check: Poll,
    timeout_s: float,
    interval_s: float = 5.0,
    show: Show = True,
) -> float:
    """Poll ``check`` until it is true and return the seconds waited; raise on timeout.

    ``check`` returns a bool, or ``(done, state)`` where ``state`` says where things stand (a
    stack's status and latest event, replicas ready). Progress goes to ``show`` (a Reporter, or
    True for stderr): a rich line with the elapsed time and state on a terminal, else
    timestamped lines at a steady pace."""
    rep = reporter(show)
    clock = rep.clock
    start = clock.monotonic()
    deadline = start + timeout_s
    state = ""
    with contextlib.ExitStack() as stack:
        progress: Progress | None = None
        task = None
        if rep.enabled and rep.is_tty():
            progress = stack.enter_context(
                Progress(
                    SpinnerColumn(),
                    TextColumn("{task.description}"),
                    BarColumn(),
                    TimeElapsedColumn(),
                    console=Console(file=rep.out(), force_terminal=True),
                    get_time=clock.monotonic,
                    transient=True,
                )
            )
            task = progress.add_task(what, total=timeout_s)
        else:
            rep.line(f"waiting for {what} (up to {fmt_duration(timeout_s)})")
        last_line, last_state = start, ""
        while True:
            done, state = _poll(check)
            now = clock.monotonic()
            elapsed = now - start
            if done:
                text = f"{what}: done after {fmt_duration(elapsed)}"
                if progress is not None:
                    progress.console.print(text, markup=False, highlight=False)
                else:
                    rep.line(text)
                return elapsed
            if now >= deadline:
                last = f" (last state: {state})" if state else ""
                raise OperationError(
                    f"timed out after {fmt_duration(timeout_s)} waiting for {what}{last}"
                )
            if progress is not None and task is not None:
                label = f"{what}: {state}" if state else what
                progress.update(task, completed=elapsed, description=label)
            elif state != last_state or now - last_line >= rep.every_s:
                rep.line(f"{what}: {state or 'waiting'} ({fmt_duration(elapsed)} elapsed)")
                last_line = now
            last_state = state
            clock.sleep(min(interval_s, max(deadline - now, 0.01)))


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
