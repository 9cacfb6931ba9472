"""Teardown's Kubernetes phase: the configured InferenceEndpointConfigs and the Curvine PVCs
this environment owns (by labels and owner mark), and the waits for their load balancers
and volumes to go."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError
from kubernetes.client.exceptions import ApiException

from infra.config import AppConfig
from infra.custom_resources.owned_manifest.handler.ownership import OWNER_ANNOTATION
from k8s.names import (
    CURVINE_SC,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    PART_OF,
    PART_OF_LABEL,
    is_curvine_claim,
)
from scripts.lib.clients import Clients
from scripts.lib.endpoints import IEC_GROUP, IEC_PLURAL, IEC_VERSION
from scripts.lib.environment import cluster_names
from scripts.lib.progress import Show, wait_for
from scripts.lib.teardown.model import Item, Log, Timeouts

LB_CLUSTER_TAG = "elbv2.k8s.aws/cluster"  # set by the AWS Load Balancer Controller


def eks_cluster_exists(clients: Clients, cfg: AppConfig) -> bool:
    name, _ = cluster_names(cfg)
    try:
        clients.aws("eks").describe_cluster(name=name)
        return True
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ResourceNotFoundException":
            return False
        raise


def labelled(metadata: Any) -> bool:
    """Carries the labels every object we render has (k8s/common.py ``labels``)."""
    labels = (metadata or {}).get("labels") or {}
    return labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(PART_OF_LABEL) == PART_OF


def owner_mark(metadata: Any) -> str | None:
    """The environment that created it on an existing cluster (``hyperpod-kvcache/owner``)."""
    value = ((metadata or {}).get("annotations") or {}).get(OWNER_ANNOTATION)
    return None if value is None else str(value)


def why_not_ours(cfg: AppConfig, metadata: Any) -> str | None:
    """None when the object is this environment's; else why it is left in place. The labels
    are the same in every environment, so the owner mark decides: another environment's mark
    is never ours, and on an existing cluster (where the owned-manifest handler marks what it
    creates) only our own mark is."""
    if not labelled(metadata):
        return f"lacks our ownership labels ({owner_selector()})"
    mark = owner_mark(metadata)
    if mark is not None and mark != cfg.stack_prefix:
        return f"is marked {OWNER_ANNOTATION}={mark}, another environment's"
    if mark is None and cfg.existing_cluster is not None:
        return f"has no {OWNER_ANNOTATION} mark, so this environment did not create it"
    return None


def owner_selector() -> str:
    return f"{MANAGED_BY_LABEL}={MANAGED_BY},{PART_OF_LABEL}={PART_OF}"


def _endpoints(clients: Clients, cfg: AppConfig) -> tuple[list[Item], list[str]]:
    """(the configured endpoints that exist and are ours, notes on those left in place)."""
    custom = clients.custom()
    items: list[Item] = []
    notes: list[str] = []
    for ep in cfg.kvcache.endpoints:
        try:
            obj = custom.get_namespaced_custom_object(
                IEC_GROUP, IEC_VERSION, ep.namespace, IEC_PLURAL, ep.name
            )
        except ApiException as exc:
            if exc.status == 404:  # not deployed, or the CRD went with the operator add-on
                continue
            raise
        ref = f"{ep.namespace}/{ep.name}"
        why = why_not_ours(cfg, obj.get("metadata"))
        if why is None:
            items.append(Item("InferenceEndpointConfig", ref))
        else:
            notes.append(
                f"InferenceEndpointConfig {ref} {why}: left in place; delete it with kubectl if "
                "it is yours"
            )
    return items, notes


def list_endpoints(clients: Clients, cfg: AppConfig) -> list[Item]:
    return _endpoints(clients, cfg)[0]


def list_curvine_pvcs(clients: Clients, cfg: AppConfig) -> list[Item]:
    """Curvine PVCs we rendered, in the configured endpoints' namespaces only."""
    return _curvine_pvcs(clients, cfg)[0]


def _curvine_pvcs(clients: Clients, cfg: AppConfig) -> tuple[list[Item], list[str]]:
    """(our Curvine PVCs in the configured endpoints' namespaces, notes on those left)."""
    core = clients.core()
    items: list[Item] = []
    notes: list[str] = []
    for ns in sorted({ep.namespace for ep in cfg.kvcache.endpoints}):
        pvcs = core.list_namespaced_persistent_volume_claim(ns, label_selector=owner_selector())
        for p in pvcs.items:
            if p.spec.storage_class_name != CURVINE_SC:
                continue
            ref = f"{ns}/{p.metadata.name}"
            why = why_not_ours(cfg, clients.to_dict(p).get("metadata"))
            if why is None:
                items.append(Item("PersistentVolumeClaim", ref, CURVINE_SC))
            else:
                notes.append(f"PersistentVolumeClaim {ref} {why}: left in place")
    return items, notes


