"""Curvine's FUSE metrics on a node that mounts more than one Curvine volume: every FUSE process
the CSI node plugin may run there binds a metrics port of its own, and the collector scrapes the
process the endpoints' claims mount. ``tests/doubles/curvine_csi.py`` models how the pinned driver
turns volumes into FUSE processes; what a real node does is a row of docs/verification.md."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig, parse_config
from k8s.app import build_charts, manifests
from k8s.names import curvine_static_volume
from k8s.observability import scrape_targets
from tests.doubles.curvine_csi import fuse_processes, provisioned_context
from tests.support.config import SOURCE, with_overrides

Obj = dict[str, Any]
Rendered = tuple[AppConfig, list[Obj]]


def _rendered(static_pv: bool) -> Rendered:
    config = parse_config(
        with_overrides({"kvcache.curvine.static_pv.enabled": static_pv}), SOURCE, "dev"
    )
    return config, [o for objs in manifests(build_charts(config)).values() for o in objs]


@pytest.fixture(scope="module", params=[False, True], ids=["dynamic claims", "static PV"])
def rendered_l2(request: pytest.FixtureRequest) -> Rendered:
    return _rendered(request.param)


def _one(objs: list[Obj], kind: str, name: str) -> Obj:
    (found,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def _storage_class_context(objs: list[Obj], pv: str = "pvc-5f1c2a3b") -> dict[str, str]:
    """The volume context of a PV that curvine-sc provisions."""
    return provisioned_context(_one(objs, "StorageClass", "curvine-sc")["parameters"], pv)


def _claims_context(config: AppConfig, objs: list[Obj]) -> dict[str, str]:
    """The volume context of what the endpoints' Curvine claim binds."""
    if config.kvcache.curvine.static_pv.enabled:
        volume = curvine_static_volume(config)
        attributes: dict[str, str] = _one(objs, "PersistentVolume", volume)["spec"]["csi"][
            "volumeAttributes"
        ]
        return attributes
    return _storage_class_context(objs)


def _plugin_ports(objs: list[Obj]) -> set[int]:
    ds = _one(objs, "DaemonSet", "curvine-csi-node")
    (plugin,) = [
        c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "csi-plugin"
    ]
    return {p["containerPort"] for p in plugin.get("ports", [])}


def test_two_fuse_mounts_on_one_node_serve_metrics_on_different_ports() -> None:
    """curvine-sc's volumes and the static PV differ in fs-path, so a node that stages one of
    each (claims switched to the static PV while Pods on the old ones still run, or back) runs
    two FUSE processes in the node plugin's one container. Each binds its own port, and the
    plugin declares both whichever the config uses, so switching never restarts the plugin."""
    _config, objs = _rendered(static_pv=True)
    processes = fuse_processes([_storage_class_context(objs), _claims_context(_config, objs)])
    assert len(processes) == 2
    ports = sorted(processes.values())
    assert len(set(ports)) == len(ports), f"two FUSE processes on one node both bind {ports}"
    assert set(ports) <= _plugin_ports(objs)
    assert _plugin_ports(objs) == _plugin_ports(_rendered(static_pv=False)[1])


def test_endpoint_pods_of_every_namespace_share_one_fuse_process_per_node() -> None:
    """Two endpoint Pods on one node, in two namespaces, mount two claims on curvine-sc: one
    mount key, so one FUSE process and one metrics port, never a second bind."""
    _config, objs = _rendered(static_pv=False)
    contexts = [_storage_class_context(objs, pv) for pv in ("pvc-5f1c2a3b", "pvc-9e8d7c6b")]
    assert len(fuse_processes(contexts)) == 1


def test_the_collector_scrapes_the_fuse_process_the_claims_mount(rendered_l2: Rendered) -> None:
    """The Service's metrics port, the collector's target, the NetworkPolicy's admitted port and
    a port the plugin declares are the one the claims' FUSE process binds."""
    config, objs = rendered_l2
    (port,) = fuse_processes([_claims_context(config, objs)]).values()
    svc = _one(objs, "Service", "curvine-fuse-metrics")
    (metrics,) = [p for p in svc["spec"]["ports"] if p["name"] == "metrics"]
    assert (metrics["port"], metrics["targetPort"]) == (port, port)
    assert svc["metadata"]["annotations"]["prometheus.io/port"] == str(port)
    assert scrape_targets(config)["curvine-fuse"] == (
        config.kvcache.curvine.namespace,
        "curvine-fuse-metrics",
        port,
    )
    policy = _one(objs, "NetworkPolicy", "curvine-fuse-metrics-ingress")
    assert [p["port"] for r in policy["spec"]["ingress"] for p in r["ports"]] == [port]
    assert port in _plugin_ports(objs)
