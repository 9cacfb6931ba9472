"""Curvine, the shared L2 store on the GPU nodes' NVMe: masters, workers, the FUSE client of
its CSI driver, the size-based evictor and the optional static volume."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from infra.config.base import Section
from infra.config.errors import RuleViolation
from infra.config.fields import dns_label, image_repository, pinned_image
from infra.config.schedules import kubernetes_schedule


class CurvineMasterConfig(Section):
    replicas: int = 1
    """Master (Raft) replicas: 1, 3 or 5. Fixed after the first deploy (recorded in the lock
    file): Curvine cannot change its journal membership in place."""
    metadata_size_gib: int = Field(default=50, ge=10, le=16384)
    """Size of each master's metadata (RocksDB) volume on ebs-sc, in GiB."""
    journal_size_gib: int = Field(default=50, ge=10, le=16384)
    """Size of each master's Raft journal volume on ebs-sc, in GiB."""
    cpu_millicores: int = Field(default=2000, ge=250)
    """CPU request and limit of a master, in millicores."""
    memory_mib: int = Field(default=8192, ge=1024)
    """Memory request and limit of a master, in MiB."""
    storage_class: str | None = None
    """StorageClass of the master volumes. Null (the default): the app creates ``ebs-sc`` (gp3,
    encrypted) and uses it. A name: use that existing StorageClass (provisioner
    ``ebs.csi.aws.com``, checked at deploy on an existing cluster) and create none; on an
    existing cluster that already has an ``ebs-sc``, set ``ebs-sc`` here to use it."""

    @field_validator("storage_class")
    @classmethod
    def _sc(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$", v):
            raise RuleViolation("a StorageClass name (lower-case DNS subdomain)", "fix the name")
        return v

    @field_validator("replicas")
    @classmethod
    def _odd(cls, v: int) -> int:
        if v not in (1, 3, 5):
            raise RuleViolation(
                "1, 3 or 5 (an odd Raft quorum)", "set kvcache.curvine.master.replicas to 1 or 3"
            )
        return v


MIN_WORKER_CAPACITY_GIB = 10


class CurvineWorkerConfig(Section):
    capacity_gib: int = Field(default=400, ge=MIN_WORKER_CAPACITY_GIB)
    """NVMe capacity each worker offers to the L2 pool, in GiB (at most the instance store)."""
    reserved_gib: int = Field(default=10, ge=0)
    """Of ``capacity_gib``, the space the worker keeps free, in GiB (Curvine's
    ``dir_reserved``): writes can fill capacity - reserved, the base of the evictor's water
    marks. Less than ``capacity_gib``."""
    weights_cache_gib: int = Field(default=0, ge=0)
    """NVMe each GPU node keeps for the inference operator's model weights cache, in GiB: the
    weights of every model cached there. Operator 3.3 and later cache weights on the node
    (``modelCacheConfig.weightsCache`` of an endpoint, or a ``ModelWeightsCacheConfig``) at a host
    path that defaults to ``/opt/dlami/nvme``, the disk Curvine's workers fill, and bound it by
    nothing. This app renders no weights cache (its add-on pin ships operator 3.2); on an
    existing cluster whose owner uses one, set this and ``hpkv preflight`` accepts it. 0: no
    weights cache may use that disk."""
    cpu_millicores: int = Field(default=4000, ge=500)
    """CPU request and limit of a worker, in millicores."""
    memory_mib: int = Field(default=8192, ge=1024)
    """Memory request and limit of a worker, in MiB."""


# Below this the FUSE process is OOM-killed under multi-GB/s KV reads (the field's docstring).
FUSE_MEMORY_FLOOR_MIB = 8192


class CurvineFuseConfig(Section):
    io_threads: int = Field(default=32, ge=1, le=512)
    """curvine-fuse ``--io-threads`` (StorageClass parameter ``io-threads``)."""
    worker_threads: int = Field(default=64, ge=1, le=1024)
    """curvine-fuse ``--worker-threads``."""
    cpu_request_millicores: int = Field(default=2000, ge=100)
    """CPU request of the CSI node plugin, which runs the FUSE process, in millicores."""
    cpu_limit_millicores: int = Field(default=8000, ge=100)
    """CPU limit of the CSI node plugin, in millicores."""
    memory_request_mib: int = Field(default=4096, ge=512)
    """Memory request of the CSI node plugin (FUSE buffers), in MiB."""
    memory_limit_mib: int = Field(default=16384, ge=FUSE_MEMORY_FLOOR_MIB)
    """Memory limit of the CSI node plugin, in MiB; at least 8192. Multi-GB/s KV reads keep
    several GiB of FUSE and client buffers in flight; below 8 GiB the FUSE process is
    OOM-killed under load and every mount on the node breaks."""


# The Curvine directory curvine-sc provisions every claim's directory in (its fs-path), and so the
# root the pool's one evictor keeps within the pool (k8s.l2_volume).
CURVINE_FS_PATH = "/l2cache"


class EvictorConfig(Section):
    schedule: str = "*/5 * * * *"
    """Schedule of the size-based evictor, a Kubernetes CronJob's (UTC): five fields, minute
    hour day-of-month month day-of-week, or a descriptor such as ``@hourly``. EventBridge's
    ``cron(...)`` (six fields, the year last) is refused: the API server would refuse the
    CronJob at deploy."""
    high_water_percent: int = Field(default=85, ge=10, le=99)
    """Start deleting when the pool (everything under ``/l2cache``, every namespace's claim)
    holds more than this share of what writes can fill of it (worker capacity less reserved,
    times the GPU nodes), in percent."""
    low_water_percent: int = Field(default=70, ge=5, le=98)
    """Delete the oldest ``.data`` files until usage is below this share, in percent."""

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, v: str) -> str:
        return kubernetes_schedule(v, "kvcache.curvine.evictor.schedule")


