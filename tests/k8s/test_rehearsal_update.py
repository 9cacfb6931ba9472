"""Deploy rehearsal, update: the layer applied again over what a previous deploy left, here after
the FSx for Lustre file system is replaced (a new subnet, security group or KMS key makes
CloudFormation create a new one, with a new id, DNS name and mount name).

What the kubectl provider does with each chart on such an update (``KubernetesManifest`` with a
prune label; the owned-manifest handler alike): ``kubectl apply`` of the new objects, so an object
whose kind, namespace and name are kept is updated in place, a new name is created, and an object
the new render lacks is pruned afterwards. An update that changes a field the API server keeps
immutable fails the deploy (``tests.doubles.immutable``, rules cited there). Both renders are real
(``make manifests`` with the file system a deployed stack reports); Kyverno's admission is
``tests.doubles.kyverno_eval`` over the operator's Pod model, as in the admission rehearsal.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config.loader import parse_config
from infra.environment.fsx import FsxVolume
from k8s.l2_volume import FSX_DRIVER
from k8s.names import STATIC_PV
from k8s.render import render_config
from tests.doubles.immutable import identity, refused_changes, update_refusals
from tests.doubles.kyverno_eval import apply_policy
from tests.support.config import DEPLOYED_FSX, env_raw, fsx_config
from tests.support.objects import OPERATOR_POD

Obj = dict[str, Any]
REPLACED_FSX = FsxVolume(
    "fs-0fedcba9876543210", "fs-0fedcba9876543210.fsx.us-west-2.amazonaws.com", "zyxwvuts"
)


def _render(fsx: FsxVolume, tmp: Path) -> list[Obj]:
    paths = render_config(fsx_config(), tmp / "dist", tmp / "locks", fsx=fsx)
    return [o for p in paths for o in yaml.safe_load_all(p.read_text()) if o]


@pytest.fixture(scope="module")
def before_after(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Obj], list[Obj]]:
    return (
        _render(DEPLOYED_FSX, tmp_path_factory.mktemp("before")),
        _render(REPLACED_FSX, tmp_path_factory.mktemp("after")),
    )


def test_replacing_the_file_system_is_an_update_the_api_server_accepts(
    before_after: tuple[list[Obj], list[Obj]],
) -> None:
    before, after = before_after
    problems = update_refusals(before, after)
    assert not problems, "\n".join(problems)


def _kind(objs: list[Obj], kind: str) -> dict[tuple[str, str], Obj]:
    return {
        (o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
        for o in objs
        if o["kind"] == kind
    }


def test_after_a_replacement_new_endpoint_pods_mount_the_new_file_system(
    before_after: tuple[list[Obj], list[Obj]],
) -> None:
    """The Pod the operator creates next is admitted with the new policy: its claim exists, is
    bound to a PersistentVolume on the new file system, and the old volume and claim are pruned
    (no kept object points at the old file system)."""
    before, after = before_after
    (policy,) = [o for o in after if o["kind"] == "ClusterPolicy"]
    claims, volumes = _kind(after, "PersistentVolumeClaim"), _kind(after, "PersistentVolume")
    for iec in (o for o in after if o["kind"] == "InferenceEndpointConfig"):
        ns, name = iec["metadata"]["namespace"], iec["metadata"]["name"]
        pod = copy.deepcopy(OPERATOR_POD)
        pod["metadata"].update(namespace=ns, labels={"app": name})
        pod = apply_policy(policy, pod, "CREATE")
        (claim,) = [
            v["persistentVolumeClaim"]["claimName"]
            for v in pod["spec"]["volumes"]
            if "persistentVolumeClaim" in v
        ]
        pvc = claims[(ns, claim)]
        pv = volumes[("", pvc["spec"]["volumeName"])]
        assert pv["spec"]["claimRef"] == {"namespace": ns, "name": claim}
        assert pv["spec"]["csi"]["volumeHandle"] == REPLACED_FSX.file_system_id
    kept = {identity(o) for o in before} & {identity(o) for o in after}
    old_id = DEPLOYED_FSX.file_system_id
    assert not [k for k in kept if old_id in yaml.safe_dump([o for o in after if identity(o) == k])]
    gone = {identity(o) for o in before} - {identity(o) for o in after}
    assert {k[1] for k in gone} == {"PersistentVolume", "PersistentVolumeClaim"}


PV = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": "l2"},
    "spec": {
        "csi": {"driver": FSX_DRIVER, "volumeHandle": "fs-0123456789abcdef0"},
        "claimRef": {"namespace": "a", "name": "c"},
        "volumeMode": "Filesystem",
        "persistentVolumeReclaimPolicy": "Retain",
    },
}
PVC = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "c", "namespace": "a"},
    "spec": {"volumeName": "l2", "resources": {"requests": {"storage": "1Gi"}}},
}


def _with(obj: Obj, path: str, value: Any) -> Obj:
    out = copy.deepcopy(obj)
    *parents, leaf = path.split(".")
    node = out
    for key in parents:
        node = node[key]
    node[leaf] = value
    return out


@pytest.mark.parametrize(
    ("old", "path", "value", "refused"),
    [
        (PV, "spec.csi.volumeHandle", "fs-0fedcba9876543210", True),
        (PV, "spec.volumeMode", "Block", True),
        (PV, "spec.persistentVolumeReclaimPolicy", "Delete", False),
        (PVC, "spec.volumeName", "l2-new", True),
        # A static volume's claim has no StorageClass that could allow it to grow.
        (PVC, "spec.resources.requests.storage", "2Gi", True),
    ],
)
def test_the_model_refuses_what_the_api_server_refuses(
    old: Obj, path: str, value: Any, refused: bool
) -> None:
    """The check above can fail: a kept PersistentVolume whose file system changes is refused."""
    assert bool(refused_changes(old, _with(old, path, value))) is refused
    assert update_refusals([old], [_with(old, path, value)]) == refused_changes(
        old, _with(old, path, value)
    )


CLAIM = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "l2", "namespace": "a"},
    "spec": {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": "curvine-sc",
        "resources": {"requests": {"storage": "1200Gi"}},
    },
}


def _class(expands: bool | None) -> Obj:
    sc: Obj = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass"}
    sc |= {"metadata": {"name": "curvine-sc"}, "provisioner": "curvine"}
    return sc if expands is None else {**sc, "allowVolumeExpansion": expands}


@pytest.mark.parametrize("expands", [None, False])
def test_growing_a_bound_claim_is_refused_unless_its_class_allows_expansion(
    expands: bool | None,
) -> None:
    """The resize admission plugin: a larger request needs allowVolumeExpansion: true on the
    claim's StorageClass (unset is false); the class must exist."""
    grown = _with(CLAIM, "spec.resources.requests.storage", "1800Gi")
    assert refused_changes(CLAIM, grown, {"curvine-sc": _class(expands)})
    assert refused_changes(CLAIM, grown, {})
    assert not refused_changes(CLAIM, grown, {"curvine-sc": _class(True)})
    assert update_refusals([CLAIM, _class(True)], [grown, _class(True)]) == []
    assert update_refusals([CLAIM, _class(expands)], [grown, _class(expands)])


