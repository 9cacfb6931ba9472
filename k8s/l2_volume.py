"""The RWX PVC ``curvine-pvc-<GiB>gi`` in each namespace of an endpoint on Curvine, the optional
static PV, and the size-based evictor that bounds the L2 pool.

The Curvine claim is named after its size (``k8s.names.curvine_claim``): a bound claim cannot
shrink, and cannot grow on curvine-sc, whose driver resizes nothing; so a pool of another size
is a new claim (a new, empty Curvine directory), the old one pruned by the same apply. The
static volume, when configured, is named after the same size and pre-bound to its claim: the
old volume (Retain) stays Released once its claim goes and could bind no other claim.

With endpoints on ``fsx_lustre`` each of their namespaces has a claim bound to a static
PersistentVolume of the FSx CSI driver (all on the one file system), so the endpoints and the L2
URL stay as they are; the evictor bounds the file system the same way. Both are named after the
file system (``l2_claim``): a volume's source and a bound claim's ``volumeName`` are immutable, so
a replaced file system gets a new volume and claim (created by the same apply, the old pair
pruned) and the L2 policy mounts the new claim in every Pod admitted after it.

One evictor per pool, over all of it. Every namespace's claim is a directory of the one pool
(Curvine: ``/l2cache/<pv name>``, each claim's own; FSx: each claim is the whole file system),
so evictors per claim, each keeping its own directory under the marks of the whole pool, would
together let the claims fill the pool several times over; and after a resize the Pods started
before keep writing to the old claim's directory, which the new claim's evictor never sees.
Curvine then refuses to allocate blocks (v0.4.1 ``crates/adapters/curvine-storage-local/src/
policy.rs``: "Not enough Ssd storage capacity for <n> bytes") and LMCache's writes fail. So the
evictor mounts the pool's root: on Curvine a static volume of ``/l2cache`` itself (the old
claims' directories stay under it until the CSI driver deletes them with their claims), on FSx
one namespace's claim, which is the whole file system."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

import cdk8s
from constructs import Construct

from infra.config import AppConfig
from infra.config.curvine import CURVINE_FS_PATH
from infra.config.model import GIB, curvine_writable_bytes, l2_pool_bytes
from infra.config.node_budget import L2_EVICTOR
from infra.environment.fsx import FsxVolume
from k8s.common import gpu_node_selector, hardened, k8s_for, kplus_for, meta, resources
from k8s.curvine import FUSE_STATIC_WEB_PORT, TMP_DIR
from k8s.foundation import curvine_volume_parameters, l2_namespaces
from k8s.kube_api import KubeApi
from k8s.names import (
    CURVINE_SC,
    EVICTOR,
    FSX_EVICTOR,
    FSX_L2,
    L2_POOL,
    PVC,
    STATIC_PV,
    curvine_claim,
    curvine_claim_gib,
    curvine_static_volume,
    fsx_claim,
    labels,
)

if TYPE_CHECKING:
    from cdk8s_plus_33 import k8s as kube

EVICT_MOUNT = "/l2"
FSX_DRIVER = "fsx.csi.aws.com"
# flock: LMCache's file-system connector and the evictor may touch one file from several nodes;
# Lustre refuses flock() without it. noatime: a read of a KV chunk must not turn into a metadata
# write on the servers (the storage post's mount advice: flock,noatime).
FSX_MOUNT_OPTIONS = ("flock", "noatime")


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


def fsx_volume_name(fsx: FsxVolume, namespace: str) -> str:
    # PersistentVolumes are cluster-scoped: one per endpoint namespace.
    return f"{FSX_L2}-{fsx.file_system_id}-{namespace}"


def pool_volume_attributes(config: AppConfig) -> dict[str, str]:
    """The Curvine pool's root as a volume: curvine-sc's own parameters (the same FUSE process as
    the claims' volumes on a node: Curvine's CSI driver keys it by master-addrs, fs-path and the
    flags it passes on), with ``curvine-path`` the fs-path itself, so the node plugin binds the
    whole FUSE mount, every claim's directory, into the evictor."""
    return {**curvine_volume_parameters(config), "curvine-path": CURVINE_FS_PATH}


