"""What the API server refuses when an object we render is applied again with other values.

A model of the update validation of the kinds we render, from kubernetes/kubernetes:
- ``pkg/apis/core/validation/validation.go``, ``ValidatePersistentVolumeUpdate``: "spec.
  persistentvolumesource is immutable after creation" (the volume source: ``csi`` with its
  ``volumeHandle`` and ``volumeAttributes``, ``hostPath``, ...) and ``volumeMode`` "field is
  immutable"; ``ValidatePersistentVolumeClaimUpdate``: "spec is immutable after creation except
  resources.requests and volumeAttributesClassName for bound claims" (our claims are bound: the
  FSx ones are pre-bound by ``volumeName``, the others bind at once);
- ``pkg/apis/storage/validation/validation.go``, ``ValidateStorageClassUpdate``: provisioner,
  parameters, reclaimPolicy and volumeBindingMode cannot change;
- ``pkg/apis/apps/validation/validation.go``: a Deployment's, DaemonSet's or StatefulSet's
  ``spec.selector`` is immutable; a StatefulSet's spec only changes in 'replicas', 'ordinals',
  'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy'
  and 'minReadySeconds'.

Fields the API server fills in (a claim's ``volumeName`` after dynamic binding) are not in what we
render, and ``kubectl apply`` leaves them alone; only rendered values are compared.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

PV_SOURCES_NOT = {
    "accessModes",
    "capacity",
    "claimRef",
    "mountOptions",
    "nodeAffinity",
    "persistentVolumeReclaimPolicy",
    "storageClassName",
    "volumeMode",
    "volumeAttributesClassName",
}
PVC_MUTABLE = {"resources", "volumeAttributesClassName"}
STORAGE_CLASS_FIXED = ("provisioner", "parameters", "reclaimPolicy", "volumeBindingMode")
STATEFULSET_MUTABLE = {
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
}
SELECTOR_KINDS = {"Deployment", "DaemonSet", "StatefulSet"}


def identity(o: Obj) -> tuple[str, str, str, str]:
    meta = o["metadata"]
    return (o["apiVersion"], o["kind"], meta.get("namespace", ""), meta["name"])


def _name(o: Obj) -> str:
    ns = o["metadata"].get("namespace")
    return f"{o['kind']} {ns + '/' if ns else ''}{o['metadata']['name']}"


def _changed(old: Obj, new: Obj, keys: set[str] | tuple[str, ...]) -> list[str]:
    return sorted(k for k in keys if old.get(k) != new.get(k))


def refused_changes(old: Obj, new: Obj) -> list[str]:
    """Why the API server would refuse ``new`` as an update of ``old`` (same identity)."""
    kind, why = old["kind"], []
    spec_old, spec_new = old.get("spec", {}), new.get("spec", {})
    if kind == "PersistentVolume":
        keys = (set(spec_old) | set(spec_new)) - PV_SOURCES_NOT
        why += [
            f"spec.{k} (the volume source) is immutable after creation"
            for k in _changed(spec_old, spec_new, keys)
        ]
        why += [f"spec.{k} is immutable" for k in _changed(spec_old, spec_new, ("volumeMode",))]
    elif kind == "PersistentVolumeClaim":
        keys = (set(spec_old) | set(spec_new)) - PVC_MUTABLE
        why += [
            f"spec.{k}: a bound claim's spec is immutable except resources.requests"
            for k in _changed(spec_old, spec_new, keys)
        ]
    elif kind == "StorageClass":
        why += [f"{k} cannot change" for k in _changed(old, new, STORAGE_CLASS_FIXED)]
    if kind in SELECTOR_KINDS:
        why += [f"spec.{k} is immutable" for k in _changed(spec_old, spec_new, ("selector",))]
    if kind == "StatefulSet":
        keys = (set(spec_old) | set(spec_new)) - STATEFULSET_MUTABLE - {"selector"}
        why += [
            f"spec.{k} cannot change on a StatefulSet" for k in _changed(spec_old, spec_new, keys)
        ]
    return [f"{_name(new)}: {w}" for w in why]


def update_refusals(old: list[Obj], new: list[Obj]) -> list[str]:
    """Every refusal of applying ``new`` over a cluster holding ``old`` (kept objects only:
    new identities are created, vanished ones pruned)."""
    before = {identity(o): o for o in old}
    return [
        r for o in new if identity(o) in before for r in refused_changes(before[identity(o)], o)
    ]
