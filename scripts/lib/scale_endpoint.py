"""Add one replica to an endpoint for a while, then put it back: what ``bench compare``'s
scale-out workload and ``verify --chaos`` use to watch a replica join.

The endpoint grows by one through its InferenceEndpointConfig, the object the operator
reconciles the Deployment from: ``spec.replicas`` + 1, or, when the endpoint autoscales
(``spec.autoScalingSpec``: the operator's KEDA ScaledObject owns the replica count),
``minReplicaCount`` raised to one above the replicas it runs now, so the scaler itself adds the
Pod. An endpoint already at ``maxReplicaCount`` is refused: raising the ceiling would change
what the scaler may do long after this run.

The value changed is recorded in an annotation on the object in the same JSON patch; the
restore (on the way out, also after an error or Ctrl-C) writes it back and drops the
annotation. A run killed before it could restore leaves the annotation, and the next run
restores from it first, so the command is safe to re-run.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from infra.config.kvcache import EndpointConfig
from scripts.lib.clients import Clients
from scripts.lib.endpoints import IEC_GROUP, IEC_PLURAL, IEC_VERSION
from scripts.lib.errors import OperationError
from scripts.lib.kube import find_endpoint_deployment, pod_ready, pods_of, read_endpoint
from scripts.lib.progress import Show, wait_for

RESTORE = "hyperpod-kvcache/scale-out-restore"
"""Annotation: ``{"path": <JSON pointer>, "value": <int>}`` to write back."""


@dataclass(frozen=True)
class Scaling:
    """One replica more: which field of the IEC, from what to what."""

    path: str
    before: int
    after: int

    @property
    def what(self) -> str:
        field = self.path.rsplit("/", 1)[-1]
        return f"{field} {self.before} -> {self.after}"


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _annotate_ops(iec: dict[str, Any], value: str | None) -> list[dict[str, Any]]:
    """Set (``value``) or drop (None) the restore annotation, with what exists already: an
    ``add`` of the whole map would replace the operator's own annotations."""
    annotations = iec["metadata"].get("annotations")
    if value is None:
        if annotations and RESTORE in annotations:
            return [{"op": "remove", "path": f"/metadata/annotations/{_escape(RESTORE)}"}]
        return []
    if annotations is None:
        return [{"op": "add", "path": "/metadata/annotations", "value": {RESTORE: value}}]
    return [{"op": "add", "path": f"/metadata/annotations/{_escape(RESTORE)}", "value": value}]


def _patch(clients: Clients, ref: EndpointConfig, ops: list[dict[str, Any]]) -> dict[str, Any]:
    # A JSON patch: its ``test`` makes it fail rather than overwrite a value someone changed
    # in between (the client would send a list as a merge patch unless told).
    patched: dict[str, Any] = clients.custom().patch_namespaced_custom_object(
        IEC_GROUP,
        IEC_VERSION,
        ref.namespace,
        IEC_PLURAL,
        ref.name,
        ops,
        _content_type="application/json-patch+json",
    )
    return patched


def _read(clients: Clients, ref: EndpointConfig) -> dict[str, Any]:
    iec = read_endpoint(clients, ref)
    if iec is None:
        raise OperationError(f"endpoint {ref.namespace}/{ref.name}: no InferenceEndpointConfig")
    return iec


def _value(iec: dict[str, Any], path: str) -> int | None:
    node: Any = iec
    for key in path.strip("/").split("/"):
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, int) else None


def restore_leftover(clients: Clients, ref: EndpointConfig) -> Scaling | None:
    """Write back what an interrupted run recorded; None when there was nothing to restore."""
    iec = _read(clients, ref)
    recorded = (iec["metadata"].get("annotations") or {}).get(RESTORE)
    if recorded is None:
        return None
    saved = json.loads(recorded)
    path, value = saved["path"], int(saved["value"])
    now = _value(iec, path)
    op = "replace" if now is not None else "add"
    _patch(clients, ref, [{"op": op, "path": path, "value": value}, *_annotate_ops(iec, None)])
    return Scaling(path, now if now is not None else value, value)


def plan_scale_out(iec: dict[str, Any], running: int) -> Scaling:
    """The field to raise for one replica more than the ``running`` ones."""
    spec = iec.get("spec") or {}
    auto = spec.get("autoScalingSpec")
    if auto is not None:
        # The CRD's defaults (1 and 5) when the fields are absent.
        low, high = int(auto.get("minReplicaCount", 1)), int(auto.get("maxReplicaCount", 5))
        want = max(low, running) + 1
        if want > high:
            raise OperationError(
                f"endpoint {iec['metadata']['name']}: {running} replicas of at most "
                f"maxReplicaCount {high}; a replica cannot join (raise max_replicas to measure "
                "a scale-out)"
            )
        return Scaling("/spec/autoScalingSpec/minReplicaCount", low, want)
    replicas = int(spec.get("replicas", 1))
    return Scaling("/spec/replicas", replicas, max(replicas, running) + 1)


def _ready_pods(clients: Clients, ref: EndpointConfig) -> list[dict[str, Any]]:
    dep = find_endpoint_deployment(clients, ref)
    return [p for p in (pods_of(clients, dep) if dep else []) if pod_ready(p)]


@contextlib.contextmanager
def scaled_out(
    clients: Clients,
    ref: EndpointConfig,
    timeout_s: float,
    interval_s: float = 10.0,
    show: Show = True,
) -> Iterator[dict[str, Any]]:
    """The endpoint one replica larger for the duration: yields the new Ready Pod (one not
    among those Ready before); restores the field on the way out, whatever happened."""
    restore_leftover(clients, ref)
    iec = _read(clients, ref)
    before = _ready_pods(clients, ref)
    known = {p["metadata"]["name"] for p in before}
    step = plan_scale_out(iec, len(before))
    record = json.dumps({"path": step.path, "value": step.before})
    current = _value(iec, step.path)
    change: list[dict[str, Any]] = (
        [
            {"op": "test", "path": step.path, "value": current},
            {"op": "replace", "path": step.path, "value": step.after},
        ]
        if current is not None
        else [{"op": "add", "path": step.path, "value": step.after}]
    )
    _patch(clients, ref, [*change, *_annotate_ops(iec, record)])
    try:

        def joined() -> tuple[bool, str]:
            new = [p for p in _ready_pods(clients, ref) if p["metadata"]["name"] not in known]
            return bool(new), f"{len(new)} new Ready Pod(s) ({step.what})"

        what = f"a new Pod of {ref.namespace}/{ref.name}"
        wait_for(what, joined, timeout_s, interval_s, show)
        yield next(p for p in _ready_pods(clients, ref) if p["metadata"]["name"] not in known)
    finally:
        restore_leftover(clients, ref)