def curvine_pool_volume(config: AppConfig) -> str:
    """The volume (and claim) of the pool's root, named after its size and attributes, as the
    claims are after their size: a bound claim's size and a volume's source cannot change, so a
    pool of another size or new attributes (another master, other FUSE flags) take a new volume
    and claim, created by the apply that prunes the old pair."""
    attributes = json.dumps(pool_volume_attributes(config), sort_keys=True).encode()
    gib = l2_pool_bytes(config, "curvine") // GIB
    return f"{L2_POOL}-{gib}gi-{hashlib.sha256(attributes).hexdigest()[:8]}"


def fsx_evictor_namespace(config: AppConfig) -> str:
    """Where the FSx evictor runs: each namespace's claim is the whole file system, so one
    namespace's claim reaches every directory."""
    return l2_namespaces(config)[0]


def l2_claim(config: AppConfig, fsx: FsxVolume | None) -> str:
    """The claim the L2 policy mounts in every endpoint namespace."""
    if "fsx_lustre" not in config.kvcache.l2_backends:
        return curvine_claim(config)
    if fsx is None:
        # No placeholder: a PersistentVolume naming no real file system is accepted by the API
        # server and leaves every Pod that mounts it in ContainerCreating.
        raise ValueError("l2_backend fsx_lustre: the charts need the file system (fsx)")
    return fsx_claim(fsx)


