"""The Curvine CSI driver: CSIDriver, RBAC, controller Deployment and node DaemonSet.

Does the controller need privilege? No. Curvine's controller service provisions a volume by
running ``curvine-cli fs mkdir -p <path> --master-addrs ...`` (an RPC to the masters) and deletes
one with ``curvine-cli`` plus a PV lookup through the Kubernetes API; it never mounts anything
(CurvineIO/curvine v0.4.1, commit 709f24781f35a0ea8dda01b12212ede007712498,
``curvine-csi/pkg/csi/controller.go``: CreateVolume/CreateCurinveDir/DeleteVolume). The upstream
chart nevertheless runs it privileged with SYS_ADMIN by default (CurvineIO/curvine-helm, commit
adeb66242e975cd64beccf1b5432e4a6da67aef8, ``curvine-csi/values.yaml`` controller
``securityContext``); we do not. The same binary builds its node service in the controller too
(``driver.go`` NewDriver): with MOUNT_MODE=embedded that only creates a Kubernetes client and tries
to read a mount-state Secret, logging a warning when it may not (the controller has no Secret
access), and mounts nothing until a Node* call, which only the kubelet makes on the node plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import cdk8s
from constructs import Construct

from infra.config import AppConfig
from infra.config.node_budget import CSI_REGISTRAR
from k8s.common import (
    gpu_node_selector,
    hardened,
    k8s_for,
    kplus_for,
    meta,
    non_root,
    resources,
    system_node_selector,
)
from k8s.curvine import FUSE_CONTAINER_PORTS, TMP_DIR, fuse_web_port, metrics_service
from k8s.kube_api import KubeApi
from k8s.names import Workload, labels

if TYPE_CHECKING:
    from k8s.kube_api import kube
from k8s.names import CSI_DRIVER as DRIVER

CONTROLLER, NODE = "curvine-csi-controller", "curvine-csi-node"
KUBELET = "/var/lib/kubelet"
SOCKET = "/csi/csi.sock"

# The selectors of these two objects predate this module's Workload values and are immutable on
# a live cluster, so they are kept as they were (``app: <name>``).
CONTROLLER_WL = Workload(CONTROLLER, "csi", selector={"app": CONTROLLER})
NODE_WL = Workload(NODE, "csi", selector={"app": NODE})


class PluginFields(TypedDict):
    """What the controller's and the node's plugin containers share (``Container`` fields)."""

    name: str
    image: str
    image_pull_policy: str
    command: list[str]
    args: list[str]
    env: list[kube.EnvVar]


def _csi_env(k8s: KubeApi, ns: str) -> list[kube.EnvVar]:
    node_name = k8s.EnvVarSource(field_ref=k8s.ObjectFieldSelector(field_path="spec.nodeName"))
    return [
        k8s.EnvVar(name="CSI_ENDPOINT", value=f"unix://{SOCKET}"),
        k8s.EnvVar(name="NODE_NAME", value_from=node_name),
        k8s.EnvVar(name="KUBERNETES_NAMESPACE", value=ns),
        # FUSE runs inside the node plugin container ("embedded"), so the memory limit below is
        # the FUSE process's limit and no unmanaged Pods are created on the GPU nodes.
        k8s.EnvVar(name="MOUNT_MODE", value="embedded"),
    ]


def _host(k8s: KubeApi, name: str, path: str, kind: str) -> kube.Volume:
    return k8s.Volume(name=name, host_path=k8s.HostPathVolumeSource(path=path, type=kind))


def _rolling(k8s: KubeApi) -> kube.DaemonSetUpdateStrategy:
    return k8s.DaemonSetUpdateStrategy(
        type="RollingUpdate",
        rolling_update=k8s.RollingUpdateDaemonSet(max_unavailable=k8s.IntOrString.from_number(1)),
    )


class CsiChart(cdk8s.Chart):
    def __init__(self, scope: Construct, id: str, *, config: AppConfig):
        super().__init__(scope, id, disable_resource_name_hashes=True)
        cv = config.kvcache.curvine
        ns = cv.namespace
        kplus = kplus_for(config)
        k8s = k8s_for(config)
        k8s.KubeCsiDriver(
            self,
            "driver",
            metadata=meta(k8s, DRIVER, labels=labels("curvine-csi", "driver")),
            spec=k8s.CsiDriverSpec(
                attach_required=False,
                pod_info_on_mount=False,
                volume_lifecycle_modes=["Persistent"],
            ),
        )
        for sa in (CONTROLLER, NODE):
            kplus.ServiceAccount(
                self,
                f"{sa}-sa",
                metadata=cdk8s.ApiObjectMetadata(
                    name=sa,
                    namespace=ns,
                    labels=labels(sa, "csi"),
                ),
                automount_token=True,
            )
        self._rbac(k8s, ns)
        socket = k8s.VolumeMount(name="socket-dir", mount_path="/csi")
        tmp = k8s.VolumeMount(name="tmp", mount_path=TMP_DIR)
        plugin = PluginFields(
            name="csi-plugin",
            image=cv.csi_image,
            image_pull_policy="IfNotPresent",
            command=["/opt/curvine/csi"],
            args=["--endpoint=$(CSI_ENDPOINT)", "--nodeid=$(NODE_NAME)"],
            env=_csi_env(k8s, ns),
        )
        controller_plugin = k8s.Container(
            **plugin,
            resources=resources(k8s, 100, 256, cpu_limit_millicores=1000, memory_limit_mib=1024),
            volume_mounts=[socket, tmp],
            # Not privileged: the controller only runs curvine-cli over RPC (see the module doc).
            security_context=hardened(k8s),
        )
        provisioner = k8s.Container(
            name="csi-provisioner",
            image=cv.csi_provisioner_image,
            image_pull_policy="IfNotPresent",
            args=[
                f"--csi-address={SOCKET}",
                "--timeout=300s",
                "--leader-election",
                f"--leader-election-namespace={ns}",
                "--v=2",
            ],
            resources=resources(k8s, 50, 128, cpu_limit_millicores=500, memory_limit_mib=256),
            volume_mounts=[socket],
            security_context=hardened(k8s),
        )
        k8s.KubeDeployment(
            self,
            "controller",
            metadata=meta(k8s, CONTROLLER, namespace=ns, labels=CONTROLLER_WL.labels),
            spec=k8s.DeploymentSpec(
                replicas=1,
                selector=k8s.LabelSelector(match_labels=CONTROLLER_WL.match_labels),
                template=k8s.PodTemplateSpec(
                    metadata=k8s.ObjectMeta(labels=CONTROLLER_WL.pod_labels),
                    spec=k8s.PodSpec(
                        service_account_name=CONTROLLER,
                        # The provisioner and the plugin (PV lookups) call the Kubernetes API.
                        automount_service_account_token=True,
                        # Neither needs root (RPC to the masters, API calls, /tmp): both run as
                        # one unprivileged user, which also owns the socket they share.
                        security_context=non_root(k8s),
                        priority_class_name="system-cluster-critical",
                        # On the system group, off the GPU nodes.
                        node_selector=system_node_selector(config),
                        containers=[controller_plugin, provisioner],
                        volumes=[
                            k8s.Volume(name=n, empty_dir=k8s.EmptyDirVolumeSource())
                            for n in ("socket-dir", "tmp")
                        ],
                    ),
                ),
            ),
        )
        registrar = k8s.Container(
            name="node-driver-registrar",
            image=cv.csi_node_driver_registrar_image,
            image_pull_policy="IfNotPresent",
            args=[
                f"--csi-address={SOCKET}",
                f"--kubelet-registration-path={KUBELET}/plugins/{DRIVER}/csi.sock",
                "--v=2",
            ],
            resources=resources(
                k8s,
                CSI_REGISTRAR.cpu_millicores,
                CSI_REGISTRAR.memory_mib,
                cpu_limit_millicores=200,
                memory_limit_mib=128,
            ),
            volume_mounts=[
                k8s.VolumeMount(name="plugin-dir", mount_path="/csi"),
                k8s.VolumeMount(name="registration-dir", mount_path="/registration"),
            ],
            security_context=hardened(k8s),
        )
        fuse = cv.fuse
        node_plugin = k8s.Container(
            **plugin,
            # One metrics port per FUSE process it may run (k8s/curvine.py), whether or not
            # the static PV is on, so switching it never restarts the plugin (and its mounts).
            ports=[
                k8s.ContainerPort(name=n, container_port=p) for n, p in FUSE_CONTAINER_PORTS.items()
            ],
            resources=resources(
                k8s,
                fuse.cpu_request_millicores,
                fuse.memory_request_mib,
                cpu_limit_millicores=fuse.cpu_limit_millicores,
                memory_limit_mib=fuse.memory_limit_mib,
            ),
            volume_mounts=[
                k8s.VolumeMount(name="plugin-dir", mount_path="/csi"),
                # Bidirectional: the FUSE mount made in this container must propagate to the
                # kubelet's pod volume dirs on the host.
                k8s.VolumeMount(
                    name="kubelet-dir", mount_path=KUBELET, mount_propagation="Bidirectional"
                ),
                k8s.VolumeMount(name="fuse-device", mount_path="/dev/fuse"),
            ],
            # The one privileged container: it mounts FUSE (/dev/fuse, mount(2)) with
            # Bidirectional propagation, which Kubernetes allows only to privileged containers.
            security_context=k8s.SecurityContext(privileged=True),
        )
        k8s.KubeDaemonSet(
            self,
            "node",
            metadata=meta(k8s, NODE, namespace=ns, labels=NODE_WL.labels),
            spec=k8s.DaemonSetSpec(
                selector=k8s.LabelSelector(match_labels=NODE_WL.match_labels),
                update_strategy=_rolling(k8s),
                template=k8s.PodTemplateSpec(
                    metadata=k8s.ObjectMeta(labels=NODE_WL.pod_labels),
                    spec=k8s.PodSpec(
                        service_account_name=NODE,
                        # The plugin keeps its mount state in Secrets of this namespace.
                        automount_service_account_token=True,
                        priority_class_name="system-node-critical",
                        node_selector=gpu_node_selector(config),
                        tolerations=[k8s.Toleration(operator="Exists")],
                        containers=[node_plugin, registrar],
                        volumes=[
                            _host(
                                k8s,
                                "plugin-dir",
                                f"{KUBELET}/plugins/{DRIVER}",
                                "DirectoryOrCreate",
                            ),
                            _host(k8s, "kubelet-dir", KUBELET, "Directory"),
                            _host(
                                k8s, "registration-dir", f"{KUBELET}/plugins_registry", "Directory"
                            ),
                            _host(k8s, "fuse-device", "/dev/fuse", "CharDevice"),
                        ],
                    ),
                ),
            ),
        )
        metrics_service(self, k8s, "curvine-fuse-metrics", ns, NODE_WL, fuse_web_port(cv))

    def _rbac(self, k8s: KubeApi, ns: str) -> None:
        def rule(api_group: str, resources: list[str], verbs: list[str]) -> kube.PolicyRule:
            return k8s.PolicyRule(api_groups=[api_group], resources=resources, verbs=verbs)

        def subjects(name: str) -> list[kube.Subject]:
            return [k8s.Subject(kind="ServiceAccount", name=name, namespace=ns)]

        def cluster_role(name: str, rules: list[kube.PolicyRule]) -> None:
            md = meta(k8s, name, labels=labels(name, "csi"))
            k8s.KubeClusterRole(self, f"{name}-role", metadata=md, rules=rules)
            k8s.KubeClusterRoleBinding(
                self,
                f"{name}-binding",
                metadata=md,
                subjects=subjects(name),
                role_ref=k8s.RoleRef(
                    api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=name
                ),
            )

        def role(name: str, rules: list[kube.PolicyRule]) -> None:
            md = meta(k8s, name, namespace=ns, labels=labels(name, "csi"))
            k8s.KubeRole(self, f"{name}-ns-role", metadata=md, rules=rules)
            k8s.KubeRoleBinding(
                self,
                f"{name}-ns-binding",
                metadata=md,
                subjects=subjects(name),
                role_ref=k8s.RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name=name),
            )

        read = ["get", "list", "watch"]
        cluster_role(
            CONTROLLER,
            [
                rule("", ["persistentvolumes"], [*read, "create", "delete", "patch", "update"]),
                rule("", ["persistentvolumeclaims"], [*read, "update"]),
                rule("storage.k8s.io", ["storageclasses", "csinodes"], read),
                rule("", ["nodes"], read),
                rule("", ["events"], [*read, "create", "patch"]),
            ],
        )
        role(
            CONTROLLER,
            [
                rule(
                    "coordination.k8s.io",
                    ["leases"],
                    [*read, "create", "update", "patch", "delete"],
                ),
            ],
        )
        cluster_role(
            NODE,
            [
                rule("", ["persistentvolumes"], read),
                rule("", ["events"], ["create", "patch"]),
            ],
        )
        # The embedded mount mode keeps each node's mount state in one Secret of the plugin's
        # namespace, curvine-csi-mount-<node>: it gets it, creates it when absent and updates it,
        # nothing else (CurvineIO/curvine v0.4.1, curvine-csi/pkg/csi/k8s_client.go
        # GetSecret, CreateOrUpdateSecret, UpdateSecretData, called from mount_state.go;
        # DeleteSecret is never called). The name holds the node's, unknown here, so the grant
        # cannot name it. ConfigMaps are the standalone mode's (standalone_manager.go): none.
        role(NODE, [rule("", ["secrets"], ["get", "create", "update"])])
