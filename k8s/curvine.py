"""Curvine as Kubernetes objects: config, masters, workers and their metrics Services."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import cdk8s
from constructs import Construct

from infra.config import AppConfig
from infra.config.curvine import CurvineConfig
from k8s.common import (
    gpu_node_selector,
    hardened,
    k8s_for,
    kplus_for,
    master_storage_class,
    meta,
    non_root,
    port,
    resources,
    system_node_selector,
)
from k8s.kube_api import KubeApi
from k8s.names import (
    CURVINE_DATA_DIR,
    CURVINE_MASTER,
    CURVINE_WORKER,
    MASTER_WL,
    WORKER_WL,
    Workload,
    labels,
)

if TYPE_CHECKING:
    from k8s.kube_api import kube

MASTER, WORKER = CURVINE_MASTER, CURVINE_WORKER
RPC_PORT, JOURNAL_PORT, WORKER_RPC_PORT = 8995, 8996, 8997
MASTER_WEB_PORT, WORKER_WEB_PORT, FUSE_WEB_PORT = 9000, 9001, 9002
# curvine-fuse serves its metrics on --web-port (default 9002). The CSI node plugin runs one FUSE
# process per node for each distinct set of volume parameters (the mount key: master-addrs,
# fs-path and the flags), all inside its own container, so two parameter sets mounted on one node
# need two ports: curvine-sc's volumes use FUSE_WEB_PORT, the static PV FUSE_STATIC_WEB_PORT
# (CurvineIO/curvine v0.4.1: curvine-csi/pkg/csi/node.go NodeStageVolume,
# volume_handle.go GenerateMountKeyWithFuseParams, curvine-fuse/src/web_server.rs).
FUSE_STATIC_WEB_PORT = 9003
# The node plugin's container ports, one per FUSE process it may run.
FUSE_CONTAINER_PORTS = {"fuse-metrics": FUSE_WEB_PORT, "fuse-static": FUSE_STATIC_WEB_PORT}
CONFIG_MAP = "curvine-cluster-config"
CONF_DIR = "/app/curvine/conf"
WORKER_HOST_PATH = CURVINE_DATA_DIR
# Mount points of the master volumes. Curvine is pointed at a sub-directory of each: a fresh ext4
# volume holds lost+found, and with format_master=false Curvine refuses a non-empty directory
# that is not a RocksDB store, but creates a missing one. So a fresh cluster comes up, and no
# restart ever formats anything: no bootstrap step is needed.
META_MOUNT, JOURNAL_MOUNT = "/data/meta", "/data/journal"
WORKER_DATA_MOUNT = "/data/curvine"
# What the image writes outside its volumes (CurvineIO/curvine v0.4.1,
# commit 709f24781f35a0ea8dda01b12212ede007712498): curvine-docker/deploy/entrypoint.sh creates
# ${CURVINE_HOME}/logs and tees the server's output to logs/<service>.out there, with
# CURVINE_HOME=/app/curvine (curvine-docker/deploy/Dockerfile_ubuntu24). The server itself logs
# to stdout (crates/core/runtime/src/common/logger.rs: log_dir defaults to "stdout"). /tmp is
# given for anything else that expects a writable temporary directory. Everything else is
# read-only.
LOG_DIR, TMP_DIR = "/app/curvine/logs", "/tmp"


def fuse_web_port(cv: CurvineConfig) -> int:
    """Metrics port of the FUSE process that the endpoints' claims mount: the static PV's
    when ``static_pv`` is on, else curvine-sc's."""
    return FUSE_STATIC_WEB_PORT if cv.static_pv.enabled else FUSE_WEB_PORT


def master_host(cv: CurvineConfig, i: int) -> str:
    """Stable DNS name of master ``i`` under the headless Service."""
    return f"{MASTER}-{i}.{MASTER}.{cv.namespace}.svc.cluster.local"


def master_addrs(cv: CurvineConfig) -> str:
    return ",".join(f"{master_host(cv, i)}:{RPC_PORT}" for i in range(cv.master.replicas))


