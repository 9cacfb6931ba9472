"""Point an endpoint's L2 at Curvine without the admission policy (the manual sequence).

``compute_patch`` is a pure function from the Deployment (a dict as the API server returns it) to
one RFC 6902 JSON Patch that gives the Pod template (its container carrying
``LMCACHE_REMOTE_URL``, like the rule) exactly what the Kyverno rule of the endpoint gives each
Pod (``k8s.l2_pod.l2_settings``, which the rule is rendered from: the fs:// URL, the serde, the
hash seed, the PVC volume and its mount with the endpoint's subPath). It is empty
when the template already has them, which makes the command idempotent. ``run_patch`` wraps it in
pause operator -> scale endpoint to 0 -> patch -> scale back -> wait Ready, and restores the
operator's replica count in a ``finally`` block whatever step fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from infra.config.kvcache import EndpointConfig
from infra.config.operator_versions import OPERATOR_DEPLOYMENT, OPERATOR_NAMESPACE
from k8s.l2_pod import L2Settings
from scripts.lib.clients import Clients
from scripts.lib.errors import OperationError
from scripts.lib.kube import MERGE_PATCH, find_endpoint_deployment, model_container_index
from scripts.lib.progress import Show, wait_for

JsonPatch = list[dict[str, Any]]


def _upsert(
    ops: JsonPatch, path: str, items: list[dict[str, Any]] | None, want: dict[str, Any], key: str
) -> list[dict[str, Any]]:
    """Append to ``ops`` what makes the list at ``path`` hold ``want``, matched on ``key`` (the
    merge key Kyverno uses): added when absent, replaced when it differs, kept when equal.
    A differing entry is replaced whole, where Kyverno's merge would keep stale keys (readOnly on
    a mount, valueFrom on an env entry) that break L2. Returns the list as it is after those ops,
    for the next entry of the same list."""
    if items is None:
        ops.append({"op": "add", "path": path, "value": [want]})
        return [want]
    at = next((i for i, item in enumerate(items) if item.get(key) == want[key]), None)
    if at is None:
        ops.append({"op": "add", "path": f"{path}/-", "value": want})
        return [*items, want]
    if items[at] == want:
        return items
    # The test op makes the API server refuse the patch if the list moved meanwhile.
    ops.append({"op": "test", "path": f"{path}/{at}/{key}", "value": want[key]})
    ops.append({"op": "replace", "path": f"{path}/{at}", "value": want})
    return [*items[:at], want, *items[at + 1 :]]


def compute_patch(deployment: dict[str, Any], settings: L2Settings) -> JsonPatch:
    """JSON Patch ops that give ``deployment``'s Pods what the Kyverno rule gives them; [] when
    they already have it."""
    pod = deployment["spec"]["template"]["spec"]
    containers = pod.get("containers") or []
    index = model_container_index(pod)
    name = deployment["metadata"]["name"]
    if index is None:
        raise OperationError(
            f"Deployment {name}: no container carries {settings.marker} (the operator injects it "
            "into the model container); is enableL2Cache set on the InferenceEndpointConfig, and "
            "is this the endpoint's Deployment?"
        )
    container = containers[index]
    base = f"/spec/template/spec/containers/{index}"
    ops: JsonPatch = []
    env = container.get("env")
    for want in settings.env:
        env = _upsert(ops, f"{base}/env", env, want, "name")
    mounts = container.get("volumeMounts")
    for want in settings.mounts:
        mounts = _upsert(ops, f"{base}/volumeMounts", mounts, want, "mountPath")
    volumes = pod.get("volumes")
    for want in settings.volumes:
        volumes = _upsert(ops, "/spec/template/spec/volumes", volumes, want, "name")
    return ops


@dataclass
class PatchOutcome:
    deployment: str
    changed: bool
    ops: JsonPatch = field(default_factory=list)
    steps: list[str] = field(default_factory=list)


def _scale(clients: Clients, name: str, namespace: str, replicas: int) -> None:
    clients.apps().patch_namespaced_deployment_scale(
        name, namespace, {"spec": {"replicas": replicas}}, _content_type=MERGE_PATCH
    )


def _replicas(clients: Clients, name: str, namespace: str) -> int:
    scale = clients.apps().read_namespaced_deployment_scale(name, namespace)
    return int(scale.spec.replicas or 0)


def run_patch(
    clients: Clients,
    ref: EndpointConfig,
    settings: L2Settings,
    deployment_name: str | None = None,
    timeout_s: float = 900.0,
    interval_s: float = 5.0,
    show_progress: Show = True,
) -> PatchOutcome:
    dep = find_endpoint_deployment(clients, ref, deployment_name)
    if dep is None:
        raise OperationError(
            f"no Deployment found for endpoint {ref.namespace}/{ref.name}; pass --deployment"
        )
    name, ns = dep["metadata"]["name"], dep["metadata"]["namespace"]
    outcome = PatchOutcome(name, changed=False)
    if not compute_patch(dep, settings):
        outcome.steps.append("already patched: nothing to do")
        return outcome
    apps = clients.apps()
    operator_replicas = _replicas(clients, OPERATOR_DEPLOYMENT, OPERATOR_NAMESPACE)
    _scale(clients, OPERATOR_DEPLOYMENT, OPERATOR_NAMESPACE, 0)
    outcome.steps.append(f"paused operator (was {operator_replicas} replicas)")
    try:
        replicas = int(dep["spec"].get("replicas") or 1)
        _scale(clients, name, ns, 0)
        outcome.steps.append(f"scaled {name} to 0")

        def drained() -> tuple[bool, str]:
            status = apps.read_namespaced_deployment(name, ns).status
            left = status.replicas or 0
            return not left, f"{left} Pods left"

        wait_for(f"{name} to scale to 0", drained, timeout_s, interval_s, show_progress)
        # Re-read: the operator may have re-rendered the Deployment just before it was paused.
        fresh = clients.to_dict(apps.read_namespaced_deployment(name, ns))
        ops = compute_patch(fresh, settings)
        if ops:
            apps.patch_namespaced_deployment(name, ns, ops)  # a list body is sent as JSON Patch
            outcome.changed = True
            outcome.ops = ops
            outcome.steps.append(f"applied {len(ops)} JSON Patch ops in one request")
        _scale(clients, name, ns, replicas)
        outcome.steps.append(f"scaled {name} back to {replicas}")

        def ready() -> tuple[bool, str]:
            s = apps.read_namespaced_deployment(name, ns).status
            ready_n, updated = s.ready_replicas or 0, s.updated_replicas or 0
            done = ready_n >= replicas and updated >= replicas
            return done, f"{updated}/{replicas} updated, {ready_n}/{replicas} Ready"

        wait_for(
            f"{name} to be Ready ({replicas} replicas)", ready, timeout_s, interval_s, show_progress
        )
        outcome.steps.append(f"{name} Ready")
    finally:
        _scale(clients, OPERATOR_DEPLOYMENT, OPERATOR_NAMESPACE, operator_replicas)
        outcome.steps.append(f"restored operator to {operator_replicas} replicas")
    return outcome
