"""Which charts an environment gets (``k8s.app.build_charts``), by its L2 store."""

from __future__ import annotations

from infra.config import parse_config
from k8s.app import build_charts, manifests
from scripts.lib.teardown.kubernetes import labelled
from tests.infra.config.builders import SOURCE, with_overrides


def chart_names(overrides: dict[str, object]) -> list[str]:
    config = parse_config(with_overrides(overrides), SOURCE, "dev")
    return [name for name, _ in build_charts(config).ordered]


def test_curvine_as_l2_gets_every_chart_in_apply_order() -> None:
    assert chart_names({}) == [
        "00-namespaces",
        "10-storage",
        "20-curvine",
        "25-curvine-network-policy",
        "30-curvine-csi",
        "40-l2-volume",
        "50-l2-policy",
        "60-endpoints",
    ]


def test_without_a_shared_l2_there_is_no_l2_claim_and_no_l2_policy() -> None:
    """Endpoints that keep their KV cache in GPU and CPU memory only: nothing to mount."""
    no_l2 = {"kvcache.endpoints.0.l2_backend": "none"}
    assert chart_names(no_l2) == ["00-namespaces", "10-storage", "60-endpoints"]


def test_a_static_l2_volume_is_retained_rwx_on_curvine_and_bound_by_the_claim() -> None:
    """``static_pv``: a redeploy or a deleted claim finds the warm cache at the same path."""

    overrides = {
        "kvcache.curvine.static_pv.enabled": True,
        "kvcache.curvine.static_pv.curvine_path": "/l2cache/warm",
        "kvcache.curvine.static_pv.size_gib": 512,
    }
    config = parse_config(with_overrides(overrides), SOURCE, "dev")
    objs = manifests(build_charts(config))["40-l2-volume"]
    (pv,) = [o for o in objs if o["kind"] == "PersistentVolume"]
    (pvc,) = [o for o in objs if o["kind"] == "PersistentVolumeClaim"]
    assert pv["metadata"]["name"] == "curvine-l2-static"
    spec = pv["spec"]
    assert spec["persistentVolumeReclaimPolicy"] == "Retain"
    assert spec["accessModes"] == ["ReadWriteMany"] and spec["capacity"] == {"storage": "512Gi"}
    assert spec["storageClassName"] == pvc["spec"]["storageClassName"] == "curvine-sc"
    assert spec["csi"]["driver"] == "curvine" and spec["csi"]["volumeHandle"] == "curvine-l2-static"
    assert spec["csi"]["volumeAttributes"]["fs-path"] == "/l2cache/warm"
    assert pvc["spec"]["volumeName"] == "curvine-l2-static"
    assert pvc["spec"]["resources"]["requests"]["storage"] == "512Gi"
    # Labelled as this project's, like every object it renders (what teardown and adopt read).
    assert labelled(pv["metadata"]) and labelled(pvc["metadata"])
