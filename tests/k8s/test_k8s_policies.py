"""Policy checks over every rendered object (no double: the real rendered YAML)."""

from __future__ import annotations

import tomllib
from typing import Any

from infra.config import AppConfig, parse_config
from infra.config.fields import image_is_pinned
from k8s.app import build_charts, manifests
from k8s.common import gpu_node_selector
from tests.support.config import QUICK_INSTALL_CLUSTER, env_raw, use_existing_cluster

PSA = "pod-security.kubernetes.io/enforce"
WORKLOADS = {"Deployment", "DaemonSet", "StatefulSet"}


def _pod_specs(rendered: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    for o in rendered:
        if o["kind"] in WORKLOADS:
            out.append((o, o["spec"]["template"]["spec"]))
        elif o["kind"] == "CronJob":
            out.append((o, o["spec"]["jobTemplate"]["spec"]["template"]["spec"]))
    return out


def _privileged(spec: dict[str, Any]) -> bool:
    return any(c.get("securityContext", {}).get("privileged") for c in spec["containers"]) or any(
        "hostPath" in v for v in spec.get("volumes", [])
    )


def test_privileged_namespaces_are_curvine_and_the_endpoints(
    rendered: list[dict[str, Any]], dev_config: AppConfig
) -> None:
    """Curvine (FUSE, host NVMe) and the endpoint namespaces (the operator's Pods mount
    /dev/shm/ai_toolkit_cache from the host) enforce privileged; the rest baseline or restricted.
    Everywhere but Curvine, warn and audit stay at restricted."""
    curvine = dev_config.kvcache.curvine.namespace
    endpoints = {e.namespace for e in dev_config.kvcache.endpoints}
    namespaces = {o["metadata"]["name"]: o for o in rendered if o["kind"] == "Namespace"}
    for name, ns in namespaces.items():
        got = ns["metadata"]["labels"]
        if name == curvine or name in endpoints:
            assert got[PSA] == "privileged", name
        else:
            assert got[PSA] in ("baseline", "restricted"), name
        if name != curvine:
            assert got["pod-security.kubernetes.io/warn"] == "restricted", name
            assert got["pod-security.kubernetes.io/audit"] == "restricted", name
    # The whole set, with every Pod Security label (version "latest": the cluster's own).
    kyverno = dev_config.kvcache.kyverno
    expected = {
        curvine: ("privileged", "privileged"),
        **dict.fromkeys(endpoints, ("privileged", "restricted")),
    }
    if kyverno.install:
        expected[kyverno.namespace] = ("baseline", "restricted")
    assert set(namespaces) == set(expected)
    for name, (enforce, warn) in expected.items():
        got = namespaces[name]["metadata"]["labels"]
        assert {k: v for k, v in got.items() if k.startswith("pod-security")} == {
            PSA: enforce,
            f"{PSA}-version": "latest",
            "pod-security.kubernetes.io/warn": warn,
            "pod-security.kubernetes.io/audit": warn,
        }, name
    privileged = {
        o["metadata"]["namespace"] for o, spec in _pod_specs(rendered) if _privileged(spec)
    }
    assert privileged == {curvine}
    # every namespaced object lives in a namespace the charts label
    used = {o["metadata"].get("namespace") for o in rendered} - {None}
    assert used <= set(namespaces)


def test_an_installed_kyverno_keeps_its_own_namespace() -> None:
    """With ``kvcache.kyverno.install: false`` (an existing cluster's Kyverno) the charts render
    no Namespace for Kyverno's: it is not ours. The ownership-aware apply would refuse to take it
    over, and were it ours a stack deletion would delete it with Kyverno inside."""

    raw = env_raw()
    use_existing_cluster(raw, dict(QUICK_INSTALL_CLUSTER))
    kv = raw.setdefault("kvcache", {})
    kv["kyverno"] = {**kv.get("kyverno", {}), "install": False}
    config = parse_config(raw, "config/dev.yaml (existing cluster, installed Kyverno)", "dev")
    rendered = [o for objs in manifests(build_charts(config)).values() for o in objs]
    namespaces = {o["metadata"]["name"] for o in rendered if o["kind"] == "Namespace"}
    assert config.kvcache.kyverno.namespace not in namespaces
    # The app's own namespaces are still rendered (the check above is not vacuous).
    assert config.kvcache.curvine.namespace in namespaces


def test_images_are_pinned(rendered: list[dict[str, Any]]) -> None:
    images = [c["image"] for _, s in _pod_specs(rendered) for c in s["containers"]]
    images += [
        o["spec"]["worker"]["image"] for o in rendered if o["kind"] == "InferenceEndpointConfig"
    ]
    assert len(images) >= 6
    for image in images:
        assert image_is_pinned(image), image
    assert "registry.k8s.io/sig-storage/csi-provisioner:v3.6.0" in images
    assert "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.10.0" in images
    assert not image_is_pinned("busybox") and not image_is_pinned("busybox:latest")


def test_every_container_has_requests_and_limits(rendered: list[dict[str, Any]]) -> None:
    for obj, spec in _pod_specs(rendered):
        for c in spec["containers"] + spec.get("initContainers", []):
            res = c.get("resources", {})
            for kind in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(res.get(kind, {})), (
                    obj["metadata"]["name"],
                    c["name"],
                )
    for iec in (o for o in rendered if o["kind"] == "InferenceEndpointConfig"):
        res = iec["spec"]["worker"]["resources"]
        assert res["limits"]["nvidia.com/gpu"] == res["requests"]["nvidia.com/gpu"] == 1


def test_toml_never_formats(rendered: list[dict[str, Any]], dev_config: AppConfig) -> None:
    cm = next(
        o
        for o in rendered
        if o["kind"] == "ConfigMap" and "curvine-cluster.toml" in o.get("data", {})
    )
    conf = tomllib.loads(cm["data"]["curvine-cluster.toml"])
    assert conf["format_master"] is False and conf["format_worker"] is False
    # Curvine data dirs are sub-directories of the volume mounts (a fresh ext4 volume holds
    # lost+found, which Curvine v0.4.1 refuses with format_master=false).
    sts = next(o for o in rendered if o["kind"] == "StatefulSet")
    mounts = {
        m["name"]: m["mountPath"]
        for m in sts["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    }
    assert conf["master"]["meta_dir"].startswith(mounts["meta"] + "/")
    assert conf["journal"]["journal_dir"].startswith(mounts["journal"] + "/")
    assert {c["metadata"]["name"] for c in sts["spec"]["volumeClaimTemplates"]} == {
        "meta",
        "journal",
    }
    assert all(
        c["spec"]["storageClassName"] == "ebs-sc" for c in sts["spec"]["volumeClaimTemplates"]
    )
    replicas = dev_config.kvcache.curvine.master.replicas
    assert sts["spec"]["replicas"] == replicas == len(conf["journal"]["journal_addrs"])
    assert conf["client"]["ttl_action"] == "delete"
    sc = next(
        o for o in rendered if o["kind"] == "StorageClass" and o["metadata"]["name"] == "curvine-sc"
    )
    assert sc["parameters"]["master-addrs"] == ",".join(
        f"{a['hostname']}:8995" for a in conf["client"]["master_addrs"]
    )


def test_metrics_services_are_annotated(rendered: list[dict[str, Any]]) -> None:
    ports = {
        o["spec"]["ports"][0]["port"]
        for o in rendered
        if o["kind"] == "Service"
        and o["metadata"].get("annotations", {}).get("prometheus.io/scrape") == "true"
    }
    assert ports == {9000, 9001, 9002}


def test_csi_node_propagates_mounts(rendered: list[dict[str, Any]], dev_config: AppConfig) -> None:
    ds = next(
        o
        for o in rendered
        if o["kind"] == "DaemonSet" and o["metadata"]["name"] == "curvine-csi-node"
    )
    spec = ds["spec"]["template"]["spec"]
    plugin = spec["containers"][0]
    assert {
        "name": "kubelet-dir",
        "mountPath": "/var/lib/kubelet",
        "mountPropagation": "Bidirectional",
    } in plugin["volumeMounts"]
    assert int(plugin["resources"]["limits"]["memory"].removesuffix("Mi")) >= 8192
    assert spec["nodeSelector"] == gpu_node_selector(dev_config)
    assert any(o["kind"] == "CSIDriver" and o["metadata"]["name"] == "curvine" for o in rendered)