def cluster_toml(cv: CurvineConfig) -> str:
    """``curvine-cluster.toml``. format_master/format_worker are ALWAYS written false: Curvine
    defaults both to true, which wipes master metadata and worker data on every start."""
    peers = ",\n".join(
        f'  {{ id = {i + 1}, hostname = "{master_host(cv, i)}", port = {JOURNAL_PORT} }}'
        for i in range(cv.master.replicas)
    )
    clients = ",\n".join(
        f'  {{ hostname = "{master_host(cv, i)}", port = {RPC_PORT} }}'
        for i in range(cv.master.replicas)
    )
    w = cv.worker
    return f"""format_master = false
format_worker = false
cluster_id = "curvine"

[master]
rpc_port = {RPC_PORT}
web_port = {MASTER_WEB_PORT}
meta_dir = "{META_MOUNT}/rocksdb"

[journal]
rpc_port = {JOURNAL_PORT}
journal_dir = "{JOURNAL_MOUNT}/raft"
journal_addrs = [
{peers}
]

[worker]
rpc_port = {WORKER_RPC_PORT}
web_port = {WORKER_WEB_PORT}
dir_reserved = "{w.reserved_gib}GB"
data_dir = ["[SSD:{w.capacity_gib}GB]{WORKER_DATA_MOUNT}"]

[client]
master_addrs = [
{clients}
]
ttl_ms = "{cv.ttl_hours}h"
ttl_action = "delete"

[fuse]
web_port = {FUSE_WEB_PORT}
io_threads = {cv.fuse.io_threads}
worker_threads = {cv.fuse.worker_threads}
"""


# Servers bind every address of the Pod (crates/core/rpc/src/server/rpc_server.rs reads it; the
# image sets it too), so a connect to 127.0.0.1 reaches the same listener as one to the Pod's IP.
BIND_ALL = ("ORPC_BIND_HOSTNAME", "0.0.0.0")


def probe_command(number: int) -> list[str]:
    """A TCP connect to ``number`` on the container's own loopback (bash's /dev/tcp; the image is
    Ubuntu 24.04 with bash): exit 0 once the server accepts connections."""
    return ["bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{number}"]


class Probes(TypedDict):
    """A container's three probes, as the keyword arguments of ``Container``."""

    startup_probe: kube.Probe
    readiness_probe: kube.Probe
    liveness_probe: kube.Probe


def _local_probes(k8s: KubeApi, number: int) -> Probes:
    """Started, ready and alive: the server accepts connections on ``number``.

    The kubelet runs the connect inside the container, not from the node: no packet crosses the
    Pod's network interface, where the network policy agent filters, so the Curvine
    NetworkPolicies need not admit any node address. A tcpSocket probe would come from whichever
    node address the kernel picks, and HyperPod nodes carry several; admitting the HyperPod
    subnet instead would admit every Pod of the cluster too (Pods take their addresses from the
    same subnet) to the RPC port the probe checks."""

    def probe(period: int, failures: int) -> kube.Probe:
        return k8s.Probe(
            exec=k8s.ExecAction(command=probe_command(number)),
            period_seconds=period,
            failure_threshold=failures,
            timeout_seconds=5,
        )

    # Startup allows 10 minutes: a master replays its journal before it listens.
    return {
        "startup_probe": probe(10, 60),
        "readiness_probe": probe(10, 3),
        "liveness_probe": probe(20, 6),
    }


def metrics_service(
    scope: Construct, k8s: KubeApi, name: str, ns: str, workload: Workload, number: int
) -> kube.KubeService:
    """A Service that exposes one workload's metrics port for scraping."""
    return k8s.KubeService(
        scope,
        name,
        metadata=meta(
            k8s,
            name,
            namespace=ns,
            labels=labels(name, "metrics"),
            annotations={
                "prometheus.io/scrape": "true",
                "prometheus.io/port": str(number),
                "prometheus.io/path": "/metrics",
            },
        ),
        spec=k8s.ServiceSpec(
            selector=workload.match_labels,
            ports=[k8s.ServicePort(name="metrics", port=number, target_port=port(k8s, number))],
        ),
    )


def writable_dirs(k8s: KubeApi) -> tuple[list[kube.Volume], list[kube.VolumeMount]]:
    """emptyDir volumes and their mounts for the paths the Curvine image writes."""
    volumes = [k8s.Volume(name=n, empty_dir=k8s.EmptyDirVolumeSource()) for n in ("logs", "tmp")]
    mounts = [
        k8s.VolumeMount(name="logs", mount_path=LOG_DIR),
        k8s.VolumeMount(name="tmp", mount_path=TMP_DIR),
    ]
    return volumes, mounts


