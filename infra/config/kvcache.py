"""The Kubernetes layer: Curvine or FSx for Lustre (L2), Kyverno and the inference endpoints.

Values that Kubernetes or Curvine cannot change after the first deploy (the Curvine master count,
an endpoint's routing strategy) are recorded in a committed lock file (``infra/config/locks.py``);
the loader refuses a config that disagrees with its lock.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from infra.config.base import Section
from infra.config.curvine import CurvineConfig
from infra.config.errors import RuleViolation
from infra.config.fields import dns_label, pinned_image, s3_bucket
from infra.config.fsx import FsxLustreConfig

ROUTING_STRATEGIES = ("prefixaware", "kvaware", "session", "roundrobin")
L2_BACKENDS = ("curvine", "fsx_lustre")


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
    them with ``aws s3 sync``, docs/kubernetes-layer.md). ``huggingface`` needs an add-on
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
        if v is not None:
            s3_bucket(v, "write the bare bucket name; put the key prefix in s3_prefix")
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
        return dns_label(v)

    @field_validator("image")
    @classmethod
    def _image(cls, v: str) -> str:
        return pinned_image(v)

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
