"""The cluster's stages of ``verify``: Tiered Storage, the ai-toolkit DaemonSet, the add-ons,
the CSI driver, Curvine's probes, the L2 claim and the endpoint."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from kubernetes.client.exceptions import ApiException

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from k8s.names import CSI_DRIVER
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.endpoints import l2_claim
from scripts.lib.environment import cluster_names
from scripts.lib.errors import OperationError
from scripts.lib.kube import (
    gpu_nodes,
    pod_ready,
    read_endpoint,
)

# Add-ons the product installs (DESIGN.md); each must be ACTIVE.
EXPECTED_ADDONS = (
    "cert-manager",
    "aws-mountpoint-s3-csi-driver",
    "aws-fsx-csi-driver",
    "metrics-server",
    "aws-ebs-csi-driver",
    "amazon-sagemaker-hyperpod-inference",
)
AI_TOOLKIT_NAMESPACE = "aws-hyperpod"


def _guard(stage: str, fn: Callable[[], Check]) -> Check:
    try:
        return fn()
    except ApiException as exc:
        return Check(
            stage,
            "fail",
            f"Kubernetes API: {exc.status} {exc.reason}",
            "check kubectl access (aws eks update-kubeconfig)",
        )
    except (ClientError, BotoCoreError) as exc:
        return Check(stage, "fail", f"AWS: {exc}", "check credentials and region")


def _tiered_storage(clients: Clients, cfg: AppConfig) -> tuple[bool, str, str]:
    """(matches the config, what it reads, ClusterStatus) from DescribeCluster."""
    _, hp_name = cluster_names(cfg)
    desc = clients.aws("sagemaker").describe_cluster(ClusterName=hp_name)
    got = desc.get("TieredStorageConfig") or {}
    want = cfg.tiered_storage
    mode, pct = got.get("Mode"), got.get("InstanceMemoryAllocationPercentage")
    ok = mode == want.mode and (
        want.mode != "Enable" or pct == want.instance_memory_allocation_percentage
    )
    detail = (
        f"Mode={mode} {pct}% (config: {want.mode} {want.instance_memory_allocation_percentage}%)"
    )
    return ok, detail, str(desc.get("ClusterStatus", "?"))


def check_tiered_storage(clients: Clients, cfg: AppConfig) -> Check:
    ok, detail, _ = _tiered_storage(clients, cfg)
    return Check(
        "tiered storage",
        "pass" if ok else "fail",
        detail,
        "" if ok else "redeploy the hyperpod stack (make deploy) to re-apply it",
    )


def check_ai_toolkit(clients: Clients, cfg: AppConfig) -> Check:
    stage = "ai-toolkit DaemonSet"
    dsets = clients.to_dict(clients.apps().list_namespaced_daemon_set(AI_TOOLKIT_NAMESPACE))
    found = [d for d in dsets.get("items") or [] if "ai-toolkit" in d["metadata"]["name"]]
    if not found:
        return Check(
            stage,
            "fail",
            f"no ai-toolkit DaemonSet in {AI_TOOLKIT_NAMESPACE}",
            "Tiered Storage is not on: run verify's first stage fix",
        )
    status = found[0].get("status") or {}
    ready = int(status.get("numberReady") or 0)
    nodes = len(gpu_nodes(clients, cfg))
    ok = nodes > 0 and ready >= nodes
    return Check(
        stage,
        "pass" if ok else "fail",
        f"{ready} ready on {nodes} GPU nodes",
        ""
        if ok
        else f"kubectl -n {AI_TOOLKIT_NAMESPACE} describe ds {found[0]['metadata']['name']}",
    )


def check_addons(clients: Clients, cfg: AppConfig) -> Check:
    eks_name, _ = cluster_names(cfg)
    eks = clients.aws("eks")
    names = eks.list_addons(clusterName=eks_name).get("addons", [])
    states = {
        n: eks.describe_addon(clusterName=eks_name, addonName=n)["addon"]["status"] for n in names
    }
    bad = {n: s for n, s in states.items() if s != "ACTIVE"}
    missing = [n for n in EXPECTED_ADDONS if n not in states]
    if bad:
        detail = ", ".join(f"{n}={s}" for n, s in sorted(bad.items()))
        return Check(
            "add-ons ACTIVE",
            "fail",
            detail,
            f"aws eks describe-addon --cluster-name {eks_name} --addon-name <name>",
        )
    if missing:
        return Check(
            "add-ons ACTIVE",
            "warn",
            f"{len(states)} ACTIVE; not installed as EKS add-ons: {', '.join(missing)}",
            "fine if installed by Helm; otherwise deploy the addons stack",
        )
    return Check("add-ons ACTIVE", "pass", f"{len(states)} add-ons ACTIVE")


def check_csi_driver(clients: Clients) -> Check:
    stage = f"CSIDriver {CSI_DRIVER}"
    try:
        clients.storage().read_csi_driver(CSI_DRIVER)
    except ApiException as exc:
        if exc.status == 404:
            return Check(stage, "fail", "not registered", "deploy the kvcache stack")
        raise
    return Check(stage, "pass", "registered")


PROBES = ("startupProbe", "readinessProbe", "livenessProbe")


def _probed(pod: dict[str, Any]) -> bool:
    return any(k in c for c in pod["spec"].get("containers") or [] for k in PROBES)


def _restarts(pod: dict[str, Any]) -> list[str]:
    out = []
    for s in (pod.get("status") or {}).get("containerStatuses") or []:
        if int(s.get("restartCount") or 0) > 0:
            last = ((s.get("lastState") or {}).get("terminated") or {}).get("reason") or "?"
            out.append(f"{s['name']} restarted {s['restartCount']}x (last: {last})")
    return out


def check_curvine_probes(clients: Clients, cfg: AppConfig) -> Check:
    """Every probed Curvine Pod (masters, workers) is Ready: its kubelet probes pass under the
    namespace's NetworkPolicies. A Pod that is not names itself, its restarts and the kubelet's
    probe messages (Events with reason Unhealthy)."""
    stage = "Curvine probes"
    cv = cfg.kvcache.curvine
    if "curvine" not in cfg.kvcache.l2_backends:
        return Check(stage, "skip", "no endpoint's l2_backend is curvine: no Curvine Pods")
    core = clients.core()
    pods = [
        p
        for p in clients.to_dict(core.list_namespaced_pod(cv.namespace)).get("items") or []
        if _probed(p)
    ]
    if not pods:
        return Check(stage, "fail", f"no probed Pods in {cv.namespace}", "deploy the kvcache stack")
    down = [p["metadata"]["name"] for p in pods if not pod_ready(p)]
    if not down:
        restarted = [f"{p['metadata']['name']}: {r}" for p in pods for r in _restarts(p)]
        note = f"; {'; '.join(restarted)}" if restarted else ""
        return Check(stage, "pass", f"{len(pods)} Pods Ready{note}")
    events = clients.to_dict(core.list_namespaced_event(cv.namespace)).get("items") or []
    probe_messages = {
        (e.get("involvedObject") or {}).get("name"): e.get("message", "")
        for e in events
        if e.get("reason") == "Unhealthy"
    }
    by_name = {p["metadata"]["name"]: p for p in pods}
    found = "; ".join(
        ", ".join(
            [
                f"{n}: not Ready",
                *_restarts(by_name[n]),
                *([probe_messages[n]] if n in probe_messages else []),
            ]
        )
        for n in down
    )
    return Check(
        stage,
        "fail",
        f"{found} ({len(pods) - len(down)}/{len(pods)} Ready)",
        f"kubectl -n {cv.namespace} describe pod {' '.join(down)} (its Events hold the "
        f"kubelet's probe messages), then kubectl -n {cv.namespace} logs {down[0]}",
    )


def check_pvc(clients: Clients, ref: EndpointConfig, claim: str) -> Check:
    """``claim``: the L2 claim of the deployed environment (``scripts.lib.endpoints.l2_claim``)."""
    stage = f"PVC {ref.namespace}/{claim}"
    try:
        pvc = clients.core().read_namespaced_persistent_volume_claim(claim, ref.namespace)
    except ApiException as exc:
        if exc.status == 404:
            return Check(stage, "fail", "not found", "deploy the kvcache stack")
        raise
    phase = pvc.status.phase if pvc.status else None
    return Check(
        stage,
        "pass" if phase == "Bound" else "fail",
        f"phase {phase}",
        "" if phase == "Bound" else f"kubectl -n {ref.namespace} describe pvc {claim}",
    )


def _claim_check(clients: Clients, cfg: AppConfig, ref: EndpointConfig) -> tuple[str | None, Check]:
    """The L2 claim and its row; with FSx an unknown file system fails the row (claim None)."""
    try:
        claim = l2_claim(clients, cfg)
    except OperationError as exc:
        return None, Check(f"PVC {ref.namespace}", "fail", str(exc), "deploy the kvcache stack")
    return claim, _guard(f"PVC {ref.namespace}/{claim}", lambda: check_pvc(clients, ref, claim))


def check_endpoint(clients: Clients, ref: EndpointConfig) -> Check:
    stage = f"endpoint {ref.namespace}/{ref.name}"
    iec = read_endpoint(clients, ref)
    if iec is None:
        return Check(
            stage,
            "fail",
            "InferenceEndpointConfig not found",
            "deploy the kvcache stack or pass --endpoint",
        )
    state = (iec.get("status") or {}).get("state")
    ok = state == "DeploymentComplete"
    return Check(
        stage,
        "pass" if ok else "fail",
        f"state {state}",
        "" if ok else f"kubectl -n {ref.namespace} describe inferenceendpointconfig {ref.name}",
    )