class L2VolumeChart(cdk8s.Chart):
    def __init__(
        self, scope: Construct, id: str, *, config: AppConfig, fsx: FsxVolume | None = None
    ):
        super().__init__(scope, id, disable_resource_name_hashes=True)
        claim = l2_claim(config, fsx)  # refuses FSx without its file system
        if "fsx_lustre" in config.kvcache.l2_backends:
            assert fsx is not None
            self._fsx(config, fsx)
            return
        kplus = kplus_for(config)
        cv = config.kvcache.curvine
        static = cv.static_pv
        k8s = k8s_for(config)
        size = curvine_claim_gib(config)
        volume = curvine_static_volume(config)
        if static.enabled:
            # The rules allow a static volume with one endpoint namespace only: it binds one claim.
            (only_ns,) = l2_namespaces(config)
            k8s.KubePersistentVolume(
                self,
                "static-pv",
                metadata=meta(k8s, volume, labels=labels(STATIC_PV, "l2")),
                spec=k8s.PersistentVolumeSpec(
                    capacity={"storage": k8s.Quantity.from_string(f"{size}Gi")},
                    access_modes=["ReadWriteMany"],
                    # Retain: deleting the PVC (or the stack) keeps the warm cache on Curvine.
                    persistent_volume_reclaim_policy="Retain",
                    storage_class_name=CURVINE_SC,
                    # Pre-bound: no other claim can take it, and the claim of the next size gets
                    # the next volume.
                    claim_ref=k8s.ObjectReference(namespace=only_ns, name=claim),
                    csi=k8s.CsiPersistentVolumeSource(
                        driver="curvine",
                        # Unique per volume (the kubelet keys a CSI volume by driver and
                        # handle): the volumes of two sizes must not be taken for one.
                        volume_handle=volume,
                        # Its own FUSE process (another fs-path): its own metrics port.
                        # curvine-path: the directory NodePublishVolume binds into the Pod,
                        # which it refuses to do without one (CurvineIO/curvine v0.4.1,
                        # curvine-csi/pkg/csi/node.go); here the whole FUSE mount of fs-path.
                        volume_attributes={
                            **curvine_volume_parameters(config, FUSE_STATIC_WEB_PORT),
                            "fs-path": static.curvine_path,
                            "curvine-path": static.curvine_path,
                        },
                    ),
                ),
            )
        for ns in l2_namespaces(config):
            kplus.PersistentVolumeClaim(
                self,
                f"{ns}-pvc",
                metadata=cdk8s.ApiObjectMetadata(
                    name=claim,
                    namespace=ns,
                    labels=labels(PVC, "l2"),
                ),
                access_modes=[kplus.PersistentVolumeAccessMode.READ_WRITE_MANY],
                storage=cdk8s.Size.gibibytes(size),
                storage_class_name=CURVINE_SC,
                volume=kplus.PersistentVolume.from_persistent_volume_name(self, f"{ns}-pv", volume)
                if static.enabled
                else None,
            )
        self._curvine_pool(config, k8s)

    def _curvine_pool(self, config: AppConfig, k8s: KubeApi) -> None:
        """The pool's root, pre-bound to a claim in Curvine's namespace, and the one evictor
        over it. Retain: Curvine's DeleteVolume deletes the volume's ``curvine-path`` (v0.4.1
        ``curvine-csi/pkg/csi/controller.go``), here the whole pool."""
        ns = config.kvcache.curvine.namespace
        name = curvine_pool_volume(config)
        size = k8s.Quantity.from_string(f"{l2_pool_bytes(config, 'curvine') // GIB}Gi")
        k8s.KubePersistentVolume(
            self,
            "pool-pv",
            metadata=meta(k8s, name, labels=labels(L2_POOL, "l2")),
            spec=k8s.PersistentVolumeSpec(
                capacity={"storage": size},
                access_modes=["ReadWriteMany"],
                persistent_volume_reclaim_policy="Retain",
                # "": no provisioner answers the claim; claimRef binds it to this volume only.
                storage_class_name="",
                claim_ref=k8s.ObjectReference(namespace=ns, name=name),
                csi=k8s.CsiPersistentVolumeSource(
                    driver="curvine",
                    volume_handle=name,
                    volume_attributes=pool_volume_attributes(config),
                ),
            ),
        )
        self._bound_claim(k8s, "pool-pvc", ns, name, name, labels(L2_POOL, "l2"), size)
        self._evictor(config, k8s, ns, name, EVICTOR, curvine_writable_bytes(config))

    def _fsx(self, config: AppConfig, fsx: FsxVolume) -> None:
        """Per endpoint namespace: a static PV on the file system, pre-bound to its claim."""
        k8s = k8s_for(config)
        size = k8s.Quantity.from_string(f"{config.kvcache.fsx.storage_capacity_gib}Gi")
        claim = fsx_claim(fsx)
        for ns in l2_namespaces(config):
            pv = fsx_volume_name(fsx, ns)
            # Labels name the role, not the file system: a label value holds at most 63
            # characters, and the names already carry the id.
            k8s.KubePersistentVolume(
                self,
                f"{ns}-pv",
                metadata=meta(k8s, pv, labels=labels(FSX_L2, "l2")),
                spec=k8s.PersistentVolumeSpec(
                    capacity={"storage": size},
                    volume_mode="Filesystem",
                    access_modes=["ReadWriteMany"],
                    mount_options=list(FSX_MOUNT_OPTIONS),
                    # Retain: CloudFormation owns the file system; deleting a claim must never
                    # ask the driver to delete it.
                    persistent_volume_reclaim_policy="Retain",
                    # "": no StorageClass, so no dynamic provisioner can answer the claim.
                    storage_class_name="",
                    claim_ref=k8s.ObjectReference(namespace=ns, name=claim),
                    csi=k8s.CsiPersistentVolumeSource(
                        driver=FSX_DRIVER,
                        volume_handle=fsx.file_system_id,
                        volume_attributes={"dnsname": fsx.dns_name, "mountname": fsx.mount_name},
                    ),
                ),
            )
            self._bound_claim(k8s, f"{ns}-pvc", ns, claim, pv, labels(FSX_L2, "l2"), size)
        pool = l2_pool_bytes(config, "fsx_lustre")
        self._evictor(config, k8s, fsx_evictor_namespace(config), claim, FSX_EVICTOR, pool)

    def _bound_claim(
        self,
        k8s: KubeApi,
        id: str,
        ns: str,
        name: str,
        volume: str,
        claim_labels: dict[str, str],
        size: kube.Quantity,
    ) -> None:
        """A claim of ``volume`` only: no StorageClass, so no provisioner answers it."""
        k8s.KubePersistentVolumeClaim(
            self,
            id,
            metadata=meta(k8s, name, namespace=ns, labels=claim_labels),
            spec=k8s.PersistentVolumeClaimSpec(
                access_modes=["ReadWriteMany"],
                storage_class_name="",
                volume_name=volume,
                resources=k8s.VolumeResourceRequirements(requests={"storage": size}),
            ),
        )

    def _evictor(
        self, config: AppConfig, k8s: KubeApi, ns: str, claim: str, name: str, pool: int
    ) -> None:
        """Keeps the whole pool the claim mounts between the evictor's marks of ``pool`` bytes."""
        cv = config.kvcache.curvine
        ev = cv.evictor
        env = [
            k8s.EnvVar(name="ROOT", value=EVICT_MOUNT),
            k8s.EnvVar(name="HIGH", value=str(pool * ev.high_water_percent // 100)),
            k8s.EnvVar(name="LOW", value=str(pool * ev.low_water_percent // 100)),
        ]
        # The Curvine image also on FSx: it ships GNU find (-printf), which busybox lacks.
        container = k8s.Container(
            name="evict",
            image=cv.image,
            image_pull_policy="IfNotPresent",
            command=["/bin/sh", "-c", EVICT_SCRIPT],
            env=env,
            resources=resources(
                k8s,
                L2_EVICTOR.cpu_millicores,
                L2_EVICTOR.memory_mib,
                cpu_limit_millicores=1000,
                memory_limit_mib=512,
            ),
            volume_mounts=[
                k8s.VolumeMount(name="l2", mount_path=EVICT_MOUNT),
                # sort(1) spills to /tmp on a long file list.
                k8s.VolumeMount(name="tmp", mount_path=TMP_DIR),
            ],
            # du/find/rm on files the same user (root, in the vLLM image too) created: the owner
            # needs no capability to delete them.
            security_context=hardened(k8s),
        )
        k8s.KubeCronJob(
            self,
            "evictor",
            metadata=meta(k8s, name, namespace=ns, labels=labels(name, "l2")),
            spec=k8s.CronJobSpec(
                schedule=ev.schedule,
                concurrency_policy="Forbid",
                successful_jobs_history_limit=1,
                failed_jobs_history_limit=3,
                job_template=k8s.JobTemplateSpec(
                    spec=k8s.JobSpec(
                        backoff_limit=1,
                        active_deadline_seconds=3000,
                        template=k8s.PodTemplateSpec(
                            metadata=k8s.ObjectMeta(labels=labels(name, "l2")),
                            spec=k8s.PodSpec(
                                restart_policy="Never",
                                # It reads the pool through the FUSE mount, not the API.
                                automount_service_account_token=False,
                                # On a GPU node: the CSI node plugin (FUSE) runs only there (FSx:
                                # where the endpoints already hold the Lustre mount).
                                node_selector=gpu_node_selector(config),
                                tolerations=[k8s.Toleration(operator="Exists")],
                                containers=[container],
                                volumes=[
                                    k8s.Volume(
                                        name="l2",
                                        persistent_volume_claim=(
                                            k8s.PersistentVolumeClaimVolumeSource(claim_name=claim)
                                        ),
                                    ),
                                    k8s.Volume(name="tmp", empty_dir=k8s.EmptyDirVolumeSource()),
                                ],
                            ),
                        ),
                    )
                ),
            ),
        )
