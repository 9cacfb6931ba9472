"""Which charts an environment gets (``k8s.app.build_charts``), by its L2 store."""

from __future__ import annotations

import pytest

from infra.config import parse_config
from k8s.app import build_charts, manifests
from scripts.lib.teardown.kubernetes import labelled
from tests.support.config import BASE, SOURCE, with_overrides


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


@pytest.mark.parametrize("backend", ["none", "tieredstorage"])
def test_without_a_shared_l2_there_is_no_l2_claim_and_no_l2_policy(backend: str) -> None:
    """Endpoints that keep their KV cache in GPU and CPU memory only, or in HyperPod's managed
    tier: nothing to mount, so no Curvine, claim, policy or Kyverno namespace."""
    overrides = {"kvcache.endpoints.0.l2_backend": backend}
    assert chart_names(overrides) == ["00-namespaces", "10-storage", "60-endpoints"]
    config = parse_config(with_overrides(overrides), SOURCE, "dev")
    namespaces = [
        o["metadata"]["name"]
        for o in manifests(build_charts(config))["00-namespaces"]
        if o["kind"] == "Namespace"
    ]
    assert namespaces == ["inference"]


def test_the_l2_claim_and_evictor_are_only_in_namespaces_of_endpoints_on_curvine() -> None:
    """An endpoint on tieredstorage or none in a namespace of its own gets no claim there."""
    base = {**BASE["kvcache"]["endpoints"][0], "replicas": 1}
    endpoints = [
        base,
        {**base, "name": "managed", "namespace": "managed", "l2_backend": "tieredstorage"},
        {**base, "name": "plain", "namespace": "plain", "l2_backend": "none"},
    ]
    overrides = {"kvcache.endpoints": endpoints, "hyperpod.gpu_group.instance_count": 3}
    config = parse_config(with_overrides(overrides), SOURCE, "dev")
    volume = manifests(build_charts(config))["40-l2-volume"]
    # The pool's one evictor and its view of the whole pool live in Curvine's namespace.
    assert {(o["kind"], o["metadata"].get("namespace")) for o in volume} == {
        ("PersistentVolumeClaim", "inference"),
        ("PersistentVolume", None),
        ("PersistentVolumeClaim", "curvine"),
        ("CronJob", "curvine"),
    }


def test_a_static_l2_volume_is_retained_rwx_on_curvine_and_bound_by_the_claim() -> None:
    """``static_pv``: a redeploy or a deleted claim finds the warm cache at the same path."""

    overrides = {
        "kvcache.curvine.static_pv.enabled": True,
        "kvcache.curvine.static_pv.curvine_path": "/l2cache/warm",
        "kvcache.curvine.static_pv.size_gib": 512,
    }
    config = parse_config(with_overrides(overrides), SOURCE, "dev")
    objs = manifests(build_charts(config))["40-l2-volume"]
    (pv,) = [
        o
        for o in objs
        if o["kind"] == "PersistentVolume" and o["metadata"]["name"].startswith("curvine-l2-static")
    ]
    (pvc,) = [
        o
        for o in objs
        if o["kind"] == "PersistentVolumeClaim" and o["metadata"]["namespace"] == "inference"
    ]
    # Both named after the size: the claim of another size needs a volume of its own.
    assert pv["metadata"]["name"] == "curvine-l2-static-512gi"
    assert pvc["metadata"]["name"] == "curvine-pvc-512gi"
    spec = pv["spec"]
    assert spec["persistentVolumeReclaimPolicy"] == "Retain"
    assert spec["accessModes"] == ["ReadWriteMany"] and spec["capacity"] == {"storage": "512Gi"}
    assert spec["storageClassName"] == pvc["spec"]["storageClassName"] == "curvine-sc"
    assert spec["csi"]["driver"] == "curvine"
    assert spec["csi"]["volumeHandle"] == "curvine-l2-static-512gi"
    assert spec["csi"]["volumeAttributes"]["fs-path"] == "/l2cache/warm"
    assert pvc["spec"]["volumeName"] == "curvine-l2-static-512gi"
    assert spec["claimRef"] == {
        "namespace": pvc["metadata"]["namespace"],
        "name": "curvine-pvc-512gi",
    }
    assert pvc["spec"]["resources"]["requests"]["storage"] == "512Gi"
    # Labelled as this project's, like every object it renders (what teardown and adopt read).
    assert labelled(pv["metadata"]) and labelled(pvc["metadata"])
