"""The StorageClasses' promises, checked on the rendered objects of dev, test, prod and the FSx
variant (no double: the real rendered YAML, rendered once per session).

A field the API server defaults is read with that default (``reclaimPolicy`` Delete,
``volumeBindingMode`` Immediate): leaving it out deploys the same class, so the tests check the
class the cluster stores, not how the manifest spells it.
"""

from __future__ import annotations

import pytest

from infra.config import AppConfig
from tests.support.objects import Obj, obj_id

# The names the claims and the existing-cluster checks use (k8s/common.py,
# infra/constructs/owned_layer.py).
EBS_SC = "ebs-sc"
CURVINE_SC = "curvine-sc"
# The driver name of the aws-ebs-csi-driver add-on (its CSIDriver object, from the EKS add-on).
EBS_CSI_DRIVER = "ebs.csi.aws.com"


def _storage_class(objs: list[Obj], name: str) -> Obj:
    found = [o for o in objs if o["kind"] == "StorageClass" and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{len(found)} StorageClass {name} rendered"
    return found[0]


@pytest.fixture
def ebs_sc(objs: list[Obj], config: AppConfig) -> Obj:
    if config.kvcache.curvine.master.storage_class is not None:
        pytest.skip("the config names an existing StorageClass for the master volumes")
    return _storage_class(objs, EBS_SC)


@pytest.fixture
def curvine_sc(objs: list[Obj], config: AppConfig) -> Obj:
    if "curvine" not in config.kvcache.l2_backends:
        pytest.skip("no Curvine: the L2 is FSx for Lustre (tests/k8s/test_fsx_l2.py)")
    return _storage_class(objs, CURVINE_SC)


# --- ebs-sc: the Curvine master's metadata and journal volumes --------------------------------


def test_the_ebs_storage_class_is_provisioned_by_the_ebs_csi_add_on(ebs_sc: Obj) -> None:
    """The master's claims are served by the aws-ebs-csi-driver add-on (addons.ebs_csi): its
    driver is ebs.csi.aws.com, the provisioner a reused master class is checked for too."""
    assert ebs_sc["provisioner"] == EBS_CSI_DRIVER, obj_id(ebs_sc)


def test_the_ebs_storage_class_makes_gp3_volumes_formatted_ext4(ebs_sc: Obj) -> None:
    """gp3 (its baseline IOPS and throughput do not depend on the size) formatted ext4: the
    master's directories are sub-directories of the mounts because a fresh ext4 volume holds
    lost+found (tests/k8s/test_k8s_policies.py)."""
    params = ebs_sc["parameters"]
    assert params["type"] == "gp3", obj_id(ebs_sc)
    assert params["csi.storage.k8s.io/fstype"] == "ext4", obj_id(ebs_sc)


def test_the_ebs_storage_class_waits_for_the_first_consumer_because_ebs_volumes_are_zonal(
    ebs_sc: Obj,
) -> None:
    """An EBS volume lives in one Availability Zone: bound before its Pod is scheduled, the
    Curvine master's volume could be made in an AZ its Pod cannot run in, and the Pod would stay
    Pending. WaitForFirstConsumer creates the volume where the scheduler put the Pod."""
    assert ebs_sc.get("volumeBindingMode", "Immediate") == "WaitForFirstConsumer", obj_id(ebs_sc)


def test_the_master_volumes_can_grow_in_place(ebs_sc: Obj) -> None:
    """A master running out of journal or metadata space is fixed by raising the claim's size;
    the API server refuses that unless the class allows expansion (unset means it does not)."""
    assert ebs_sc.get("allowVolumeExpansion") is True, obj_id(ebs_sc)


def test_the_ebs_storage_class_deletes_volumes_whose_claims_are_deleted(ebs_sc: Obj) -> None:
    """The master's claims outlive the StatefulSet (test_master_claims_are_retained); deleting
    a claim on purpose deletes its volume rather than leaving a Released one to clean up."""
    assert ebs_sc.get("reclaimPolicy", "Delete") == "Delete", obj_id(ebs_sc)


# --- curvine-sc: the L2 cache volume ---------------------------------------------------------


def test_the_curvine_storage_class_names_the_csi_driver_rendered_with_it(
    objs: list[Obj], curvine_sc: Obj
) -> None:
    """Kubernetes hands a claim to the CSI driver whose name is the class's provisioner: any other
    name and the L2 claim stays Pending for ever."""
    drivers = {o["metadata"]["name"] for o in objs if o["kind"] == "CSIDriver"}
    assert curvine_sc["provisioner"] in drivers, f"{obj_id(curvine_sc)}: CSIDrivers {drivers}"


def test_the_curvine_storage_class_binds_immediately(curvine_sc: Obj) -> None:
    """The L2 volume is a mount of the cluster-wide Curvine file system, reachable from every
    node: there is no topology to wait for, and every endpoint Pod shares the one claim."""
    assert curvine_sc.get("volumeBindingMode", "Immediate") == "Immediate", obj_id(curvine_sc)


def test_the_curvine_storage_class_deletes_volumes_whose_claims_are_deleted(
    curvine_sc: Obj,
) -> None:
    """Teardown deletes the Curvine claims while the CSI driver still runs, so the driver removes
    each volume; retained, its PersistentVolume would outlive the file system it points into."""
    assert curvine_sc.get("reclaimPolicy", "Delete") == "Delete", obj_id(curvine_sc)
