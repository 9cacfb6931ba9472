"""The RWX PVC ``curvine-pvc`` in each endpoint namespace, the optional static PV, and the
size-based evictor that bounds the L2 pool."""

from __future__ import annotations

import cdk8s
from constructs import Construct

from infra.config import AppConfig
from k8s.common import kplus_for, labels, raw, resources
from k8s.foundation import CURVINE_SC, curvine_volume_parameters, endpoint_namespaces

PVC = "curvine-pvc"
STATIC_PV = "curvine-l2-static"
EVICTOR = "curvine-l2-evictor"
EVICT_MOUNT = "/l2"

# Deletes the oldest LMCache chunk files (*.data) once the tree holds more than HIGH bytes, until
# it holds less than LOW. The fs connector never deletes, and Curvine has no size-based eviction
# by default, so without this the NVMe pool fills up and writes fail.
EVICT_SCRIPT = r"""set -eu
used=$(du -sb "$ROOT" | cut -f1)
echo "l2 used=${used} high=${HIGH} low=${LOW}"
[ "$used" -le "$HIGH" ] && exit 0
find "$ROOT" -type f -name '*.data' -printf '%T@ %s %p\n' | sort -n |
while read -r _ size path; do
  [ "$used" -le "$LOW" ] && break
  rm -f -- "$path" && used=$((used - size))
done
echo "l2 after eviction used=${used}"
"""


def pool_bytes(config: AppConfig) -> int:
    """Capacity of the L2 pool: every GPU node's worker capacity."""
    return (
        config.kvcache.curvine.worker.capacity_gib
        * config.hyperpod.gpu_group.instance_count
        * 2**30
    )


class L2VolumeChart(cdk8s.Chart):
    def __init__(self, scope: Construct, id: str, *, config: AppConfig):
        super().__init__(scope, id, disable_resource_name_hashes=True)
        kplus = kplus_for(config)
        cv = config.kvcache.curvine
        static = cv.static_pv
        if static.enabled:
            raw(self, "static-pv", {
                "apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": STATIC_PV, "labels": labels(STATIC_PV, "l2")},
                "spec": {
                    "capacity": {"storage": f"{static.size_gib}Gi"},
                    "accessModes": ["ReadWriteMany"],
                    # Retain: deleting the PVC (or the stack) keeps the warm cache on Curvine.
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": CURVINE_SC,
                    "csi": {
                        "driver": "curvine", "volumeHandle": STATIC_PV,
                        "volumeAttributes": {
                            **curvine_volume_parameters(config),
                            "fs-path": static.curvine_path,
                        },
                    },
                },
            })  # fmt: skip
        size = static.size_gib if static.enabled else max(1, pool_bytes(config) // 2**30)
        for ns in endpoint_namespaces(config):
            kplus.PersistentVolumeClaim(
                self, f"{ns}-pvc",
                metadata=cdk8s.ApiObjectMetadata(name=PVC, namespace=ns, labels=labels(PVC, "l2")),
                access_modes=[kplus.PersistentVolumeAccessMode.READ_WRITE_MANY],
                storage=cdk8s.Size.gibibytes(size),
                storage_class_name=CURVINE_SC,
                volume=kplus.PersistentVolume.from_persistent_volume_name(
                    self, f"{ns}-pv", STATIC_PV)
                if static.enabled else None,
            )  # fmt: skip
            self._evictor(config, ns)

    def _evictor(self, config: AppConfig, ns: str) -> None:
        cv = config.kvcache.curvine
        ev = cv.evictor
        pool = pool_bytes(config)
        env = [
            {"name": "ROOT", "value": EVICT_MOUNT},
            {"name": "HIGH", "value": str(pool * ev.high_water_percent // 100)},
            {"name": "LOW", "value": str(pool * ev.low_water_percent // 100)},
        ]
        raw(self, f"{ns}-evictor", {
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": EVICTOR, "namespace": ns, "labels": labels(EVICTOR, "l2")},
            "spec": {
                "schedule": ev.schedule, "concurrencyPolicy": "Forbid",
                "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 3,
                "jobTemplate": {"spec": {"backoffLimit": 1, "activeDeadlineSeconds": 3000,
                    "template": {
                        "metadata": {"labels": labels(EVICTOR, "l2")},
                        "spec": {
                            "restartPolicy": "Never",
                            "nodeSelector": dict(config.hyperpod.gpu_group.labels),
                            "tolerations": [{"operator": "Exists"}],
                            "containers": [{
                                "name": "evict", "image": cv.image,
                                "imagePullPolicy": "IfNotPresent",
                                "command": ["/bin/sh", "-c", EVICT_SCRIPT], "env": env,
                                "resources": resources(100, 128, cpu_limit_millicores=1000,
                                                       memory_limit_mib=512),
                                "volumeMounts": [{"name": "l2", "mountPath": EVICT_MOUNT}],
                            }],
                            "volumes": [{"name": "l2",
                                         "persistentVolumeClaim": {"claimName": PVC}}],
                        },
                    }}},
            },
        })  # fmt: skip
