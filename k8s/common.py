"""Helpers shared by the charts: labels, workload identities, node placement, resources and
security contexts, all as the typed classes of the pinned cdk8s-plus ``k8s`` module."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import cdk8s
from constructs import Construct

from infra.config import AppConfig
from infra.facts.versions import SUPPORTED_KUBERNETES
from k8s.kube_api import KPlusApi, KubeApi

if TYPE_CHECKING:
    from k8s.kube_api import kube

CURVINE_LABEL = "app.kubernetes.io/name"
EBS_SC = "ebs-sc"
"""StorageClass of the Curvine master volumes that k8s.foundation.StorageChart creates, unless
``kvcache.curvine.master.storage_class`` names an existing one (``master_storage_class``)."""


def master_storage_class(config: AppConfig) -> str:
    return config.kvcache.curvine.master.storage_class or EBS_SC


# The label SageMaker HyperPod puts on every node of an EKS-orchestrated cluster, valued with the
# node's instance group name (``InstanceGroupName`` of the SageMaker CreateCluster API). HyperPod
# sets it itself, so it is present even on clusters (existing-cluster mode) whose nodes do not
# carry the labels configured in ``hyperpod.*_group.labels``. Evidence: public HyperPod EKS
# manifests and tools select nodes with this key; no AWS documentation page stating it could be
# read offline. See docs/kubernetes-layer.md ("Node placement") for how to check it on a
# cluster (``kubectl get nodes -L sagemaker.amazonaws.com/instance-group-name``).
INSTANCE_GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"


def kplus_for(config: AppConfig) -> KPlusApi:
    """The cdk8s-plus module pinned for the cluster's Kubernetes minor.

    Imported by name, it reaches mypy as a plain module, which mypy lets stand for the protocol:
    the protocol is typed as the reference package's classes, and tests/k8s/test_kube_api.py
    checks that every pinned package accepts what they accept (k8s/kube_api.py).
    """
    module: KPlusApi = SUPPORTED_KUBERNETES[config.eks.kubernetes_version].cdk8s_plus()
    return module


def k8s_for(config: AppConfig) -> KubeApi:
    """The typed L1 classes (``KubeStatefulSet``, ``Container``, ...) of the pinned cdk8s-plus.

    mypy checks every call against the reference package (k8s/kube_api.py); jsii checks every
    argument again at synth: an unknown or mistyped field raises there.
    """
    return kplus_for(config).k8s


def gpu_node_selector(config: AppConfig) -> dict[str, str]:
    """Places a Pod on the GPU instance group's nodes, by the label HyperPod sets itself."""
    return {INSTANCE_GROUP_LABEL: config.hyperpod.gpu_group.name}


def system_node_selector(config: AppConfig) -> dict[str, str]:
    """Places a Pod on the system (CPU) instance group, off the GPU nodes."""
    return {INSTANCE_GROUP_LABEL: config.hyperpod.system_group.name}


def resources(
    k8s: KubeApi,
    cpu_millicores: int,
    memory_mib: int,
    *,
    cpu_limit_millicores: int | None = None,
    memory_limit_mib: int | None = None,
) -> kube.ResourceRequirements:
    """Requests and limits; limits default to the requests (Guaranteed QoS)."""
    q = k8s.Quantity.from_string
    return k8s.ResourceRequirements(
        requests={"cpu": q(f"{cpu_millicores}m"), "memory": q(f"{memory_mib}Mi")},
        limits={
            "cpu": q(f"{cpu_limit_millicores or cpu_millicores}m"),
            "memory": q(f"{memory_limit_mib or memory_mib}Mi"),
        },
    )


def hardened(k8s: KubeApi) -> kube.SecurityContext:
    """Security context of every container that needs no privilege: no privilege escalation,
    every capability dropped, the
    runtime's default seccomp profile, and a read-only root filesystem (callers mount an emptyDir
    at each path the image writes)."""
    return k8s.SecurityContext(
        allow_privilege_escalation=False,
        capabilities=k8s.Capabilities(drop=["ALL"]),
        seccomp_profile=k8s.SeccompProfile(type="RuntimeDefault"),
        read_only_root_filesystem=True,
    )


# An unprivileged UID and group for the Pods whose image runs as root (no USER) but needs
# nothing of root: above 10000, so it matches no account of a host or an image.
NON_ROOT_ID = 65532


def non_root(k8s: KubeApi) -> kube.PodSecurityContext:
    """Pod security context of a root-by-default image that needs no root: every container as
    ``NON_ROOT_ID``, and the Pod's volumes group-owned by it (a volume written by an earlier
    root run is regrouped once, when its root directory's group differs)."""
    return k8s.PodSecurityContext(
        run_as_non_root=True,
        run_as_user=NON_ROOT_ID,
        run_as_group=NON_ROOT_ID,
        fs_group=NON_ROOT_ID,
        fs_group_change_policy="OnRootMismatch",
    )


def meta(
    k8s: KubeApi,
    name: str,
    *,
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> kube.ObjectMeta:
    return k8s.ObjectMeta(
        name=name,
        namespace=namespace,
        labels=dict(labels) if labels else None,
        annotations=dict(annotations) if annotations else None,
    )


def port(k8s: KubeApi, number: int) -> kube.IntOrString:
    return k8s.IntOrString.from_number(number)


def raw(scope: Construct, id: str, manifest: dict[str, Any]) -> cdk8s.ApiObject:
    """An object written field by field.

    Only for custom resources that have no imported typed class (the Kyverno ClusterPolicy in
    k8s/policy.py). Built-in kinds use the typed classes of ``k8s_for(config)``.
    """
    obj = cdk8s.ApiObject(
        scope,
        id,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=cdk8s.ApiObjectMetadata(**_metadata(manifest["metadata"])),
    )
    for key, value in manifest.items():
        if key not in ("apiVersion", "kind", "metadata"):
            obj.add_json_patch(cdk8s.JsonPatch.add(f"/{key}", value))
    return obj


def _metadata(meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": meta["name"],
        **({"namespace": meta["namespace"]} if "namespace" in meta else {}),
        **({"labels": meta["labels"]} if "labels" in meta else {}),
        **({"annotations": meta["annotations"]} if "annotations" in meta else {}),
    }