class CurvineChart(cdk8s.Chart):
    """ConfigMap, master StatefulSet (+ Services) and the worker DaemonSet on the GPU nodes."""

    def __init__(self, scope: Construct, id: str, *, config: AppConfig):
        super().__init__(scope, id, disable_resource_name_hashes=True)
        cv = config.kvcache.curvine
        ns = cv.namespace
        kplus = kplus_for(config)
        k8s = k8s_for(config)
        kplus.ConfigMap(
            self,
            "config",
            metadata=cdk8s.ApiObjectMetadata(
                name=CONFIG_MAP,
                namespace=ns,
                labels=labels("curvine", "config"),
            ),
            data={"curvine-cluster.toml": cluster_toml(cv)},
        )
        k8s.KubeService(
            self,
            "master-headless",
            metadata=meta(k8s, MASTER, namespace=ns, labels=MASTER_WL.labels),
            spec=k8s.ServiceSpec(
                cluster_ip="None",
                publish_not_ready_addresses=True,
                selector=MASTER_WL.match_labels,
                ports=[
                    k8s.ServicePort(name="rpc", port=RPC_PORT, target_port=port(k8s, RPC_PORT)),
                    k8s.ServicePort(
                        name="journal",
                        port=JOURNAL_PORT,
                        target_port=port(k8s, JOURNAL_PORT),
                    ),
                ],
            ),
        )
        self._master(config, k8s)
        metrics_service(self, k8s, f"{MASTER}-metrics", ns, MASTER_WL, MASTER_WEB_PORT)
        self._worker(config, k8s)
        metrics_service(self, k8s, f"{WORKER}-metrics", ns, WORKER_WL, WORKER_WEB_PORT)

    def _container(
        self,
        k8s: KubeApi,
        cv: CurvineConfig,
        role: str,
        ports: list[tuple[str, int]],
        res: kube.ResourceRequirements,
        env: list[kube.EnvVar],
        mounts: list[kube.VolumeMount],
    ) -> kube.Container:
        _, scratch = writable_dirs(k8s)
        return k8s.Container(
            name=role,
            image=cv.image,
            image_pull_policy="IfNotPresent",
            args=[role, "start"],
            ports=[k8s.ContainerPort(name=n, container_port=p) for n, p in ports],
            env=[
                k8s.EnvVar(name="CURVINE_CONF_FILE", value=f"{CONF_DIR}/curvine-cluster.toml"),
                k8s.EnvVar(name=BIND_ALL[0], value=BIND_ALL[1]),
                *env,
            ],
            resources=res,
            volume_mounts=[
                k8s.VolumeMount(name="config", mount_path=CONF_DIR, read_only=True),
                *mounts,
                *scratch,
            ],
            # Master and worker serve RPC and write their own volumes only: no capability,
            # no privilege. They run as the image's user (root, no USER in the Dockerfile), which
            # owns the directories it writes (fresh EBS volumes, the hostPath it creates).
            security_context=hardened(k8s),
            **_local_probes(k8s, ports[0][1]),
        )

    def _master(self, config: AppConfig, k8s: KubeApi) -> None:
        cv = config.kvcache.curvine
        m = cv.master
        field = k8s.EnvVarSource(field_ref=k8s.ObjectFieldSelector(field_path="metadata.name"))
        container = self._container(
            k8s,
            cv,
            "master",
            [
                ("rpc", RPC_PORT),
                ("journal", JOURNAL_PORT),
                ("web", MASTER_WEB_PORT),
                ("web1", WORKER_WEB_PORT),
            ],
            resources(k8s, m.cpu_millicores, m.memory_mib),
            # The journal peer list names each master by its stable DNS name.
            [
                k8s.EnvVar(name="POD_NAME", value_from=field),
                k8s.EnvVar(
                    name="CURVINE_MASTER_HOSTNAME",
                    value=f"$(POD_NAME).{MASTER}.{cv.namespace}.svc.cluster.local",
                ),
            ],
            [
                k8s.VolumeMount(name="meta", mount_path=META_MOUNT),
                k8s.VolumeMount(name="journal", mount_path=JOURNAL_MOUNT),
            ],
        )

        def claim(name: str, size: int) -> kube.KubePersistentVolumeClaimProps:
            return k8s.KubePersistentVolumeClaimProps(
                metadata=meta(k8s, name, labels=labels(MASTER, name)),
                spec=k8s.PersistentVolumeClaimSpec(
                    access_modes=["ReadWriteOnce"],
                    storage_class_name=master_storage_class(config),
                    resources=k8s.VolumeResourceRequirements(
                        requests={"storage": k8s.Quantity.from_string(f"{size}Gi")}
                    ),
                ),
            )

        scratch, _ = writable_dirs(k8s)
        k8s.KubeStatefulSet(
            self,
            "master",
            metadata=meta(k8s, MASTER, namespace=cv.namespace, labels=MASTER_WL.labels),
            spec=k8s.StatefulSetSpec(
                service_name=MASTER,
                replicas=m.replicas,
                pod_management_policy="Parallel",
                selector=k8s.LabelSelector(match_labels=MASTER_WL.match_labels),
                # Metadata outlives the StatefulSet: deleting it never deletes the volumes.
                persistent_volume_claim_retention_policy=(
                    k8s.StatefulSetPersistentVolumeClaimRetentionPolicy(
                        when_deleted="Retain", when_scaled="Retain"
                    )
                ),
                template=k8s.PodTemplateSpec(
                    metadata=k8s.ObjectMeta(labels=MASTER_WL.pod_labels),
                    spec=k8s.PodSpec(
                        termination_grace_period_seconds=60,
                        # Masters do not call the Kubernetes API.
                        automount_service_account_token=False,
                        # The image runs as root (no USER) but a master writes only its two
                        # volumes and emptyDirs: it runs unprivileged, owning them by fsGroup.
                        security_context=non_root(k8s),
                        # On the system group: a master must not take a GPU node's room.
                        node_selector=system_node_selector(config),
                        containers=[container],
                        volumes=[
                            k8s.Volume(
                                name="config", config_map=k8s.ConfigMapVolumeSource(name=CONFIG_MAP)
                            ),
                            *scratch,
                        ],
                        affinity=k8s.Affinity(
                            pod_anti_affinity=k8s.PodAntiAffinity(
                                preferred_during_scheduling_ignored_during_execution=[
                                    k8s.WeightedPodAffinityTerm(
                                        weight=100,
                                        pod_affinity_term=k8s.PodAffinityTerm(
                                            label_selector=k8s.LabelSelector(
                                                match_labels=MASTER_WL.match_labels
                                            ),
                                            topology_key="kubernetes.io/hostname",
                                        ),
                                    )
                                ]
                            )
                        ),
                    ),
                ),
                volume_claim_templates=[
                    claim("meta", m.metadata_size_gib),
                    claim("journal", m.journal_size_gib),
                ],
            ),
        )

    def _worker(self, config: AppConfig, k8s: KubeApi) -> None:
        cv = config.kvcache.curvine
        w = cv.worker
        pod_ip = k8s.EnvVarSource(field_ref=k8s.ObjectFieldSelector(field_path="status.podIP"))
        container = self._container(
            k8s,
            cv,
            "worker",
            [("rpc", WORKER_RPC_PORT), ("web", WORKER_WEB_PORT)],
            resources(k8s, w.cpu_millicores, w.memory_mib),
            [k8s.EnvVar(name="CURVINE_WORKER_HOSTNAME", value_from=pod_ip)],
            [k8s.VolumeMount(name="data", mount_path=WORKER_DATA_MOUNT)],
        )
        scratch, _ = writable_dirs(k8s)
        k8s.KubeDaemonSet(
            self,
            "worker",
            metadata=meta(k8s, WORKER, namespace=cv.namespace, labels=WORKER_WL.labels),
            spec=k8s.DaemonSetSpec(
                selector=k8s.LabelSelector(match_labels=WORKER_WL.match_labels),
                update_strategy=k8s.DaemonSetUpdateStrategy(
                    type="RollingUpdate",
                    rolling_update=k8s.RollingUpdateDaemonSet(
                        max_unavailable=k8s.IntOrString.from_number(1)
                    ),
                ),
                template=k8s.PodTemplateSpec(
                    metadata=k8s.ObjectMeta(labels=WORKER_WL.pod_labels),
                    spec=k8s.PodSpec(
                        # Workers do not call the Kubernetes API.
                        automount_service_account_token=False,
                        # One worker per GPU node: the L2 pool is the GPU nodes' local NVMe.
                        node_selector=gpu_node_selector(config),
                        tolerations=[k8s.Toleration(operator="Exists")],
                        containers=[container],
                        volumes=[
                            k8s.Volume(
                                name="config", config_map=k8s.ConfigMapVolumeSource(name=CONFIG_MAP)
                            ),
                            k8s.Volume(
                                name="data",
                                host_path=k8s.HostPathVolumeSource(
                                    path=WORKER_HOST_PATH, type="DirectoryOrCreate"
                                ),
                            ),
                            *scratch,
                        ],
                    ),
                ),
            ),
        )