class StaticPvConfig(Section):
    enabled: bool = False
    """Bind the L2 claim to a static PersistentVolume (``Retain``) on a fixed Curvine path, so
    a redeploy or a deleted PVC finds the warm cache. False: dynamic provisioning on curvine-sc."""
    curvine_path: str = "/l2cache/static"
    """Curvine path of the static volume: under ``/l2cache``, the pool the evictor keeps."""
    size_gib: int = Field(default=1024, ge=1)
    """Nominal size of the static volume (Curvine does not enforce it), in GiB."""


class CurvineConfig(Section):
    """Curvine is deployed exactly when some endpoint's ``l2_backend`` is ``curvine``."""

    version: str = "v0.4.1"
    """Curvine release: tag of ``ghcr.io/curvineio/curvine`` and ``curvine-csi``."""
    image_repository: str = "ghcr.io/curvineio/curvine"
    """Image of the master and worker, without a tag (``version`` is the tag); a repository a
    registry takes, its path in lower case."""
    csi_image_repository: str = "ghcr.io/curvineio/curvine-csi"
    """Image of the CSI driver (controller and node plugin; the node plugin runs FUSE), as
    ``image_repository``."""
    csi_provisioner_image: str = "registry.k8s.io/sig-storage/csi-provisioner:v3.6.0"
    """CSI external-provisioner sidecar of the controller."""
    csi_node_driver_registrar_image: str = (
        "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.10.0"
    )
    """Node driver registrar sidecar of the node plugin."""
    namespace: str = "curvine"
    """Namespace of Curvine (Pod Security ``privileged``: the CSI node plugin mounts FUSE)."""
    master: CurvineMasterConfig = CurvineMasterConfig()
    worker: CurvineWorkerConfig = CurvineWorkerConfig()
    fuse: CurvineFuseConfig = CurvineFuseConfig()
    ttl_hours: int = Field(default=168, ge=1)
    """Curvine TTL of files written through the mount, in hours; expired files are deleted."""
    evictor: EvictorConfig = EvictorConfig()
    static_pv: StaticPvConfig = StaticPvConfig()

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        if not re.match(r"^v\d+\.\d+\.\d+(-[a-z0-9.]+)?$", v):
            raise RuleViolation("a release tag like v0.4.1 (never latest)", "pin a tag")
        return v

    @field_validator("image_repository", "csi_image_repository")
    @classmethod
    def _repository(cls, v: str) -> str:
        return image_repository(v)

    @field_validator("csi_provisioner_image", "csi_node_driver_registrar_image")
    @classmethod
    def _image(cls, v: str) -> str:
        return pinned_image(v)

    @field_validator("namespace")
    @classmethod
    def _ns(cls, v: str) -> str:
        return dns_label(v)

    @property
    def image(self) -> str:
        return f"{self.image_repository}:{self.version}"

    @property
    def csi_image(self) -> str:
        return f"{self.csi_image_repository}:{self.version}"