def test_shrinking_a_bound_claim_to_its_capacity_or_below_is_refused() -> None:
    """Even where the class allows expansion: a request may only come down while it stays
    above status.capacity (a failed expansion's recovery), never to or below it."""
    classes = {"curvine-sc": _class(True)}
    shrunk = _with(CLAIM, "spec.resources.requests.storage", "1Ti")
    assert refused_changes(CLAIM, shrunk, classes)
    same_bytes = _with(CLAIM, "spec.resources.requests.storage", f"{1200 * 2**30}")
    assert not refused_changes(CLAIM, same_bytes, classes)
    assert (
        refused_changes(
            CLAIM,
            _with(CLAIM, "spec.resources.requests.storage", "1100Gi"),
            classes,
            capacity="1000Gi",
        )
        == []
    )
    assert refused_changes(
        CLAIM, _with(CLAIM, "spec.resources.requests.storage", "1000Gi"), classes, capacity="1000Gi"
    )


def test_a_claims_limits_and_other_requests_cannot_change() -> None:
    classes = {"curvine-sc": _class(True)}
    limited = _with(
        CLAIM, "spec.resources", {"requests": {"storage": "1200Gi"}, "limits": {"storage": "2Ti"}}
    )
    assert refused_changes(CLAIM, limited, classes)
    other = _with(CLAIM, "spec.resources.requests", {"storage": "1200Gi", "cpu": "1"})
    assert refused_changes(CLAIM, other, classes)


def test_an_unbound_claims_request_cannot_change() -> None:
    grown = _with(CLAIM, "spec.resources.requests.storage", "1800Gi")
    assert refused_changes(CLAIM, grown, {"curvine-sc": _class(True)}, bound=False)


def _curvine(gpu_nodes: int, **static: Any) -> Any:
    raw = env_raw()
    raw["hyperpod"]["gpu_group"]["instance_count"] = gpu_nodes
    if static:
        raw["kvcache"].setdefault("curvine", {})["static_pv"] = {"enabled": True, **static}
    return parse_config(raw, "config/dev.yaml (pool variant)", "dev")


