"""Curvine as Kubernetes objects: config, masters, workers and their metrics Services."""

from __future__ import annotations

from typing import Any

import cdk8s
from constructs import Construct

from infra.config import AppConfig
from infra.config.kvcache import CurvineConfig
from k8s.common import kplus_for, labels, raw, resources

MASTER, WORKER = "curvine-master", "curvine-worker"
RPC_PORT, JOURNAL_PORT, WORKER_RPC_PORT = 8995, 8996, 8997
MASTER_WEB_PORT, WORKER_WEB_PORT, FUSE_WEB_PORT = 9000, 9001, 9002
CONFIG_MAP = "curvine-cluster-config"
CONF_DIR = "/app/curvine/conf"
WORKER_HOST_PATH = "/opt/dlami/nvme/curvine-data"
# Mount points of the master volumes. Curvine is pointed at a sub-directory of each: a fresh ext4
# volume holds lost+found, and with format_master=false v0.3.2-alpha refuses a non-empty directory
# that is not a RocksDB store, but creates a missing one. So a fresh cluster comes up, and no
# restart ever formats anything: no bootstrap step is needed.
META_MOUNT, JOURNAL_MOUNT = "/data/meta", "/data/journal"


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
data_dir = ["[SSD:{w.capacity_gib}GB]/data/curvine"]

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


def _tcp_probes(port: int) -> dict[str, Any]:
    def probe(period: int, failures: int) -> dict[str, Any]:
        return {"tcpSocket": {"port": port}, "periodSeconds": period,
                "failureThreshold": failures, "timeoutSeconds": 5}  # fmt: skip

    # Startup allows 10 minutes: a master replays its journal before it listens.
    return {
        "startupProbe": probe(10, 60),
        "readinessProbe": probe(10, 3),
        "livenessProbe": probe(20, 6),
    }


def _metrics_service(
    scope: Construct, name: str, ns: str, selector: dict[str, str], port: int
) -> None:
    raw(scope, name, {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {
            "name": name, "namespace": ns, "labels": labels(name, "metrics"),
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": str(port),
                            "prometheus.io/path": "/metrics"},
        },
        "spec": {"selector": selector,
                 "ports": [{"name": "metrics", "port": port, "targetPort": port}]},
    })  # fmt: skip


