"""The Kubernetes layer: Curvine (L2), Kyverno and the inference endpoints.

Values that Kubernetes or Curvine cannot change after the first deploy (the Curvine master count,
an endpoint's routing strategy) are recorded in a committed lock file, ``k8s/locks/<env>.json``,
written by ``python -m k8s.render`` (``make synth``). A config that disagrees with its lock is
refused here, before anything is synthesized.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from infra.config.addons import S3_BUCKET_NAME
from infra.config.base import Section
from infra.config.errors import RuleViolation
from infra.config.operator_versions import ADDON_NAME
from infra.instances import GPU_INSTANCES

if TYPE_CHECKING:
    from infra.config.model import AppConfig

LOCK_DIR = Path(__file__).resolve().parents[2] / "k8s" / "locks"
ROUTING_STRATEGIES = ("prefixaware", "kvaware", "session", "roundrobin")
L2_BACKENDS = ("curvine", "fsx_lustre")
# FSx for Lustre PERSISTENT_2 (SSD): throughput per TiB it accepts, and its capacity steps
# (CreateFileSystem / UpdateFileSystem, "Managing throughput capacity" in the Lustre guide).
FSX_PERSISTENT_2_THROUGHPUTS = (125, 250, 500, 1000)
FSX_FIRST_CAPACITY_GIB, FSX_CAPACITY_STEP_GIB = 1200, 2400
FSX_LUSTRE_VERSIONS = ("2.12", "2.15")
REGION_CODE = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


# [registry[:port]/]path/name, then an optional tag (OCI grammar) and an optional digest.
IMAGE_REFERENCE = re.compile(
    r"(?:[^\s/@]+/)*[^\s/:@]+"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?"
)


def image_is_pinned(image: str) -> bool:
    """True for ``repo/name:tag`` with a tag other than latest, or ``repo/name@sha256:<64 hex>``;
    False for anything that is not a well-formed reference (a truncated digest, a second tag)."""
    ref = IMAGE_REFERENCE.fullmatch(image)
    return ref is not None and (ref["digest"] is not None or ref["tag"] not in (None, "latest"))


def _pinned_image(v: str) -> str:
    if not image_is_pinned(v):
        raise RuleViolation(
            "an image with an explicit tag other than latest (repo/name:v1.2.3) or a digest",
            "pin a released tag",
        )
    return v


def _dns_label(v: str) -> str:
    if not DNS_LABEL.match(v):
        raise RuleViolation("a DNS-1123 label: 1-63 lower-case letters, digits and '-'", "rename")
    return v


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


class CurvineWorkerConfig(Section):
    capacity_gib: int = Field(default=400, ge=10)
    """NVMe capacity each worker offers to the L2 pool, in GiB (at most the instance store)."""
    reserved_gib: int = Field(default=10, ge=0)
    """Space the worker leaves free on the NVMe, in GiB."""
    cpu_millicores: int = Field(default=4000, ge=500)
    """CPU request and limit of a worker, in millicores."""
    memory_mib: int = Field(default=8192, ge=1024)
    """Memory request and limit of a worker, in MiB."""


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
    memory_limit_mib: int = Field(default=16384, ge=1024)
    """Memory limit of the CSI node plugin. Multi-GB/s KV reads keep several GiB of FUSE and
    client buffers in flight; below ~8 GiB the FUSE process is OOM-killed under load and every
    mount on the node breaks."""


class EvictorConfig(Section):
    schedule: str = "*/5 * * * *"
    """Cron schedule of the size-based evictor (UTC)."""
    high_water_percent: int = Field(default=85, ge=10, le=99)
    """Start deleting when the L2 directory holds more than this share of the pool, in percent."""
    low_water_percent: int = Field(default=70, ge=5, le=98)
    """Delete the oldest ``.data`` files until usage is below this share, in percent."""


class StaticPvConfig(Section):
    enabled: bool = False
    """Bind ``curvine-pvc`` to a static PersistentVolume (``Retain``) on a fixed Curvine path, so
    a redeploy or a deleted PVC finds the warm cache. False: dynamic provisioning on curvine-sc."""
    curvine_path: str = "/l2cache/static"
    """Curvine path of the static volume."""
    size_gib: int = Field(default=1024, ge=1)
    """Nominal size of the static volume (Curvine does not enforce it), in GiB."""


class CurvineConfig(Section):
    enabled: bool = True
    """Deploy Curvine and point every endpoint's L2 at it."""
    version: str = "v0.3.2-alpha"
    """Curvine release: tag of ``ghcr.io/curvineio/curvine`` and ``curvine-csi``."""
    image_repository: str = "ghcr.io/curvineio/curvine"
    """Image of the master and worker."""
    csi_image_repository: str = "ghcr.io/curvineio/curvine-csi"
    """Image of the CSI driver (controller and node plugin; the node plugin runs FUSE)."""
    csi_provisioner_image: str = "registry.k8s.io/sig-storage/csi-provisioner:v3.6.0"
    """CSI external-provisioner sidecar of the controller."""
    csi_node_driver_registrar_image: str = (
        "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.10.0"
    )
    """Node driver registrar sidecar of the node plugin."""
    namespace: str = "curvine"
    """Namespace of Curvine: the only namespace labelled Pod Security ``privileged``."""
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
            raise RuleViolation("a release tag like v0.3.2-alpha (never latest)", "pin a tag")
        return v

    @field_validator("csi_provisioner_image", "csi_node_driver_registrar_image")
    @classmethod
    def _image(cls, v: str) -> str:
        return _pinned_image(v)

    @field_validator("namespace")
    @classmethod
    def _ns(cls, v: str) -> str:
        return _dns_label(v)

    @property
    def image(self) -> str:
        return f"{self.image_repository}:{self.version}"

    @property
    def csi_image(self) -> str:
        return f"{self.csi_image_repository}:{self.version}"


