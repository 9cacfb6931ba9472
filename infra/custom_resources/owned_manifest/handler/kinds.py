"""REST plural and scope of every kind the Kubernetes layer applies.

The construct refuses at synth a manifest with a kind missing here, so the handler never has to
guess a URL. Add a kind with its plural (``kubectl api-resources``) and whether it is namespaced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KINDS: dict[str, tuple[str, bool]] = {
    "Namespace": ("namespaces", False),
    "StorageClass": ("storageclasses", False),
    "CSIDriver": ("csidrivers", False),
    "ClusterRole": ("clusterroles", False),
    "ClusterRoleBinding": ("clusterrolebindings", False),
    "ClusterPolicy": ("clusterpolicies", False),
    "CustomResourceDefinition": ("customresourcedefinitions", False),
    "PersistentVolume": ("persistentvolumes", False),
    "ValidatingAdmissionPolicy": ("validatingadmissionpolicies", False),
    "ValidatingAdmissionPolicyBinding": ("validatingadmissionpolicybindings", False),
    "ConfigMap": ("configmaps", True),
    "Secret": ("secrets", True),
    "Service": ("services", True),
    "ServiceAccount": ("serviceaccounts", True),
    "PersistentVolumeClaim": ("persistentvolumeclaims", True),
    "Role": ("roles", True),
    "RoleBinding": ("rolebindings", True),
    "Deployment": ("deployments", True),
    "StatefulSet": ("statefulsets", True),
    "DaemonSet": ("daemonsets", True),
    "CronJob": ("cronjobs", True),
    "Job": ("jobs", True),
    "NetworkPolicy": ("networkpolicies", True),
    "PodDisruptionBudget": ("poddisruptionbudgets", True),
    "InferenceEndpointConfig": ("inferenceendpointconfigs", True),
}


class UnknownKind(ValueError):
    pass


@dataclass(frozen=True)
class Ref:
    """Where one object lives: enough to GET, PATCH or DELETE it."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None

    @classmethod
    def of(cls, obj: dict[str, Any]) -> Ref:
        kind = str(obj["kind"])
        if kind not in KINDS:
            raise UnknownKind(
                f"kind {kind} is not in infra/custom_resources/owned_manifest/handler/kinds.py: "
                "add its plural and scope there"
            )
        meta = obj.get("metadata") or {}
        namespaced = KINDS[kind][1]
        return cls(
            api_version=str(obj["apiVersion"]),
            kind=kind,
            name=str(meta["name"]),
            namespace=str(meta.get("namespace") or "default") if namespaced else None,
        )

    @property
    def collection(self) -> str:
        plural, _ = KINDS[self.kind]
        root = f"/apis/{self.api_version}" if "/" in self.api_version else "/api/v1"
        scope = f"/namespaces/{self.namespace}" if self.namespace else ""
        return f"{root}{scope}/{plural}"

    @property
    def path(self) -> str:
        return f"{self.collection}/{self.name}"

    @property
    def key(self) -> str:
        """``Kind/name`` or ``Kind/namespace/name``: how hints and messages name the object."""
        return "/".join(p for p in (self.kind, self.namespace, self.name) if p)

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"