class CurvineChart(cdk8s.Chart):
    """ConfigMap, master StatefulSet (+ Services) and the worker DaemonSet on the GPU nodes."""

    def __init__(self, scope: Construct, id: str, *, config: AppConfig):
        super().__init__(scope, id, disable_resource_name_hashes=True)
        cv = config.kvcache.curvine
        ns = cv.namespace
        kplus = kplus_for(config)
        kplus.ConfigMap(
            self, "config",
            metadata=cdk8s.ApiObjectMetadata(name=CONFIG_MAP, namespace=ns,
                                             labels=labels("curvine", "config")),
            data={"curvine-cluster.toml": cluster_toml(cv)},
        )  # fmt: skip
        m_labels = {"app.kubernetes.io/name": MASTER, "app.kubernetes.io/part-of": "curvine"}
        raw(self, "master-headless", {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": MASTER, "namespace": ns, "labels": labels(MASTER, "master")},
            "spec": {
                "clusterIP": "None", "publishNotReadyAddresses": True, "selector": m_labels,
                "ports": [{"name": "rpc", "port": RPC_PORT},
                          {"name": "journal", "port": JOURNAL_PORT}],
            },
        })  # fmt: skip
        self._master(cv, m_labels)
        _metrics_service(self, f"{MASTER}-metrics", ns, m_labels, MASTER_WEB_PORT)
        w_labels = {"app.kubernetes.io/name": WORKER, "app.kubernetes.io/part-of": "curvine"}
        self._worker(config, w_labels)
        _metrics_service(self, f"{WORKER}-metrics", ns, w_labels, WORKER_WEB_PORT)

    def _container(
        self,
        cv: CurvineConfig,
        role: str,
        ports: list[dict[str, Any]],
        res: dict[str, Any],
        env: list[dict[str, Any]],
        mounts: list[dict[str, Any]],
    ) -> dict[str, Any]:
        return {
            "name": role, "image": cv.image, "imagePullPolicy": "IfNotPresent",
            "args": [role, "start"],
            "ports": ports,
            "env": [{"name": "CURVINE_CONF_FILE", "value": f"{CONF_DIR}/curvine-cluster.toml"},
                    *env],
            "resources": res,
            "volumeMounts": [{"name": "config", "mountPath": CONF_DIR, "readOnly": True}, *mounts],
            **_tcp_probes(ports[0]["containerPort"]),
        }  # fmt: skip

    def _master(self, cv: CurvineConfig, sel: dict[str, str]) -> None:
        m = cv.master
        container = self._container(
            cv, "master",
            [{"name": "rpc", "containerPort": RPC_PORT},
             {"name": "journal", "containerPort": JOURNAL_PORT},
             {"name": "web", "containerPort": MASTER_WEB_PORT},
             {"name": "web1", "containerPort": WORKER_WEB_PORT}],
            resources(m.cpu_millicores, m.memory_mib),
            # The journal peer list names each master by its stable DNS name.
            [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
             {"name": "CURVINE_MASTER_HOSTNAME",
              "value": f"$(POD_NAME).{MASTER}.{cv.namespace}.svc.cluster.local"}],
            [{"name": "meta", "mountPath": META_MOUNT},
             {"name": "journal", "mountPath": JOURNAL_MOUNT}],
        )  # fmt: skip

        def claim(name: str, size: int) -> dict[str, Any]:
            return {"metadata": {"name": name, "labels": labels(MASTER, name)},
                    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "ebs-sc",
                             "resources": {"requests": {"storage": f"{size}Gi"}}}}  # fmt: skip

        raw(self, "master", {
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": MASTER, "namespace": cv.namespace,
                         "labels": labels(MASTER, "master")},
            "spec": {
                "serviceName": MASTER, "replicas": m.replicas, "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": sel},
                # Metadata outlives the StatefulSet: deleting it never deletes the volumes.
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain",
                                                         "whenScaled": "Retain"},
                "template": {
                    "metadata": {"labels": {**sel, **labels(MASTER, "master")}},
                    "spec": {
                        "terminationGracePeriodSeconds": 60,
                        "containers": [container],
                        "volumes": [{"name": "config", "configMap": {"name": CONFIG_MAP}}],
                        "affinity": {"podAntiAffinity": {
                            "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 100, "podAffinityTerm": {
                                "labelSelector": {"matchLabels": sel},
                                "topologyKey": "kubernetes.io/hostname"}}]}},
                    },
                },
                "volumeClaimTemplates": [claim("meta", m.metadata_size_gib),
                                         claim("journal", m.journal_size_gib)],
            },
        })  # fmt: skip

    def _worker(self, config: AppConfig, sel: dict[str, str]) -> None:
        cv = config.kvcache.curvine
        w = cv.worker
        container = self._container(
            cv, "worker",
            [{"name": "rpc", "containerPort": WORKER_RPC_PORT},
             {"name": "web", "containerPort": WORKER_WEB_PORT}],
            resources(w.cpu_millicores, w.memory_mib),
            [{"name": "CURVINE_WORKER_HOSTNAME",
              "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
            [{"name": "data", "mountPath": "/data/curvine"}],
        )  # fmt: skip
        raw(self, "worker", {
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": WORKER, "namespace": cv.namespace,
                         "labels": labels(WORKER, "worker")},
            "spec": {
                "selector": {"matchLabels": sel},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                "template": {
                    "metadata": {"labels": {**sel, **labels(WORKER, "worker")}},
                    "spec": {
                        # One worker per GPU node: the L2 pool is the GPU nodes' local NVMe.
                        "nodeSelector": dict(config.hyperpod.gpu_group.labels),
                        "tolerations": [{"operator": "Exists"}],
                        "containers": [container],
                        "volumes": [
                            {"name": "config", "configMap": {"name": CONFIG_MAP}},
                            {"name": "data", "hostPath": {"path": WORKER_HOST_PATH,
                                                          "type": "DirectoryOrCreate"}},
                        ],
                    },
                },
            },
        })  # fmt: skip