def _rendered(config: Any, tmp: Path) -> list[Obj]:
    paths = render_config(config, tmp / "dist", tmp / "locks")
    return [o for p in paths for o in yaml.safe_load_all(p.read_text()) if o]


def _static(volumes: dict[Any, Obj]) -> list[Obj]:
    """The static L2 volume, not the pool's root volume the evictor mounts."""
    return [v for v in volumes.values() if v["metadata"]["name"].startswith(STATIC_PV)]


def _mounted_claim(objs: list[Obj], iec: Obj) -> str:
    (policy,) = [o for o in objs if o["kind"] == "ClusterPolicy"]
    pod = copy.deepcopy(OPERATOR_POD)
    ns, name = iec["metadata"]["namespace"], iec["metadata"]["name"]
    pod["metadata"].update(namespace=ns, labels={"app": name})
    pod = apply_policy(policy, pod, "CREATE")
    (claim,) = [
        v["persistentVolumeClaim"]["claimName"]
        for v in pod["spec"]["volumes"]
        if "persistentVolumeClaim" in v
    ]
    return str(claim)


@pytest.mark.parametrize(("before", "after"), [(2, 3), (3, 2)], ids=["grown", "shrunk"])
def test_a_curvine_pool_of_another_size_is_an_update_the_api_server_accepts(
    tmp_path: Path, before: int, after: int
) -> None:
    """More or fewer GPU nodes make the pool, and so the claim's size, change. curvine-sc has
    no allowVolumeExpansion (its driver resizes nothing) and a bound claim never shrinks: the
    claim of the new size is a new claim, and every endpoint Pod admitted after the apply
    mounts it."""
    old = _rendered(_curvine(before), tmp_path / "before")
    new = _rendered(_curvine(after), tmp_path / "after")
    problems = update_refusals(old, new)
    assert not problems, "\n".join(problems)
    claims = _kind(new, "PersistentVolumeClaim")
    for iec in (o for o in new if o["kind"] == "InferenceEndpointConfig"):
        ns = iec["metadata"]["namespace"]
        claim = claims[(ns, _mounted_claim(new, iec))]
        pool_gib = _curvine(after).kvcache.curvine.worker.capacity_gib * after
        assert claim["spec"]["resources"]["requests"]["storage"] == f"{int(pool_gib)}Gi"
    gone = {identity(o) for o in old} - {identity(o) for o in new}
    # The endpoints' claims, and the pool's root volume with its claim (named after the pool's
    # size too): the evictor's CronJob is updated in place to the new one.
    assert {k[1] for k in gone} == {"PersistentVolumeClaim", "PersistentVolume"}
    (evictor,) = [o for o in new if o["kind"] == "CronJob"]
    pod = evictor["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (claim_name,) = [
        v["persistentVolumeClaim"]["claimName"]
        for v in pod["volumes"]
        if "persistentVolumeClaim" in v
    ]
    assert (evictor["metadata"]["namespace"], claim_name) in claims


def test_a_static_volume_of_another_size_comes_with_its_claim(tmp_path: Path) -> None:
    """With the static volume, its claim's size is the volume's: a new size is a new volume
    pre-bound to a new claim, on the same Curvine path (the cache stays warm); the old pair is
    pruned (a Retain volume stays Released and binds no other claim)."""
    old = _rendered(_curvine(2, size_gib=1024), tmp_path / "before")
    new = _rendered(_curvine(2, size_gib=2048), tmp_path / "after")
    assert update_refusals(old, new) == []
    (pv,) = _static(_kind(new, "PersistentVolume"))
    (pvc,) = [
        c
        for c in _kind(new, "PersistentVolumeClaim").values()
        if c["spec"]["storageClassName"] == "curvine-sc"
    ]
    (old_pv,) = _static(_kind(old, "PersistentVolume"))
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"] != old_pv["metadata"]["name"]
    assert pv["spec"]["claimRef"] == {
        "namespace": pvc["metadata"]["namespace"],
        "name": pvc["metadata"]["name"],
    }
    assert pv["spec"]["csi"]["volumeHandle"] != old_pv["spec"]["csi"]["volumeHandle"]
    assert pv["spec"]["csi"]["volumeAttributes"] == old_pv["spec"]["csi"]["volumeAttributes"]
    (iec,) = [o for o in new if o["kind"] == "InferenceEndpointConfig"]
    assert _mounted_claim(new, iec) == pvc["metadata"]["name"]
