"""``verify``'s scaler row: for an endpoint that autoscales (its InferenceEndpointConfig has
``spec.autoScalingSpec``), is KEDA scaling it, and on what signal?

The operator turns the spec into a KEDA ScaledObject (keda.sh/v1alpha1), and KEDA into an HPA,
``status.hpaName`` (``keda-hpa-<scaledobject>``, autoscaling/v2). The ScaledObject's name,
``<endpoint>-scaled-object`` in the operator's walkthrough, is not in any source we can read (the
operator's is not public), so it is found by what it is: the one the endpoint owns, else the one
that scales the endpoint's Deployment. Read from them:

- the ScaledObject's conditions: ``Ready`` (the triggers parse and the scaler answers; False
  when AMP refuses the query, for one) and ``Active`` (a trigger is above its activation value);
- the HPA's current metric against its target (an ``External`` metric per trigger: KEDA's
  ``s<index>-<trigger>``), and desired against current replicas.

The row passes when the ScaledObject is Ready and the HPA computes replicas from the metric;
an endpoint without ``autoScalingSpec`` skips it.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from infra.config.kvcache import EndpointConfig
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.kube import find_endpoint_deployment, read_endpoint

KEDA_GROUP, KEDA_VERSION, SCALED_OBJECTS = "keda.sh", "v1alpha1", "scaledobjects"
SUFFIXES = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3}


def hpa_name(scaled_object: str) -> str:
    return f"keda-hpa-{scaled_object}"


def quantity(text: str | int | float | None) -> float | None:
    """A Kubernetes quantity as a number (``2500m`` is 2.5); None when absent."""
    if text is None or isinstance(text, int | float):
        return None if text is None else float(text)
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * SUFFIXES[suffix]
    return float(text)


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return {"type": kind, "status": "Unknown"}


def _number(block: dict[str, Any]) -> tuple[float | None, str]:
    """The value of a MetricTarget / MetricValueStatus, and whether per replica or in all."""
    if "averageValue" in block:
        return quantity(block["averageValue"]), "per replica"
    return quantity(block.get("value")), "in all"


def signals(hpa: dict[str, Any]) -> list[str]:
    """Each External metric: its name, current value and target, as the HPA last computed."""
    targets = {}
    for m in (hpa.get("spec") or {}).get("metrics") or []:
        if m.get("type") == "External":
            targets[m["external"]["metric"]["name"]] = _number(m["external"]["target"])
    out = []
    for m in (hpa.get("status") or {}).get("currentMetrics") or []:
        if m.get("type") != "External":
            continue
        name = m["external"]["metric"]["name"]
        now, unit = _number(m["external"]["current"])
        target, _ = targets.get(name, (None, ""))
        shown = "-" if now is None else f"{now:g}"
        out.append(f"{name} {shown} {unit} (target {'-' if target is None else f'{target:g}'})")
    return out


def _owned_by(so: dict[str, Any], ref: EndpointConfig) -> bool:
    owners = (so.get("metadata") or {}).get("ownerReferences") or []
    return any(
        o.get("kind") == "InferenceEndpointConfig" and o.get("name") == ref.name for o in owners
    )


def _scales(so: dict[str, Any], deployment: str) -> bool:
    target = (so.get("spec") or {}).get("scaleTargetRef") or {}
    # KEDA's default target kind is a Deployment.
    return target.get("kind", "Deployment") == "Deployment" and target.get("name") == deployment


def find_scaled_object(clients: Clients, ref: EndpointConfig) -> dict[str, Any] | None:
    """The endpoint's ScaledObject, whatever the operator names it: owned by its
    InferenceEndpointConfig, else scaling its Deployment (one that does neither does not scale
    the endpoint, whatever its name)."""
    try:
        listed = clients.custom().list_namespaced_custom_object(
            KEDA_GROUP, KEDA_VERSION, ref.namespace, SCALED_OBJECTS
        )
    except ApiException as exc:
        if exc.status == 404:  # no KEDA CRD
            return None
        raise
    items: list[dict[str, Any]] = list(listed.get("items") or [])
    dep = find_endpoint_deployment(clients, ref)
    deployment = dep["metadata"]["name"] if dep else ref.name
    for found in (
        [so for so in items if _owned_by(so, ref)],
        [so for so in items if _scales(so, deployment)],
    ):
        if found:
            return found[0]
    return None


def read_scaler(
    clients: Clients, ref: EndpointConfig
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None]:
    """(autoScalingSpec, ScaledObject, HPA): None for what is not there."""
    iec = read_endpoint(clients, ref) or {}
    spec = (iec.get("spec") or {}).get("autoScalingSpec")
    if spec is None:
        return None, None, None
    so = find_scaled_object(clients, ref)
    if so is None:
        return spec, None, None
    name = so["metadata"]["name"]
    hpa_of = (so.get("status") or {}).get("hpaName") or hpa_name(name)
    try:
        api = k8s.AutoscalingV2Api(clients.api_client)
        hpa = clients.to_dict(api.read_namespaced_horizontal_pod_autoscaler(hpa_of, ref.namespace))
    except ApiException as exc:
        if exc.status == 404:
            return spec, so, None
        raise
    return spec, so, hpa


def check_scaler(clients: Clients, ref: EndpointConfig) -> Check:
    stage = f"scaler {ref.namespace}/{ref.name}"
    spec, so, hpa = read_scaler(clients, ref)
    if spec is None:
        return Check(stage, "skip", "no autoScalingSpec: a fixed replica count")
    if so is None:
        return Check(
            stage,
            "fail",
            f"no ScaledObject in {ref.namespace} owned by the endpoint "
            "or scaling its Deployment, for the autoScalingSpec",
            "is KEDA installed (addons.inference_operator.keda_enabled)? "
            f"kubectl -n {ref.namespace} get scaledobjects; "
            "kubectl -n hyperpod-inference-system logs deploy/keda-operator",
        )
    so_name = so["metadata"]["name"]
    describe = f"kubectl -n {ref.namespace} describe scaledobject {so_name}"
    ready, active = _condition(so, "Ready"), _condition(so, "Active")
    bounds = f"min {spec.get('minReplicaCount', 1)}, max {spec.get('maxReplicaCount', 5)}"
    if ready["status"] != "True":
        why = ready.get("message") or ready.get("reason") or ready["status"]
        return Check(
            stage,
            "fail",
            f"ScaledObject {so_name} not Ready: {why}",
            f"{describe}; check the KEDA role can query the AMP workspace",
        )
    state = "active" if active["status"] == "True" else "idle (no trigger above activation)"
    if hpa is None:
        return Check(
            stage,
            "fail",
            f"ScaledObject {so_name} Ready, {state}; no HPA",
            f"{describe} (status.hpaName)",
        )
    status = hpa.get("status") or {}
    replicas = (
        f"replicas desired {status.get('desiredReplicas', '-')} / current "
        f"{status.get('currentReplicas', '-')} ({bounds})"
    )
    shown = "; ".join(signals(hpa)) or "no current metric"
    detail = f"ScaledObject {so_name} Ready, {state}; {shown}; {replicas}"
    computing = _condition(hpa, "ScalingActive")
    if computing["status"] != "True":
        why = computing.get("reason") or computing["status"]
        fix = f"kubectl -n {ref.namespace} describe hpa {hpa['metadata']['name']}"
        shown_why = f"HPA ScalingActive {computing['status']}: {why}"
        return Check(stage, "fail", f"{detail}; {shown_why}", fix)
    return Check(stage, "pass", detail)
