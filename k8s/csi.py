"""The Curvine CSI driver: CSIDriver, RBAC, controller Deployment and node DaemonSet."""

from __future__ import annotations

from typing import Any

import cdk8s
from constructs import Construct

from infra.config import AppConfig
from k8s.common import kplus_for, labels, raw, resources
from k8s.curvine import FUSE_WEB_PORT, _metrics_service

DRIVER = "curvine"
CONTROLLER, NODE = "curvine-csi-controller", "curvine-csi-node"
KUBELET = "/var/lib/kubelet"
SOCKET = "/csi/csi.sock"


def _csi_env(ns: str) -> list[dict[str, Any]]:
    return [
        {"name": "CSI_ENDPOINT", "value": f"unix://{SOCKET}"},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "KUBERNETES_NAMESPACE", "value": ns},
        # FUSE runs inside the node plugin container ("embedded"), so the memory limit below is
        # the FUSE process's limit and no unmanaged Pods are created on the GPU nodes.
        {"name": "MOUNT_MODE", "value": "embedded"},
    ]


class CsiChart(cdk8s.Chart):
    def __init__(self, scope: Construct, id: str, *, config: AppConfig):
        super().__init__(scope, id, disable_resource_name_hashes=True)
        cv = config.kvcache.curvine
        ns = cv.namespace
        kplus = kplus_for(config)
        raw(self, "driver", {
            "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": {"name": DRIVER, "labels": labels("curvine-csi", "driver")},
            "spec": {"attachRequired": False, "podInfoOnMount": False,
                     "volumeLifecycleModes": ["Persistent"]},
        })  # fmt: skip
        for sa in (CONTROLLER, NODE):
            kplus.ServiceAccount(
                self, f"{sa}-sa",
                metadata=cdk8s.ApiObjectMetadata(name=sa, namespace=ns, labels=labels(sa, "csi")),
                automount_token=True,
            )  # fmt: skip
        self._rbac(ns)
        fuse = cv.fuse
        plugin = {
            "name": "csi-plugin", "image": cv.csi_image, "imagePullPolicy": "IfNotPresent",
            "command": ["/opt/curvine/csi"],
            "args": ["--endpoint=$(CSI_ENDPOINT)", "--nodeid=$(NODE_NAME)"],
            "env": _csi_env(ns),
            "securityContext": {"privileged": True},
        }  # fmt: skip
        provisioner = {
            "name": "csi-provisioner", "image": cv.csi_provisioner_image,
            "imagePullPolicy": "IfNotPresent",
            "args": [f"--csi-address={SOCKET}", "--timeout=300s", "--leader-election",
                     f"--leader-election-namespace={ns}", "--v=2"],
            "resources": resources(50, 128, cpu_limit_millicores=500, memory_limit_mib=256),
            "volumeMounts": [{"name": "socket-dir", "mountPath": "/csi"}],
        }  # fmt: skip
        raw(self, "controller", {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": CONTROLLER, "namespace": ns, "labels": labels(CONTROLLER, "csi")},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": CONTROLLER}},
                "template": {
                    "metadata": {"labels": {"app": CONTROLLER, **labels(CONTROLLER, "csi")}},
                    "spec": {
                        "serviceAccountName": CONTROLLER,
                        "priorityClassName": "system-cluster-critical",
                        "containers": [
                            {**plugin, "resources": resources(100, 256, cpu_limit_millicores=1000,
                                                              memory_limit_mib=1024),
                             "volumeMounts": [{"name": "socket-dir", "mountPath": "/csi"}]},
                            provisioner,
                        ],
                        "volumes": [{"name": "socket-dir", "emptyDir": {}}],
                    },
                },
            },
        })  # fmt: skip
        registrar = {
            "name": "node-driver-registrar", "image": cv.csi_node_driver_registrar_image,
            "imagePullPolicy": "IfNotPresent",
            "args": [f"--csi-address={SOCKET}",
                     f"--kubelet-registration-path={KUBELET}/plugins/{DRIVER}/csi.sock", "--v=2"],
            "resources": resources(20, 64, cpu_limit_millicores=200, memory_limit_mib=128),
            "volumeMounts": [{"name": "plugin-dir", "mountPath": "/csi"},
                             {"name": "registration-dir", "mountPath": "/registration"}],
        }  # fmt: skip
        node_plugin = {
            **plugin,
            "ports": [{"name": "fuse-metrics", "containerPort": FUSE_WEB_PORT}],
            "resources": resources(
                fuse.cpu_request_millicores, fuse.memory_request_mib,
                cpu_limit_millicores=fuse.cpu_limit_millicores,
                memory_limit_mib=fuse.memory_limit_mib,
            ),
            "volumeMounts": [
                {"name": "plugin-dir", "mountPath": "/csi"},
                # Bidirectional: the FUSE mount made in this container must propagate to the
                # kubelet's pod volume dirs on the host (cdk8s-plus has no mountPropagation).
                {"name": "kubelet-dir", "mountPath": KUBELET, "mountPropagation": "Bidirectional"},
                {"name": "fuse-device", "mountPath": "/dev/fuse"},
            ],
        }  # fmt: skip
        sel = {"app": NODE}
        raw(self, "node", {
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": NODE, "namespace": ns, "labels": labels(NODE, "csi")},
            "spec": {
                "selector": {"matchLabels": sel},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                "template": {
                    "metadata": {"labels": {**sel, **labels(NODE, "csi")}},
                    "spec": {
                        "serviceAccountName": NODE,
                        "priorityClassName": "system-node-critical",
                        "nodeSelector": dict(config.hyperpod.gpu_group.labels),
                        "tolerations": [{"operator": "Exists"}],
                        "containers": [node_plugin, registrar],
                        "volumes": [
                            _host("plugin-dir", f"{KUBELET}/plugins/{DRIVER}", "DirectoryOrCreate"),
                            _host("kubelet-dir", KUBELET, "Directory"),
                            _host("registration-dir", f"{KUBELET}/plugins_registry", "Directory"),
                            _host("fuse-device", "/dev/fuse", "CharDevice"),
                        ],
                    },
                },
            },
        })  # fmt: skip
        _metrics_service(self, "curvine-fuse-metrics", ns, sel, FUSE_WEB_PORT)

    def _rbac(self, ns: str) -> None:
        def cluster_role(name: str, rules: list[dict[str, Any]]) -> None:
            raw(self, f"{name}-role", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name, "labels": labels(name, "csi")}, "rules": rules,
            })  # fmt: skip
            raw(self, f"{name}-binding", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": name, "labels": labels(name, "csi")},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
            })  # fmt: skip

        def role(name: str, rules: list[dict[str, Any]]) -> None:
            raw(self, f"{name}-ns-role", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": name, "namespace": ns, "labels": labels(name, "csi")},
                "rules": rules,
            })  # fmt: skip
            raw(self, f"{name}-ns-binding", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": name, "namespace": ns, "labels": labels(name, "csi")},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
            })  # fmt: skip

        read = ["get", "list", "watch"]
        cluster_role(CONTROLLER, [
            {"apiGroups": [""], "resources": ["persistentvolumes"],
             "verbs": [*read, "create", "delete", "patch", "update"]},
            {"apiGroups": [""], "resources": ["persistentvolumeclaims"],
             "verbs": [*read, "update"]},
            {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses", "csinodes"],
             "verbs": read},
            {"apiGroups": [""], "resources": ["nodes"], "verbs": read},
            {"apiGroups": [""], "resources": ["events"], "verbs": [*read, "create", "patch"]},
        ])  # fmt: skip
        role(CONTROLLER, [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
             "verbs": [*read, "create", "update", "patch", "delete"]},
        ])  # fmt: skip
        cluster_role(NODE, [
            {"apiGroups": [""], "resources": ["persistentvolumes"], "verbs": read},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
        ])  # fmt: skip
        # Mount state is kept in Secrets/ConfigMaps of the Curvine namespace only.
        role(NODE, [
            {"apiGroups": [""], "resources": ["secrets", "configmaps"],
             "verbs": [*read, "create", "update", "patch", "delete"]},
        ])  # fmt: skip


def _host(name: str, path: str, kind: str) -> dict[str, Any]:
    return {"name": name, "hostPath": {"path": path, "type": kind}}