class FsxDataRepositoryConfig(Section):
    """T4: a data repository association exporting the L2 files to S3, so sessions survive a
    cluster (and file system) rebuild. The app does not own the bucket: expiry of the exported
    objects is an S3 lifecycle rule on the bucket (an association has no expiry setting)."""

    bucket: str
    """Bare name of the S3 bucket (no ``s3://``, no ARN) the L2 files are exported to."""
    bucket_region: str
    """Region of that bucket; must be the environment's region (an association links a bucket
    in the file system's region)."""
    prefix: str = "l2cache/"
    """Key prefix in the bucket, ending in ``/`` (empty: the whole bucket)."""
    import_on_create: bool = True
    """List the bucket's objects under the prefix in the file system when the association is
    created (``BatchImportMetaDataOnCreate``): a rebuilt file system finds the earlier sessions
    and loads their bytes from S3 on first read."""

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, v: str) -> str:
        if not S3_BUCKET_NAME.match(v):
            raise RuleViolation(
                "an S3 bucket name (3-63 lower-case letters, digits, '.' and '-'), not an ARN "
                "or s3:// URL",
                "write the bare bucket name; put the key prefix in prefix",
            )
        return v

    @field_validator("bucket_region")
    @classmethod
    def _region(cls, v: str) -> str:
        if not REGION_CODE.match(v):
            raise RuleViolation("a region code like us-west-2", "run `aws s3api "
                                "get-bucket-location --bucket <name>` and copy it")  # fmt: skip
        return v

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        if v.startswith(("/", "s3://")) or (v and not v.endswith("/")):
            raise RuleViolation(
                "a key prefix inside the bucket ending in '/', like l2cache/ (or empty)",
                "drop a leading / or s3:// and end it with /",
            )
        return v

    @property
    def s3_uri(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


class FsxLustreConfig(Section):
    """The shared tier on Amazon FSx for Lustre (``l2_backend: fsx_lustre``): one PERSISTENT_2
    file system in the HyperPod subnet, mounted RWX in every endpoint Pod through the FSx CSI
    driver. Data compression is off: KV blocks are dense tensors that LZ4 barely shrinks, and
    compression adds CPU work on the file servers to every read on the TTFT path."""

    storage_capacity_gib: int = 1200
    """Capacity in GiB: 1200, 2400, then steps of 2400 (PERSISTENT_2 SSD). Also the size the
    evictor keeps the L2 tree under (``curvine.evictor`` percentages)."""
    throughput_mb_per_tib: int = 250
    """Throughput per TiB of storage (``PerUnitStorageThroughput``): 125, 250, 500 or 1000
    MB/s/TiB. The file system serves capacity (TiB) x this value in aggregate."""
    file_system_type_version: str = "2.15"
    """Lustre version of the file system (2.12 or 2.15; the FSx CSI driver's client mounts both)."""
    backup_retention_days: int | None = Field(default=None, ge=0, le=90)
    """Daily automatic backups kept, in days. Null: 7 when ``retain_stateful_resources`` is on
    (prod), 0 (no backups: the cache is recomputable) otherwise."""
    data_repository: FsxDataRepositoryConfig | None = None
    """Optional T4: export new L2 files to S3 (null: no S3 link)."""
    hyperpod_subnet_id: str | None = None
    """Existing-cluster mode only: the HyperPod cluster's subnet (``aws sagemaker
    describe-cluster --query VpcConfig.Subnets``). The file system is placed there, in the GPU
    nodes' AZ. With a cluster the app creates, its HyperPod subnet is used and this stays null."""
    vpc_id: str | None = None
    """Existing-cluster mode only: the VPC of that subnet (the file system's security group)."""
    client_security_group_id: str | None = None
    """Existing-cluster mode only: the security group of the HyperPod nodes (``VpcConfig.
    SecurityGroupIds``); Lustre's ports are opened to it only."""

    @field_validator("storage_capacity_gib")
    @classmethod
    def _capacity(cls, v: int) -> int:
        if v != FSX_FIRST_CAPACITY_GIB and (v <= 0 or v % FSX_CAPACITY_STEP_GIB):
            lower = max(FSX_CAPACITY_STEP_GIB, v // FSX_CAPACITY_STEP_GIB * FSX_CAPACITY_STEP_GIB)
            raise RuleViolation(
                f"{FSX_FIRST_CAPACITY_GIB} or a multiple of {FSX_CAPACITY_STEP_GIB} GiB "
                "(FSx for Lustre PERSISTENT_2 SSD)",
                f"use {lower} or {lower + FSX_CAPACITY_STEP_GIB}",
            )
        return v

    @field_validator("throughput_mb_per_tib")
    @classmethod
    def _throughput(cls, v: int) -> int:
        if v not in FSX_PERSISTENT_2_THROUGHPUTS:
            raise RuleViolation(
                f"{', '.join(map(str, FSX_PERSISTENT_2_THROUGHPUTS))} MB/s/TiB (PERSISTENT_2)",
                "pick one of them; aggregate throughput = capacity in TiB x this value",
            )
        return v

    @field_validator("file_system_type_version")
    @classmethod
    def _version(cls, v: str) -> str:
        if v not in FSX_LUSTRE_VERSIONS:
            raise RuleViolation(
                f"{' or '.join(FSX_LUSTRE_VERSIONS)} (Lustre versions of PERSISTENT_2)",
                "use 2.15",
            )
        return v

    @field_validator("hyperpod_subnet_id")
    @classmethod
    def _subnet(cls, v: str | None) -> str | None:
        return None if v is None else _aws_id(v, "subnet", "kvcache.fsx.hyperpod_subnet_id")

    @field_validator("vpc_id")
    @classmethod
    def _vpc(cls, v: str | None) -> str | None:
        return None if v is None else _aws_id(v, "vpc", "kvcache.fsx.vpc_id")

    @field_validator("client_security_group_id")
    @classmethod
    def _sg(cls, v: str | None) -> str | None:
        return None if v is None else _aws_id(v, "sg", "kvcache.fsx.client_security_group_id")

    def backup_days(self, retain: bool) -> int:
        if self.backup_retention_days is not None:
            return self.backup_retention_days
        return 7 if retain else 0


def _aws_id(value: str, kind: str, field: str) -> str:
    if not re.match(rf"^{kind}-[0-9a-f]{{8,17}}$", value):
        raise RuleViolation(f"an id like {kind}-0abc1234def567890", f"copy the id into {field}")
    return value


class KyvernoConfig(Section):
    chart_version: str = "3.8.2"
    """Kyverno Helm chart version (3.8.2 ships Kyverno v1.18.2); k8s/schemas/kyverno holds the
    ClusterPolicy CRD of that release for offline validation."""
    namespace: str = "kyverno"
    """Namespace of the Kyverno release."""
    install: bool = True
    """Install Kyverno (Helm release ``kyverno``, its namespace created by the app). False: use
    the Kyverno already installed on an existing cluster (its ClusterPolicy CRD is checked at
    deploy); the app adds only its own ClusterPolicy and never upgrades or removes Kyverno."""

    @field_validator("chart_version")
    @classmethod
    def _version(cls, v: str) -> str:
        if not re.match(r"^\d+\.\d+\.\d+$", v):
            raise RuleViolation("a chart version like 3.8.2", "pin a released chart version")
        return v


# A bucket name S3 reserves for documentation (prefix amzn-s3-demo-): nobody can create it, so a
# config that keeps it fails to load weights instead of reading a stranger's bucket.
PLACEHOLDER_MODEL_BUCKET = "amzn-s3-demo-replace-with-model-bucket"


class ModelConfig(Section):
    source: Literal["huggingface", "s3"] = "s3"
    """Where the operator downloads the weights from. ``s3``: ``s3_bucket``/``s3_prefix`` (stage
    them with ``aws s3 sync``, docs/endpoints-and-l2-policy.md). ``huggingface`` needs an add-on
    whose operator is 3.1 or later (infra/config/operator_versions.py)."""
    hugging_face_model_id: str = "Qwen/Qwen3-8B"
    """Hugging Face model id (source huggingface)."""
    s3_bucket: str | None = PLACEHOLDER_MODEL_BUCKET
    """Bucket of the weights (source s3); a placeholder until replaced. The S3 CSI driver's role
    may read it (it is added to ``addons.s3_csi.model_bucket_names``)."""
    s3_prefix: str = "Qwen/Qwen3-8B"
    """Key prefix of the weights in the bucket (source s3), without a leading ``/``."""
    parameters_billion: float = Field(default=8.2, gt=0)
    """Parameter count in billions (for the fits-in-GPU-memory check)."""
    bytes_per_parameter: float = Field(default=2.0, gt=0)
    """Bytes per parameter as served (2 for bf16/fp16, 1 for fp8)."""

    @field_validator("s3_bucket")
    @classmethod
    def _bucket(cls, v: str | None) -> str | None:
        if v is not None and not S3_BUCKET_NAME.match(v):
            raise RuleViolation(
                "an S3 bucket name (3-63 lower-case letters, digits, '.' and '-'), not an ARN "
                "or s3:// URL",
                "write the bare bucket name; put the key prefix in s3_prefix",
            )
        return v

    @field_validator("s3_prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        if v.startswith(("/", "s3://")):
            raise RuleViolation(
                "a key prefix inside the bucket, like Qwen/Qwen3-8B", "drop the leading / or s3://"
            )
        return v


class EndpointConfig(Section):
    name: str = "qwen3-8b"
    """Name of the InferenceEndpointConfig and of the endpoint; also names its L2 directory."""
    namespace: str = "inference"
    """Namespace of the endpoint (created with Pod Security ``baseline``), its PVC and Pods."""
    model: ModelConfig = ModelConfig()
    instance_type: str | None = None
    """GPU instance type of the endpoint; default: hyperpod.gpu_group.instance_type."""
    replicas: int = Field(default=2, ge=1)
    """Model replicas (one per node on single-GPU instances)."""
    rollout: Literal["surge", "scale_down_first"] = "scale_down_first"
    """How updates roll: ``surge`` lets the operator's Deployment start a new Pod before stopping
    an old one, which needs a free GPU slot (replicas x tensor-parallel + tensor-parallel <= GPUs);
    ``scale_down_first`` uses every GPU, and updates go through ``replicas - 1`` first."""
    tensor_parallel_size: int = Field(default=1, ge=1)
    """GPUs per replica (vLLM ``--tensor-parallel-size``)."""
    image: str = "lmcache/vllm-openai:v0.3.9"
    """vLLM image with LMCache (the fs:// remote connector)."""
    args: tuple[str, ...] = (
        "--max-model-len",
        "32768",
        "--gpu-memory-utilization",
        "0.9",
        "--kv-transfer-config",
        '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}',
    )
    """Extra vLLM arguments (model path, port and tensor parallelism are added)."""
    container_port: int = Field(default=8000, ge=1024, le=65535)
    """Port vLLM listens on."""
    metrics_port: int = Field(default=8000, ge=1024, le=65535)
    """Port of vLLM's /metrics (the operator scrapes it)."""
    cpu: int = Field(default=7, ge=1)
    """CPU request and limit per replica, in cores. 7 leaves room on one ml.g6e.4xlarge (16
    vCPUs) for the Curvine worker, its FUSE node plugin, the operator's sidecars and the EKS and
    HyperPod daemons (tests/k8s/test_rehearsal_budget.py)."""
    memory_gib: int = Field(default=64, ge=4)
    """Memory request and limit per replica, in GiB (L1 CPU offload lives here)."""
    routing_strategy: str = "prefixaware"
    """Router strategy: prefixaware, kvaware, session or roundrobin. Set once, at creation."""
    enable_l1_cache: bool = True
    """L1: LMCache CPU offload in the Pod."""
    enable_l2_cache: bool = True
    """L2: Curvine through the mutated fs:// URL (requires Tiered Storage and Curvine)."""

    @field_validator("name", "namespace")
    @classmethod
    def _label(cls, v: str) -> str:
        return _dns_label(v)

    @field_validator("image")
    @classmethod
    def _image(cls, v: str) -> str:
        return _pinned_image(v)

    @field_validator("routing_strategy")
    @classmethod
    def _routing(cls, v: str) -> str:
        if v not in ROUTING_STRATEGIES:
            raise RuleViolation(
                ", ".join(ROUTING_STRATEGIES), "use prefixaware (the default) or one of the others"
            )
        return v


class KvCacheConfig(Section):
    l2_backend: Literal["curvine", "fsx_lustre"] = "curvine"
    """The shared L2 store: ``curvine`` (the GPU nodes' NVMe pooled by Curvine) or
    ``fsx_lustre`` (an FSx for Lustre file system, optionally exported to S3; Curvine is then
    not deployed). Recorded in the lock file: switching loses the L2 contents and needs
    ``l2_backend_switch_confirmed``. docs/architecture.md says when to pick which."""
    l2_backend_switch_confirmed: bool = False
    """Set to true (for one deploy) to switch ``l2_backend`` on an environment whose lock file
    records the other backend; the cached KV of the old store is lost."""
    curvine: CurvineConfig = CurvineConfig()
    fsx: FsxLustreConfig = FsxLustreConfig()
    """The FSx for Lustre file system (used when ``l2_backend`` is ``fsx_lustre``)."""
    kyverno: KyvernoConfig = KyvernoConfig()
    endpoints: tuple[EndpointConfig, ...] = (EndpointConfig(),)
    """Inference endpoints served from the cluster; all share one Curvine."""
    l2_mount_path: str = "/mnt/curvine/l2cache"
    """Where the policy mounts curvine-pvc in the vLLM container (LMCACHE_REMOTE_URL is
    ``fs://localhost:0<path>/``): an absolute, normalized path of its own."""

    @field_validator("l2_mount_path")
    @classmethod
    def _mount_path(cls, v: str) -> str:
        # The URL is built from it as written, and the kernel's own trees must not be shadowed.
        segments = v.split("/")[1:]
        if (
            not v.startswith("/")
            or v == "/"
            or any(s in ("", ".", "..") for s in segments)
            or segments[0] in ("dev", "proc", "sys")
        ):
            raise RuleViolation(
                "an absolute path like /mnt/curvine/l2cache: no trailing '/', no '.', '..' or "
                "empty segments, not / and not under /dev, /proc or /sys",
                "use a directory of its own under /mnt",
            )
        return v

    @model_validator(mode="after")
    def _backend_owns_curvine(self) -> KvCacheConfig:
        """With fsx_lustre Curvine is not deployed: ``curvine.enabled`` follows the backend
        unless written out, and written out as true it contradicts it."""
        if self.l2_backend != "fsx_lustre" or not self.curvine.enabled:
            return self
        if "enabled" in self.curvine.model_fields_set:
            raise RuleViolation(
                "false (or absent) when kvcache.l2_backend is fsx_lustre: the file system is "
                "the L2 store and Curvine is not deployed",
                "remove kvcache.curvine.enabled, or set kvcache.l2_backend to curvine",
                field="kvcache.curvine.enabled",
                value=True,
            )
        # frozen model: set once, while validating
        object.__setattr__(self, "curvine", self.curvine.model_copy(update={"enabled": False}))
        return self

    @property
    def l2_enabled(self) -> bool:
        """A shared L2 store is deployed (Curvine, or the FSx file system)."""
        return self.curvine.enabled or self.l2_backend == "fsx_lustre"


def read_lock(env: str, lock_dir: Path | None = None) -> dict[str, Any] | None:
    path = (lock_dir or LOCK_DIR) / f"{env}.json"
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def lock_of(app: AppConfig) -> dict[str, Any]:
    """What the lock file records for this config (written by ``python -m k8s.render``)."""
    kv = app.kvcache
    return {
        "curvine_master_replicas": kv.curvine.master.replicas if kv.curvine.enabled else None,
        # Only a backend other than the default is written, so the locks of Curvine
        # environments stay as they were; a lock without the key means curvine.
        **({"l2_backend": kv.l2_backend} if kv.l2_backend != "curvine" else {}),
        "endpoints": {
            f"{e.namespace}/{e.name}": {"routing_strategy": e.routing_strategy}
            for e in kv.endpoints
        },
    }


def check_lock(app: AppConfig, lock: dict[str, Any] | None) -> None:
    """Refuse changes of values that cannot change after the first deploy."""
    if lock is None:
        return
    env = app.environment
    _check_backend_switch(app, lock)
    old = lock.get("curvine_master_replicas")
    new = app.kvcache.curvine.master.replicas
    if app.kvcache.curvine.enabled and old is not None and old != new:
        raise RuleViolation(
            f"{old} (recorded in k8s/locks/{env}.json: Curvine cannot change its master count "
            "after install)",
            f"set it back to {old}; to rebuild Curvine with {new} masters (L2 data is lost), "
            f"delete Curvine, remove curvine_master_replicas from k8s/locks/{env}.json",
            field="kvcache.curvine.master.replicas",
            value=new,
        )
    recorded = lock.get("endpoints", {})
    for i, e in enumerate(app.kvcache.endpoints):
        was = recorded.get(f"{e.namespace}/{e.name}", {}).get("routing_strategy")
        if was is not None and was != e.routing_strategy:
            raise RuleViolation(
                f"{was!r} (the operator accepts intelligentRoutingSpec only when the endpoint "
                f"is created; recorded in k8s/locks/{env}.json)",
                f"set it back to {was!r}, or create a new endpoint under another name",
                field=f"kvcache.endpoints.{i}.routing_strategy",
                value=e.routing_strategy,
            )


def _check_backend_switch(app: AppConfig, lock: dict[str, Any]) -> None:
    """The L2 store cannot change under a running environment without losing what it holds."""
    kv = app.kvcache
    was = lock.get("l2_backend", "curvine")
    if was == kv.l2_backend or kv.l2_backend_switch_confirmed:
        return
    raise RuleViolation(
        f"{was!r} (recorded in k8s/locks/{app.environment}.json): switching the L2 store "
        f"loses its contents (the cached KV of every endpoint)",
        f"set it back to {was!r}, or add kvcache.l2_backend_switch_confirmed: true for the "
        "deploy that switches (then remove it)",
        field="kvcache.l2_backend",
        value=kv.l2_backend,
    )


def _check_fsx(app: AppConfig) -> None:
    """Where the file system goes, and what its S3 link may name."""
    fsx = app.kvcache.fsx
    placement = ("hyperpod_subnet_id", "vpc_id", "client_security_group_id")
    if app.existing_cluster is None:
        for name in placement:
            if getattr(fsx, name) is not None:
                raise RuleViolation(
                    "null with a cluster the app creates: the file system goes into its HyperPod "
                    "subnet (network.hyperpod_subnet) and admits its cluster security group",
                    f"remove kvcache.fsx.{name}",
                    field=f"kvcache.fsx.{name}",
                    value=getattr(fsx, name),
                )
    else:
        # Checked in this order, so the VPC's command can name the subnet already written.
        cluster = app.existing_cluster.hyperpod_cluster_name
        describe = f"aws sagemaker describe-cluster --cluster-name {cluster}"
        for name, command in (
            ("hyperpod_subnet_id", f"{describe} --query 'VpcConfig.Subnets[0]'"),
            (
                "vpc_id",
                f"aws ec2 describe-subnets --subnet-ids {fsx.hyperpod_subnet_id} "
                "--query 'Subnets[0].VpcId'",
            ),
            ("client_security_group_id", f"{describe} --query 'VpcConfig.SecurityGroupIds[0]'"),
        ):
            if getattr(fsx, name) is None:
                raise RuleViolation(
                    "set with existing_cluster and l2_backend fsx_lustre: the file system is "
                    "placed in the HyperPod subnet (the GPU nodes' AZ) and admits only the nodes' "
                    "security group",
                    f"run `{command} --output text` and write the id to kvcache.fsx.{name}",
                    field=f"kvcache.fsx.{name}",
                    value=None,
                )
    repo = fsx.data_repository
    if repo is not None and repo.bucket_region != app.region:
        raise RuleViolation(
            f"{app.region} (the environment's region: the association links a bucket in the "
            "file system's region)",
            f"use a bucket in {app.region}, or remove kvcache.fsx.data_repository",
            field="kvcache.fsx.data_repository.bucket_region",
            value=repo.bucket_region,
        )


def _check_endpoint(app: AppConfig, i: int, e: EndpointConfig) -> None:
    field = f"kvcache.endpoints.{i}"
    gpu = app.hyperpod.gpu_group
    itype = e.instance_type or gpu.instance_type
    inst = GPU_INSTANCES.get(itype)  # every type there has local NVMe
    if inst is None:
        raise RuleViolation(
            f"a GPU type with local NVMe ({', '.join(GPU_INSTANCES)})",
            "use a G6e or P5 type",
            field=f"{field}.instance_type",
            value=itype,
        )
    if itype != gpu.instance_type:
        raise RuleViolation(
            f"{gpu.instance_type} (hyperpod.gpu_group.instance_type: the only GPU nodes)",
            "remove instance_type or make it match the GPU group",
            field=f"{field}.instance_type",
            value=itype,
        )
    tp = e.tensor_parallel_size
    if tp > inst.gpus:
        raise RuleViolation(
            f"at most {inst.gpus} (GPUs of one {itype})",
            "lower tensor_parallel_size or pick a larger instance",
            field=f"{field}.tensor_parallel_size",
            value=tp,
        )
    m = e.model
    need_gib = m.parameters_billion * 1e9 * m.bytes_per_parameter / tp / 2**30
    if need_gib > inst.gpu_memory_gib:
        raise RuleViolation(
            f"weights that fit one GPU: {m.parameters_billion}e9 params x "
            f"{m.bytes_per_parameter} bytes / tensor-parallel {tp} = {need_gib:.1f} GiB > "
            f"{inst.gpu_memory_gib} GiB per GPU of {itype}",
            "raise tensor_parallel_size, quantize (bytes_per_parameter 1) or use a larger GPU",
            field=f"{field}.model.parameters_billion",
            value=m.parameters_billion,
        )
    addon = app.addons.inference_operator
    op = addon.operator
    if m.source not in op.model_sources:
        raise RuleViolation(
            f"{' or '.join(op.model_sources)} (model sources of operator {op.version}, shipped "
            f"by the pinned add-on {addon.version})",
            "use source s3 with model.s3_bucket (stage the weights with aws s3 sync, see "
            "docs/endpoints-and-l2-policy.md), or pin an add-on version shipping operator 3.1+ "
            "after checking `aws eks describe-addon-versions --addon-name "
            f"{ADDON_NAME} --kubernetes-version {app.eks.kubernetes_version}` and adding "
            "its CRD (infra/config/operator_versions.py)",
            field=f"{field}.model.source",
            value=m.source,
        )
    if m.source == "s3" and not m.s3_bucket:
        raise RuleViolation(
            "a bucket name when model.source is s3",
            "set model.s3_bucket",
            field=f"{field}.model.s3_bucket",
            value=None,
        )
    if e.enable_l2_cache and app.tiered_storage.mode != "Enable":
        raise RuleViolation(
            "false while tiered_storage.mode is Disable (L2 rides on HyperPod Tiered Storage)",
            "set tiered_storage.mode to Enable, or enable_l2_cache to false",
            field=f"{field}.enable_l2_cache",
            value=True,
        )
    if e.enable_l2_cache and not app.kvcache.l2_enabled:
        raise RuleViolation(
            "false while kvcache.curvine.enabled is false (Curvine is the L2 store)",
            "set kvcache.curvine.enabled to true, or enable_l2_cache to false",
            field=f"{field}.enable_l2_cache",
            value=True,
        )


def model_bucket_names(app: AppConfig) -> tuple[str, ...]:
    """Buckets the S3 CSI driver's role may read: ``addons.s3_csi.model_bucket_names`` plus the
    bucket of every endpoint whose model source is s3 (added here, so the two cannot diverge)."""
    names = list(app.addons.s3_csi.model_bucket_names)
    for e in app.kvcache.endpoints:
        if e.model.source == "s3" and e.model.s3_bucket and e.model.s3_bucket not in names:
            names.append(e.model.s3_bucket)
    return tuple(names)


def _check_gpu_slots(app: AppConfig) -> None:
    """All endpoints share the GPU group: replicas x TP must fit, with a surge slot if asked."""
    gpu = app.hyperpod.gpu_group
    inst = GPU_INSTANCES[gpu.instance_type]
    total = gpu.instance_count * inst.gpus
    used = 0
    for i, e in enumerate(app.kvcache.endpoints):
        used += e.replicas * e.tensor_parallel_size
        surge = e.tensor_parallel_size if e.rollout == "surge" else 0
        if used + surge > total:
            why = (
                f"{used} GPUs for replicas + {surge} for the rollout's surge Pod > {total} GPUs "
                f"({gpu.instance_count} nodes x {inst.gpus}): the surge Pod would stay Pending and "
                "the rollout would deadlock"
                if surge and used <= total
                else f"{used} GPUs > {total} GPUs ({gpu.instance_count} nodes x {inst.gpus})"
            )
            raise RuleViolation(
                f"replicas that fit the GPU group: {why}",
                "lower replicas, add GPU nodes, or set rollout: scale_down_first",
                field=f"kvcache.endpoints.{i}.replicas",
                value=e.replicas,
            )


def check_kvcache(app: AppConfig, lock_dir: Path | None = None) -> None:
    """Rules that span the Kubernetes layer and other sections; raise RuleViolation(field=...)."""
    kv = app.kvcache
    cv = kv.curvine
    names = [f"{e.namespace}/{e.name}" for e in kv.endpoints]
    if len(set(names)) != len(names):
        raise RuleViolation(
            "unique namespace/name pairs",
            "rename one endpoint",
            field="kvcache.endpoints",
            value=names,
        )
    if cv.evictor.low_water_percent >= cv.evictor.high_water_percent:
        raise RuleViolation(
            f"less than high_water_percent ({cv.evictor.high_water_percent})",
            "lower low_water_percent",
            field="kvcache.curvine.evictor.low_water_percent",
            value=cv.evictor.low_water_percent,
        )
    if cv.fuse.memory_limit_mib < cv.fuse.memory_request_mib:
        raise RuleViolation(
            f"at least memory_request_mib ({cv.fuse.memory_request_mib})",
            "raise memory_limit_mib",
            field="kvcache.curvine.fuse.memory_limit_mib",
            value=cv.fuse.memory_limit_mib,
        )
    if cv.fuse.cpu_limit_millicores < cv.fuse.cpu_request_millicores:
        raise RuleViolation(
            f"at least cpu_request_millicores ({cv.fuse.cpu_request_millicores})",
            "raise cpu_limit_millicores",
            field="kvcache.curvine.fuse.cpu_limit_millicores",
            value=cv.fuse.cpu_limit_millicores,
        )
    inst = GPU_INSTANCES.get(app.hyperpod.gpu_group.instance_type)
    if cv.enabled and inst is not None:
        nvme_gib = int(inst.nvme_gb * 1e9 / 2**30)
        if cv.worker.capacity_gib + cv.worker.reserved_gib > nvme_gib:
            raise RuleViolation(
                f"capacity + reserved <= {nvme_gib} GiB (local NVMe of "
                f"{app.hyperpod.gpu_group.instance_type})",
                "lower kvcache.curvine.worker.capacity_gib",
                field="kvcache.curvine.worker.capacity_gib",
                value=cv.worker.capacity_gib,
            )
    if cv.namespace in {e.namespace for e in kv.endpoints} | {kv.kyverno.namespace}:
        raise RuleViolation(
            "a namespace of its own (the only privileged one)",
            "use different namespaces for Curvine, Kyverno and the endpoints",
            field="kvcache.curvine.namespace",
            value=cv.namespace,
        )
    namespaces = sorted({e.namespace for e in kv.endpoints})
    if cv.enabled and cv.static_pv.enabled and len(namespaces) > 1:
        # Each namespace has its own curvine-pvc, and a PersistentVolume binds one claim only:
        # the second claim of the one static PV would stay Pending, and its endpoints with it.
        raise RuleViolation(
            f"false while the endpoints use more than one namespace ({', '.join(namespaces)}): "
            "the static PersistentVolume binds one claim",
            "put the endpoints in one namespace, or set static_pv.enabled: false (dynamic "
            "provisioning gives each namespace its own volume on curvine-sc)",
            field="kvcache.curvine.static_pv.enabled",
            value=True,
        )
    if kv.l2_backend == "fsx_lustre":
        _check_fsx(app)
    if not kv.kyverno.install and app.existing_cluster is None:
        raise RuleViolation(
            "true on a cluster this app creates (no Kyverno is installed there)",
            "remove kvcache.kyverno.install, or set existing_cluster to use an installed Kyverno",
            field="kvcache.kyverno.install",
            value=False,
        )
    for i, e in enumerate(kv.endpoints):
        _check_endpoint(app, i, e)
    _check_gpu_slots(app)
    check_lock(app, read_lock(app.environment, lock_dir))
