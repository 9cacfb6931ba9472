"""Helpers shared by the charts: labels, resources, and raw objects for fields cdk8s-plus lacks."""

from __future__ import annotations

from typing import Any

import cdk8s
from constructs import Construct

from infra.config import AppConfig
from infra.versions import SUPPORTED_KUBERNETES

PART_OF = "hyperpod-kvcache"
CURVINE_LABEL = "app.kubernetes.io/name"


def labels(name: str, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": PART_OF,
        "app.kubernetes.io/managed-by": "cdk8s",
    }


def resources(
    cpu_millicores: int,
    memory_mib: int,
    *,
    cpu_limit_millicores: int | None = None,
    memory_limit_mib: int | None = None,
) -> dict[str, Any]:
    """Requests and limits; limits default to the requests (Guaranteed QoS)."""
    return {
        "requests": {"cpu": f"{cpu_millicores}m", "memory": f"{memory_mib}Mi"},
        "limits": {
            "cpu": f"{cpu_limit_millicores or cpu_millicores}m",
            "memory": f"{memory_limit_mib or memory_mib}Mi",
        },
    }  # fmt: skip


def raw(scope: Construct, id: str, manifest: dict[str, Any]) -> cdk8s.ApiObject:
    """An object written field by field.

    Used where cdk8s-plus cannot express a field (mount propagation, privileged containers,
    hostPath types, volume claim templates, CSIDriver/StorageClass/PV/RBAC kinds it does not
    model) or adds defaults that would change the object (security contexts on privileged Pods).
    """
    obj = cdk8s.ApiObject(
        scope, id, api_version=manifest["apiVersion"], kind=manifest["kind"],
        metadata=cdk8s.ApiObjectMetadata(**_metadata(manifest["metadata"])),
    )  # fmt: skip
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


def kplus_for(config: AppConfig) -> Any:
    """The cdk8s-plus module pinned for the cluster's Kubernetes minor."""
    return SUPPORTED_KUBERNETES[config.eks.kubernetes_version].cdk8s_plus()
