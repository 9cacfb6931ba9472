"""How the Curvine CSI driver's parts find each other: the kubelet, the CSI sidecars and the
plugin meet at one Unix socket; the plugin learns its node and namespace from its env; the
CSIDriver object tells the kubelet how to call it.

Sources: the Kubernetes CSI sidecar docs (kubernetes-csi.github.io/docs: node-driver-registrar's
``--kubelet-registration-path`` is the socket's path on the host, registered through
``/var/lib/kubelet/plugins_registry``; external-provisioner's ``--csi-address``), the CSIDriver
API (``attachRequired``: whether the kubelet waits for a VolumeAttachment, which only an
external-attacher creates) and CurvineIO/curvine-helm (commit adeb662)
``curvine-csi/templates/{deployment,daemonset}.yaml`` for the plugin's command, flags and env.
"""

from __future__ import annotations

import posixpath
from typing import Any

import pytest

from infra.config import AppConfig
from k8s.csi import CONTROLLER, DRIVER, KUBELET, NODE, SOCKET
from k8s.foundation import CURVINE_SC

Obj = dict[str, Any]


def _pod(objs: list[Obj], kind: str, name: str) -> dict[str, Any]:
    (o,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    spec: dict[str, Any] = o["spec"]["template"]["spec"]
    return spec


def _containers(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in pod["containers"]}


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def _mount_of(pod: dict[str, Any], container: dict[str, Any], path: str) -> dict[str, Any]:
    """The volume behind the mount of ``container`` that holds ``path``."""
    (mount,) = [m for m in container["volumeMounts"] if posixpath.dirname(path) == m["mountPath"]]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    return volume


@pytest.fixture
def controller(rendered: list[Obj]) -> dict[str, Any]:
    return _pod(rendered, "Deployment", CONTROLLER)


@pytest.fixture
def node(rendered: list[Obj]) -> dict[str, Any]:
    return _pod(rendered, "DaemonSet", NODE)


def test_the_plugin_and_its_sidecars_share_one_socket(
    controller: dict[str, Any], node: dict[str, Any]
) -> None:
    """The plugin listens on CSI_ENDPOINT; each sidecar dials ``--csi-address``: the same path,
    in a directory the Pod's containers share (an emptyDir in the controller; on the node, the
    host directory whose path the registrar hands to the kubelet)."""
    for pod, sidecar in ((controller, "csi-provisioner"), (node, "node-driver-registrar")):
        parts = _containers(pod)
        plugin = parts["csi-plugin"]
        assert plugin["command"] == ["/opt/curvine/csi"]
        assert plugin["args"] == ["--endpoint=$(CSI_ENDPOINT)", "--nodeid=$(NODE_NAME)"]
        assert _env(plugin)["CSI_ENDPOINT"] == f"unix://{SOCKET}"
        assert f"--csi-address={SOCKET}" in parts[sidecar]["args"]
        assert _mount_of(pod, plugin, SOCKET) == _mount_of(pod, parts[sidecar], SOCKET)
    assert _mount_of(controller, _containers(controller)["csi-plugin"], SOCKET) == {
        "name": "socket-dir",
        "emptyDir": {},
    }
    host_dir = f"{KUBELET}/plugins/{DRIVER}"
    assert _mount_of(node, _containers(node)["csi-plugin"], SOCKET)["hostPath"] == {
        "path": host_dir,
        "type": "DirectoryOrCreate",
    }
    registrar = _containers(node)["node-driver-registrar"]
    host_socket = f"{host_dir}/{posixpath.basename(SOCKET)}"
    assert f"--kubelet-registration-path={host_socket}" in registrar["args"]


def test_the_registrar_registers_through_the_kubelets_plugin_directory(
    node: dict[str, Any],
) -> None:
    """The kubelet's plugin watcher looks for registration sockets in
    /var/lib/kubelet/plugins_registry; the registrar creates its socket in /registration."""
    registrar = _containers(node)["node-driver-registrar"]
    (mount,) = [m for m in registrar["volumeMounts"] if m["mountPath"] == "/registration"]
    (volume,) = [v for v in node["volumes"] if v["name"] == mount["name"]]
    assert volume["hostPath"] == {"path": f"{KUBELET}/plugins_registry", "type": "Directory"}


def test_the_plugin_knows_its_node_and_the_namespace_of_its_mount_state(
    controller: dict[str, Any], node: dict[str, Any], dev_config: AppConfig
) -> None:
    """--nodeid is the node's name (the CSINode entry the kubelet matches); the embedded mount
    mode runs FUSE inside the node plugin (so its memory limit is the FUSE client's) and keeps
    mount state in the namespace its Role covers (tests/k8s/test_csi_rbac.py)."""
    for pod in (controller, node):
        env = _env(_containers(pod)["csi-plugin"])
        assert env["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
        assert env["MOUNT_MODE"] == "embedded"
        assert env["KUBERNETES_NAMESPACE"] == dev_config.kvcache.curvine.namespace


def test_the_kubelet_calls_the_driver_without_an_attach_step(rendered: list[Obj]) -> None:
    """No external-attacher runs, so ``attachRequired`` must be false (true: the kubelet waits for
    a VolumeAttachment nobody creates, and every endpoint Pod stays ContainerCreating); the
    driver serves PersistentVolumes only and needs no Pod info on mount; it is the provisioner
    the Curvine StorageClass names."""
    (driver,) = [o for o in rendered if o["kind"] == "CSIDriver"]
    assert driver["metadata"]["name"] == DRIVER
    assert driver["spec"] == {
        "attachRequired": False,
        "podInfoOnMount": False,
        "volumeLifecycleModes": ["Persistent"],
    }
    (sc,) = [
        o for o in rendered if o["kind"] == "StorageClass" and o["metadata"]["name"] == CURVINE_SC
    ]
    assert sc["provisioner"] == DRIVER
    attachers = [
        c
        for o in rendered
        if o["kind"] in ("Deployment", "DaemonSet")
        for c in o["spec"]["template"]["spec"]["containers"]
        if "csi-attacher" in c["image"]
    ]
    assert attachers == []


def test_the_provisioner_elects_a_leader_where_its_lease_role_is(
    controller: dict[str, Any], rendered: list[Obj], dev_config: AppConfig
) -> None:
    """One controller replica, with leader election on so a second one during a rollout does not
    provision twice; the lease lives in the namespace its Role grants; CreateVolume gets 300 s
    (a mkdir over RPC to the masters, which may be electing a leader)."""
    (deployment,) = [
        o for o in rendered if o["kind"] == "Deployment" and o["metadata"]["name"] == CONTROLLER
    ]
    assert deployment["spec"]["replicas"] == 1
    ns = dev_config.kvcache.curvine.namespace
    args = _containers(controller)["csi-provisioner"]["args"]
    assert {"--leader-election", f"--leader-election-namespace={ns}", "--timeout=300s"} <= set(args)


def test_the_node_plugin_is_replaced_one_node_at_a_time(rendered: list[Obj]) -> None:
    """In the embedded mode the FUSE mounts live in the node plugin: restarting it breaks the L2
    mount of every endpoint Pod on that node until it is back: a rollout takes one node at a
    time."""
    (ds,) = [o for o in rendered if o["kind"] == "DaemonSet" and o["metadata"]["name"] == NODE]
    assert ds["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1},
    }


def test_the_node_plugin_reaches_fuse_and_the_kubelets_pods(node: dict[str, Any]) -> None:
    """/dev/fuse must be the host's character device and the kubelet's directory must exist
    (a typo'd path would otherwise be created empty and mounts would land nowhere)."""
    volumes = {v["name"]: v.get("hostPath") for v in node["volumes"]}
    assert volumes["fuse-device"] == {"path": "/dev/fuse", "type": "CharDevice"}
    assert volumes["kubelet-dir"] == {"path": KUBELET, "type": "Directory"}
    mounts = {m["name"]: m["mountPath"] for m in _containers(node)["csi-plugin"]["volumeMounts"]}
    assert mounts["fuse-device"] == "/dev/fuse"  # where libfuse opens it
    assert mounts["kubelet-dir"] == KUBELET


def test_the_node_plugin_runs_on_every_gpu_node_whatever_its_taints(
    node: dict[str, Any],
) -> None:
    """An endpoint Pod tolerates its GPU node's taints (HyperPod's, nvidia.com/gpu); a node plugin
    that did not would leave that node's L2 mounts unserved. One toleration that matches every
    taint: operator Exists with no key and no effect."""
    assert node["tolerations"] == [{"operator": "Exists"}]


def test_the_driver_runs_before_ordinary_pods(
    controller: dict[str, Any], node: dict[str, Any]
) -> None:
    """The node plugin serves every L2 mount on its node and the controller every new volume:
    both outrank workloads when a node is short of room."""
    assert node["priorityClassName"] == "system-node-critical"
    assert controller["priorityClassName"] == "system-cluster-critical"


def test_the_fixed_size_csi_containers_keep_their_reviewed_sizes(
    controller: dict[str, Any], node: dict[str, Any]
) -> None:
    """Only the node plugin (the FUSE client) is sized from config. The others are small and
    fixed: the registrar sits on every GPU node (its requests count against what the model Pod
    can have, tests/k8s/test_rehearsal_budget.py), the controller's two on the system group. A
    change here is a sizing decision, not a refactor."""

    def size(c: dict[str, Any]) -> tuple[str, str, str, str]:
        r = c["resources"]
        return (
            r["requests"]["cpu"],
            r["requests"]["memory"],
            r["limits"]["cpu"],
            r["limits"]["memory"],
        )

    sizes = {
        name: size(_containers(pod)[name])
        for pod, name in (
            (controller, "csi-plugin"),
            (controller, "csi-provisioner"),
            (node, "node-driver-registrar"),
        )
    }
    assert sizes == {
        "csi-plugin": ("100m", "256Mi", "1000m", "1024Mi"),
        "csi-provisioner": ("50m", "128Mi", "500m", "256Mi"),
        "node-driver-registrar": ("20m", "64Mi", "200m", "128Mi"),
    }


# Flags the pinned sidecars define (Go's flag package exits on any other): cmd/csi-provisioner of
# kubernetes-csi/external-provisioner v3.6.0 and cmd/csi-node-driver-registrar of
# kubernetes-csi/node-driver-registrar v2.10.0, the ones this chart uses or could, plus klog's -v.
SIDECAR_FLAGS = {
    "csi-provisioner": {
        "csi-address",
        "timeout",
        "leader-election",
        "leader-election-namespace",
        "extra-create-metadata",
        "worker-threads",
        "http-endpoint",
        "v",
    },
    "node-driver-registrar": {
        "csi-address",
        "kubelet-registration-path",
        "http-endpoint",
        "health-port",
        "timeout",
        "v",
    },
}


# The version each flag set was read from: a move to another version must recheck its flags.
SIDECAR_TAGS = {"csi-provisioner": ":v3.6.0", "node-driver-registrar": ":v2.10.0"}


@pytest.mark.parametrize("sidecar", sorted(SIDECAR_FLAGS))
def test_every_sidecar_flag_is_one_its_version_defines(
    controller: dict[str, Any], node: dict[str, Any], sidecar: str
) -> None:
    pod = controller if sidecar == "csi-provisioner" else node
    container = _containers(pod)[sidecar]
    assert container["image"].endswith(SIDECAR_TAGS[sidecar])
    for arg in container["args"]:
        assert arg.startswith("--"), arg
        assert arg[2:].split("=", 1)[0] in SIDECAR_FLAGS[sidecar], arg
    assert "--v=2" in container["args"]  # klog level 2: each volume operation is logged
