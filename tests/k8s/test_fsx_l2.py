"""The FSx for Lustre L2 in the Kubernetes layer: the static PV/PVC against the Kubernetes schema
(kubernetes-validate, strict) and the FSx CSI driver's static provisioning contract
(kubernetes-sigs/aws-fsx-csi-driver, examples/kubernetes/static_provisioning: driver
fsx.csi.aws.com, volumeHandle = file system id, volumeAttributes dnsname and mountname, mount
option flock); Curvine absent; the endpoints' L2 policy the same as with Curvine. Real charts,
no double."""

from __future__ import annotations

import json
from typing import Any

import kubernetes_validate
import pytest

from infra.config import AppConfig
from infra.facts.versions import SUPPORTED_KUBERNETES
from k8s.app import build_charts
from k8s.foundation import endpoint_namespaces
from k8s.names import curvine_claim
from k8s.policy import POLICY
from tests.support.config import DEPLOYED_FSX, FSX_VARIANT, fsx_config

Obj = dict[str, Any]
CLAIM = f"fsx-l2-{DEPLOYED_FSX.file_system_id}"


@pytest.fixture(scope="module")
def objs(rendered_envs: dict[str, list[Obj]]) -> list[Obj]:
    return rendered_envs[FSX_VARIANT]


def _kind(objs: list[Obj], kind: str) -> list[Obj]:
    return [o for o in objs if o["kind"] == kind]


def test_pv_and_pvc_validate_strictly(objs: list[Obj]) -> None:
    version = SUPPORTED_KUBERNETES[fsx_config().eks.kubernetes_version].schema_version
    volumes = _kind(objs, "PersistentVolume") + _kind(objs, "PersistentVolumeClaim")
    assert len(volumes) == 2 * len(endpoint_namespaces(fsx_config()))
    for obj in volumes:
        kubernetes_validate.validate(obj, version, strict=True)


def test_static_provisioning_contract_of_the_fsx_csi_driver(objs: list[Obj]) -> None:
    config = fsx_config()
    pvs = {
        (pv["spec"]["claimRef"]["namespace"], pv["spec"]["claimRef"]["name"]): pv
        for pv in _kind(objs, "PersistentVolume")
    }
    for ns in endpoint_namespaces(config):
        pv = pvs[(ns, CLAIM)]
        spec = pv["spec"]
        assert spec["csi"] == {
            "driver": "fsx.csi.aws.com",
            "volumeHandle": DEPLOYED_FSX.file_system_id,
            "volumeAttributes": {
                "dnsname": DEPLOYED_FSX.dns_name,
                "mountname": DEPLOYED_FSX.mount_name,
            },
        }
        assert {"flock", "noatime"} <= set(spec["mountOptions"])
        assert spec["accessModes"] == ["ReadWriteMany"]
        assert spec["persistentVolumeReclaimPolicy"] == "Retain"
        assert spec["storageClassName"] == ""
        assert spec["capacity"]["storage"] == f"{config.kvcache.fsx.storage_capacity_gib}Gi"
        (pvc,) = [
            c for c in _kind(objs, "PersistentVolumeClaim") if c["metadata"]["namespace"] == ns
        ]
        assert pvc["metadata"]["name"] == CLAIM
        assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
        assert pvc["spec"]["storageClassName"] == ""
        assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
        # The API server requires a claim's storage request (the OpenAPI schema does not), and
        # binds a static PV only to a claim asking no more than its capacity, in the same
        # volume mode (Filesystem when omitted).
        assert pvc["spec"]["resources"] == {"requests": {"storage": spec["capacity"]["storage"]}}
        for obj in (pv, pvc):
            assert obj["spec"].get("volumeMode", "Filesystem") == "Filesystem"


def test_no_fsx_chart_is_built_without_a_file_system() -> None:
    """A PersistentVolume naming a placeholder is accepted by the API server and leaves every Pod
    that mounts it in ContainerCreating: without the file system no chart is built."""
    with pytest.raises(ValueError, match="file system"):
        build_charts(fsx_config())


def test_curvine_is_not_deployed(objs: list[Obj]) -> None:
    # Kept by name: the L2 policy does not change name between backends.
    left = [
        f"{o['kind']} {o['metadata']['name']}"
        for o in objs
        if "curvine" in o["metadata"]["name"] and o["metadata"]["name"] != POLICY
    ]
    assert not left
    # The endpoint namespaces keep their own ingress policy; Curvine's are gone with it.
    curvine_policies = [
        o for o in _kind(objs, "NetworkPolicy") if o["metadata"]["namespace"] == "curvine"
    ]
    assert not curvine_policies and not _kind(objs, "CSIDriver")
    assert {o["metadata"]["name"] for o in _kind(objs, "StorageClass")} == {"ebs-sc"}


def test_endpoints_and_l2_policy_change_only_the_claim_they_mount(
    objs: list[Obj], rendered_files: dict[str, list[Obj]], dev_config: AppConfig
) -> None:
    """dev with Curvine and dev with FSx: the same endpoints, and the same policy (mount, URL)
    but for the claim, which with FSx is named after the file system."""
    curvine = {
        kind: [
            o
            for f in ("50-l2-policy", "60-endpoints")
            for o in rendered_files[f]
            if o["kind"] == kind
        ]
        for kind in ("ClusterPolicy", "InferenceEndpointConfig")
    }
    assert _kind(objs, "InferenceEndpointConfig") == curvine["InferenceEndpointConfig"]
    fsx_policy = json.dumps(_kind(objs, "ClusterPolicy"))
    curvine_pvc = curvine_claim(dev_config)
    assert f'"claimName": "{CLAIM}"' in fsx_policy and curvine_pvc not in fsx_policy
    assert json.loads(fsx_policy.replace(CLAIM, curvine_pvc)) == curvine["ClusterPolicy"]


def test_evictor_bounds_the_file_system(objs: list[Obj]) -> None:
    config = fsx_config()
    (job,) = _kind(objs, "CronJob")
    env = {
        e["name"]: e["value"]
        for e in job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    capacity = config.kvcache.fsx.storage_capacity_gib * 2**30  # 1200 GiB
    assert int(env["HIGH"]) == capacity * 85 // 100 == 1_095_216_660_480
    assert int(env["LOW"]) == capacity * 70 // 100