def curvine_volumes_left(clients: Clients, cfg: AppConfig) -> list[str]:
    """Volumes on the Curvine StorageClass that the Curvine CSI driver still has to delete:
    reclaim policy Delete, bound to a claim of the L2 volume (its name, in a configured
    endpoint's namespace) that no longer exists. Only waited for, never deleted."""
    namespaces = {ep.namespace for ep in cfg.kvcache.endpoints}
    core = clients.core()
    left = []
    for pv in core.list_persistent_volume().items:
        spec = clients.to_dict(pv).get("spec") or {}
        claim = spec.get("claimRef") or {}
        if (
            spec.get("storageClassName") != CURVINE_SC
            or spec.get("persistentVolumeReclaimPolicy") != "Delete"
            or claim.get("namespace") not in namespaces
            or not is_curvine_claim(str(claim.get("name")))
        ):
            continue
        try:
            now = core.read_namespaced_persistent_volume_claim(claim["name"], claim["namespace"])
            if not claim.get("uid") or now.metadata.uid == claim["uid"]:
                continue  # its claim is there: not released
        except ApiException as exc:
            if exc.status != 404:
                raise
        left.append(pv.metadata.name)
    return sorted(left)


def cluster_load_balancers(clients: Clients, eks_name: str) -> list[str]:
    elb = clients.aws("elbv2")
    arns = [
        lb["LoadBalancerArn"]
        for page in elb.get_paginator("describe_load_balancers").paginate()
        for lb in page["LoadBalancers"]
    ]
    found = []
    for i in range(0, len(arns), 20):
        for desc in elb.describe_tags(ResourceArns=arns[i : i + 20])["TagDescriptions"]:
            tags = {t["Key"]: t["Value"] for t in desc.get("Tags", [])}
            if tags.get(LB_CLUSTER_TAG) == eks_name:
                found.append(desc["ResourceArn"])
    return found


def _delete_endpoints(clients: Clients, cfg: AppConfig, t: Timeouts, log: Log, show: Show) -> None:
    custom = clients.custom()
    endpoints = list_endpoints(clients, cfg)
    for item in endpoints:
        ns, name = item.id.split("/", 1)
        try:
            custom.delete_namespaced_custom_object(IEC_GROUP, IEC_VERSION, ns, IEC_PLURAL, name)
            log(f"deleted InferenceEndpointConfig {item.id}")
        except ApiException as exc:
            if exc.status != 404:
                raise
    if endpoints:
        wait_for(
            "InferenceEndpointConfigs to go",
            lambda: not list_endpoints(clients, cfg),
            t.endpoint_s,
            t.interval_s,
            show,
        )
    eks_name, _ = cluster_names(cfg)
    wait_for(
        f"load balancers of {eks_name} to go",
        lambda: not cluster_load_balancers(clients, eks_name),
        t.endpoint_s,
        t.interval_s,
        show,
    )


def _delete_pvcs(clients: Clients, cfg: AppConfig, t: Timeouts, log: Log, show: Show) -> None:
    core = clients.core()
    pvcs = list_curvine_pvcs(clients, cfg)
    for item in pvcs:
        ns, name = item.id.split("/", 1)
        try:
            core.delete_namespaced_persistent_volume_claim(name, ns)
            log(f"deleted PVC {item.id}")
        except ApiException as exc:
            if exc.status != 404:
                raise
    if pvcs:
        wait_for(
            "Curvine PVCs to go",
            lambda: not list_curvine_pvcs(clients, cfg),
            t.pvc_s,
            t.interval_s,
            show,
        )

    # The CSI driver deletes a released volume (and Curvine its directory) only while both run,
    # and the kvcache stack takes them: without this wait the volume keeps its finalizer.
    def volumes() -> tuple[bool, str]:
        left = curvine_volumes_left(clients, cfg)
        return not left, ", ".join(left)

    if not volumes()[0]:
        wait_for(
            "the Curvine CSI driver to delete the volumes of the deleted PVCs",
            volumes,
            t.pvc_s,
            t.interval_s,
            show,
        )
