"""What the API server refuses when an object we render is applied again with other values.

A model of the update validation of the kinds we render, from kubernetes/kubernetes:
- ``pkg/apis/core/validation/validation.go``, ``ValidatePersistentVolumeUpdate``: "spec.
  persistentvolumesource is immutable after creation" (the volume source: ``csi`` with its
  ``volumeHandle`` and ``volumeAttributes``, ``hostPath``, ...) and ``volumeMode`` "field is
  immutable"; ``ValidatePersistentVolumeClaimUpdate``: "spec is immutable after creation except
  resources.requests and volumeAttributesClassName for bound claims" (our claims are bound: the
  FSx ones are pre-bound by ``volumeName``, the others bind at once). Of ``resources`` only
  ``requests.storage`` may change, and only on a bound claim: ``limits`` and any other request
  are part of the immutable spec. A smaller ``requests.storage`` is refused unless it stays above
  ``status.capacity`` ("field can not be less than status.capacity"; RecoverVolumeExpansionFailure,
  on by default from 1.32, GA and locked on in 1.34); a claim's capacity is what it was bound
  with, its previous request unless told otherwise;
- ``plugin/pkg/admission/storage/persistentvolume/resize/admission.go``, the
  PersistentVolumeClaimResize admission plugin: a larger ``requests.storage`` only on a bound
  claim whose StorageClass (the same non-empty name before and after) exists and has
  ``allowVolumeExpansion: true`` ("only dynamically provisioned pvc can be resized and the
  storageclass that provisions the pvc must support resize"); a claim without a class (a static
  volume, ``storageClassName: ""``) can never grow;
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
# Quantity suffixes (k8s.io/apimachinery resource.Quantity): binary and decimal SI.
QUANTITY_SUFFIXES = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "": 1,
}
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


def quantity_bytes(value: str | int) -> int:
    """A storage quantity in bytes (``1Gi``, ``500G``, ``1073741824``); a form this does not read
    (a fraction, an exponent, milli) is refused rather than guessed."""
    text = str(value)
    number = text.rstrip("KMGTPEikmgtpe")
    suffix = text[len(number) :]
    if not number.isdigit() or suffix not in QUANTITY_SUFFIXES:
        raise ValueError(f"storage quantity {text!r}: not a form this model reads")
    return int(number) * QUANTITY_SUFFIXES[suffix]


def _class_of(claim: Obj) -> str:
    return str(claim.get("spec", {}).get("storageClassName") or "")


def _claim_refusals(
    old: Obj, new: Obj, storage_classes: dict[str, Obj], capacity: str | None, bound: bool
) -> list[str]:
    """ValidatePersistentVolumeClaimUpdate, then the PersistentVolumeClaimResize admission."""
    spec_old, spec_new = old.get("spec", {}), new.get("spec", {})
    keys = (set(spec_old) | set(spec_new)) - PVC_MUTABLE
    why = [
        f"spec.{k}: a bound claim's spec is immutable except resources.requests"
        for k in _changed(spec_old, spec_new, keys)
    ]
    res_old, res_new = spec_old.get("resources", {}), spec_new.get("resources", {})
    if res_old.get("limits") != res_new.get("limits"):
        why.append("spec.resources.limits: a claim's spec is immutable except requests.storage")
    req_old, req_new = res_old.get("requests", {}), res_new.get("requests", {})
    others = (set(req_old) | set(req_new)) - {"storage"}
    why += [
        f"spec.resources.requests.{k}: only requests.storage may change"
        for k in sorted(others)
        if req_old.get(k) != req_new.get(k)
    ]
    if req_old.get("storage") == req_new.get("storage"):
        return why
    if not bound:
        return [*why, "spec.resources.requests.storage: an unbound claim's spec is immutable"]
    before, after = quantity_bytes(req_old["storage"]), quantity_bytes(req_new["storage"])
    if after < before and after <= quantity_bytes(capacity or req_old["storage"]):
        why.append("spec.resources.requests.storage: field can not be less than status.capacity")
    if after > before:
        sc_name = _class_of(new)
        sc = storage_classes.get(sc_name)
        if not sc_name or sc_name != _class_of(old) or not (sc or {}).get("allowVolumeExpansion"):
            why.append(
                f"spec.resources.requests.storage: growing it is forbidden: only dynamically "
                f"provisioned pvc can be resized and the storageclass that provisions the pvc "
                f"must support resize (StorageClass {sc_name or '(none)'!r}"
                f"{'' if sc else ', absent'} without allowVolumeExpansion: true)"
            )
    return why


def refused_changes(
    old: Obj,
    new: Obj,
    storage_classes: dict[str, Obj] | None = None,
    *,
    capacity: str | None = None,
    bound: bool = True,
) -> list[str]:
    """Why the API server would refuse ``new`` as an update of ``old`` (same identity).

    For a PersistentVolumeClaim: ``storage_classes`` (by name) are the StorageClasses in the
    cluster, ``capacity`` its ``status.capacity.storage`` (default: its previous request) and
    ``bound`` whether it is bound."""
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
        why += _claim_refusals(old, new, storage_classes or {}, capacity, bound)
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
    new identities are created, vanished ones pruned). The resize admission reads the
    StorageClasses as the apply leaves them (a class's ``allowVolumeExpansion`` may change)."""
    before = {identity(o): o for o in old}
    classes = {o["metadata"]["name"]: o for o in [*old, *new] if o["kind"] == "StorageClass"}
    return [
        r
        for o in new
        if identity(o) in before
        for r in refused_changes(before[identity(o)], o, classes)
    ]
