"""What ``verify --wait-minutes`` and ``wait-tiered-storage`` wait for (progress through
``scripts.lib.progress.wait_for``)."""

from __future__ import annotations

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from scripts.lib.clients import Clients
from scripts.lib.environment import cluster_names
from scripts.lib.kube import (
    find_endpoint_deployment,
    gpu_nodes,
    pod_ready,
)
from scripts.lib.progress import Show, wait_for
from scripts.lib.verify.cluster import _tiered_storage


def tiered_storage_state(clients: Clients, cfg: AppConfig) -> tuple[bool, str]:
    """Done when the cluster is InService and its TieredStorageConfig reads back as configured
    (the update goes through UpdateCluster, which takes the cluster through Updating)."""
    ok, detail, status = _tiered_storage(clients, cfg)
    return ok and status == "InService", f"{status}; {detail}"


def nodes_ready_state(clients: Clients, cfg: AppConfig) -> tuple[bool, str]:
    want = cfg.hyperpod.gpu_group.instance_count
    ready = sum(1 for node in gpu_nodes(clients, cfg) if pod_ready(node))  # same condition shape
    return ready >= want, f"{ready}/{want} GPU nodes Ready"


def rollout_state(clients: Clients, ref: EndpointConfig) -> tuple[bool, str]:
    dep = find_endpoint_deployment(clients, ref)
    if dep is None:
        return False, "no Deployment yet"
    want = int(dep["spec"].get("replicas") or 0)
    status = dep.get("status") or {}
    updated, ready = int(status.get("updatedReplicas") or 0), int(status.get("readyReplicas") or 0)
    done = want > 0 and updated >= want and ready >= want
    return done, f"{updated}/{want} updated, {ready}/{want} Ready"


def wait_until_ready(
    clients: Clients,
    cfg: AppConfig,
    ref: EndpointConfig | None,
    timeout_s: float,
    interval_s: float = 15.0,
    show: Show = True,
) -> dict[str, float]:
    """Wait for Tiered Storage, the GPU nodes and (with ``ref``) the endpoint's rollout, each
    within ``timeout_s``; returns the seconds each took."""
    _, hp_name = cluster_names(cfg)
    waited = {
        "tiered_storage": wait_for(
            f"Tiered Storage on {hp_name} (InService, config read back)",
            lambda: tiered_storage_state(clients, cfg),
            timeout_s,
            interval_s,
            show,
        ),
        "gpu_nodes": wait_for(
            "GPU nodes Ready", lambda: nodes_ready_state(clients, cfg), timeout_s, interval_s, show
        ),
    }
    if ref is not None:
        waited["rollout"] = wait_for(
            f"rollout of {ref.namespace}/{ref.name}",
            lambda: rollout_state(clients, ref),
            timeout_s,
            interval_s,
            show,
        )
    return waited
