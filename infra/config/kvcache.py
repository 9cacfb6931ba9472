"""The Kubernetes layer: the inference endpoints, each with its L2 backend, and what those
backends need (Curvine or FSx for Lustre, Kyverno and the L2 policy).

Each endpoint's ``l2_backend`` is concrete once the section validates (null takes
``kvcache.l2_backend``), and Curvine is deployed exactly when some endpoint uses it. Values that
Kubernetes or Curvine cannot change after the first deploy (the Curvine master count, an
endpoint's routing strategy and L2 backend) are recorded in a committed lock file
(``infra/config/locks.py``); the loader refuses a config that disagrees with its lock.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from pydantic import Field, PrivateAttr, field_validator, model_validator

from infra.config import images
from infra.config.autoscaling import AutoscalingConfig
from infra.config.base import Section
from infra.config.curvine import CurvineConfig
from infra.config.errors import RuleViolation
from infra.config.fields import dns_label, pinned_image, s3_bucket
from infra.config.fsx import FsxLustreConfig

ROUTING_STRATEGIES = ("prefixaware", "kvaware", "session", "roundrobin")
# Host memory vLLM itself needs in the Pod, outside LMCache's CPU cache: the API server and engine
# process (Python, torch, the CUDA runtime, the tokenizer) and, per GPU, its worker's CUDA context
# and pinned transfer buffers. The rest of the Pod's memory limit is L1.
VLLM_HOST_GIB, VLLM_HOST_GIB_PER_GPU = 8, 2
L2Backend = Literal["curvine", "fsx_lustre", "tieredstorage", "none"]
L2_BACKENDS: tuple[L2Backend, ...] = get_args(L2Backend)
# The backends the L2 policy mounts into the Pod as a shared file system (LMCache's fs:// URL,
# one read request per chunk); tieredstorage is the operator's own sagemaker-hyperpod:// URL,
# left as it renders it.
MOUNTED_L2_BACKENDS: tuple[L2Backend, ...] = ("curvine", "fsx_lustre")


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


# A Hugging Face repository id: an optional owner and a name (huggingface_hub's
# validate_repo_id: letters, digits, '-', '_', '.'; not starting with '-' or '.').
HF_REPO_ID = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._-]*/)?[A-Za-z0-9][A-Za-z0-9._-]*")


# Where the app can have the operator get the weights from; which of them the pinned operator
# takes is checked with the operator known (infra/config/rules.py), so one message lists both.
MODEL_SOURCES = ("s3", "huggingface")


class ModelConfig(Section):
    source: str = Field(default="s3", json_schema_extra={"enum": list(MODEL_SOURCES)})
    """Where the operator downloads the weights from. ``s3``: ``s3_bucket``/``s3_prefix`` (stage
    them with ``aws s3 sync``, docs/kubernetes-layer.md). ``huggingface`` needs an add-on
    whose operator is 3.1 or later (infra/config/operator_versions.py)."""
    hugging_face_model_id: str = "Qwen/Qwen3-8B"
    """Hugging Face model id (source huggingface)."""
    s3_bucket: str | None = PLACEHOLDER_MODEL_BUCKET
    """Bucket of the weights (source s3); a placeholder until replaced: left there, the synth
    warns and ``hpkv preflight`` refuses it. The S3 CSI driver's role may read it (it is added to
    ``addons.s3_csi.model_bucket_names``)."""
    s3_prefix: str = "Qwen/Qwen3-8B"
    """Key prefix of the weights in the bucket (source s3), without a leading ``/``."""
    parameters_billion: float = Field(default=8.2, gt=0)
    """Parameter count in billions (for the fits-in-GPU-memory check)."""
    bytes_per_parameter: float = Field(default=2.0, gt=0)
    """Bytes per parameter as served (2 for bf16/fp16, 1 for fp8)."""

    @field_validator("hugging_face_model_id")
    @classmethod
    def _hf_id(cls, v: str) -> str:
        if not HF_REPO_ID.fullmatch(v) or len(v) > 96:
            tail = v.split("huggingface.co/", 1)[-1].strip("/")
            raise RuleViolation(
                "a Hugging Face model id, owner/name like Qwen/Qwen3-8B (letters, digits, '-', "
                "'_' and '.'; at most 96 characters), not a URL",
                f"write {tail if HF_REPO_ID.fullmatch(tail) else 'owner/name'}: the part of the "
                "model page's URL after huggingface.co/",
            )
        return v

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
    """Name of the InferenceEndpointConfig and of the endpoint; also names its L2 directory. Its
    SageMaker endpoint and model are ``<environment>-<name>`` (each unique per account and Region,
    at most 63 characters), so no two endpoints of an environment share a name, whatever their
    namespace. With ``autoscaling``, at most 40 characters: the operator's ScaledObject is
    ``<name>-scaled-object`` (read off what it creates; not documented) and KEDA refuses one
    over 54."""
    namespace: str = "inference"
    """Namespace of the endpoint, its PVC and Pods (docs/kubernetes-layer.md: what it admits).
    The app creates it: not ``default``, a ``kube-`` one, the platform add-ons' (
    ``hyperpod-inference-system``, ``aws-hyperpod``, ``cert-manager``, ``amazon-guardduty``),
    Kyverno's or Curvine's."""
    model: ModelConfig = ModelConfig()
    instance_type: str | None = None
    """GPU instance type of the endpoint; default: hyperpod.gpu_group.instance_type."""
    replicas: int = Field(default=2, ge=1)
    """Model replicas (one per node on single-GPU instances). With ``autoscaling``, the count
    it starts with (the CRD's ``replicas``): within ``min_replicas``..``max_replicas``."""
    autoscaling: AutoscalingConfig | None = None
    """Scale the replicas on a signal from the metrics store (docs/autoscaling.md); null (the
    default): a fixed ``replicas``."""
    rollout: Literal["surge", "scale_down_first"] = "scale_down_first"
    """How updates roll: ``surge`` lets the operator's Deployment start a new Pod before stopping
    an old one, which needs a free GPU slot (replicas x tensor-parallel + tensor-parallel <= GPUs);
    ``scale_down_first`` uses every GPU, and updates go through ``replicas - 1`` first."""
    tensor_parallel_size: int = Field(default=1, ge=1)
    """GPUs per replica (vLLM ``--tensor-parallel-size``)."""
    image: str = images.RECOMMENDED
    """vLLM image with LMCache. Supported: v0.4.7 (LMCache 0.4.7, vLLM 0.23.0; CUDA 13, so the
    GPU nodes' driver must support CUDA 13) and v0.3.15 (LMCache 0.3.15, vLLM 0.16.0; CUDA 12.8).
    Both have fs:// for curvine and fsx_lustre, sagemaker-hyperpod:// for tieredstorage, and
    recompute a failed L2 read. A known image that lacks what the endpoint's backend needs is
    refused (infra/config/images.py), from whatever registry that keeps the repository path
    (an ECR mirror of lmcache/vllm-openai too): v0.3.9 (vLLM 0.11.0) has no sagemaker-hyperpod://
    connector and runs a request whose L2 read failed on unfilled KV blocks; v0.5.5-cu129 fails
    at Pod start. The reference must parse as a registry parses it (lower-case path)."""
    args: tuple[str, ...] = (
        "--max-model-len",
        "32768",
        "--gpu-memory-utilization",
        "0.9",
        "--kv-transfer-config",
        '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both",'
        '"kv_load_failure_policy":"recompute"}',
    )
    """Extra vLLM arguments (model path, port and tensor parallelism are added).
    ``kv_load_failure_policy`` (vLLM 0.13.0+; default ``recompute``, ``fail`` from 0.17.0) is
    set explicitly: a failed L2 read is recomputed instead of failing the request."""
    container_port: int = Field(default=8000, ge=1024, le=65535)
    """Port vLLM listens on."""
    metrics_port: int = 8000
    """Port of vLLM's /metrics (the operator scrapes it): vLLM serves it on the port it listens
    on, so it equals ``container_port``."""
    cpu: int = Field(default=7, ge=1)
    """CPU request and limit per replica, in cores. 7 leaves room on one ml.g6e.4xlarge (16
    vCPUs) for the Curvine worker, its FUSE node plugin, the operator's sidecars and the EKS and
    HyperPod daemons; a replica must fit one GPU node with them (infra/config/node_budget.py)."""
    memory_gib: int = Field(default=64, ge=VLLM_HOST_GIB + VLLM_HOST_GIB_PER_GPU)
    """Memory request and limit per replica, in GiB. With L1 on, what vLLM does not need is
    LMCache's CPU cache (``l1_cache_gib``): ``memory_gib - (8 + 2 x tensor_parallel_size)``, where
    that size reaches LMCache (operator 3.2 drops it on tieredstorage and none endpoints, which
    then get LMCache's default 5 GiB). A replica must fit one GPU node beside what else runs
    there (infra/config/node_budget.py)."""
    routing_strategy: str = "prefixaware"
    """Router strategy: prefixaware, kvaware, session or roundrobin. Set once, at creation."""
    enable_l1_cache: bool = True
    """L1: LMCache's CPU cache inside the Pod, in the Pod's own memory (``memory_gib``), sized
    by ``LMCACHE_MAX_LOCAL_CPU_SIZE``. HyperPod Tiered Storage's memory is not L1: it is the
    ``tieredstorage`` L2."""
    if TYPE_CHECKING:  # what a loaded config holds: KvCacheConfig resolves a null one
        l2_backend: L2Backend = cast(L2Backend, None)
    else:
        l2_backend: L2Backend | None = None
        """This endpoint's L2 (the values of ``kvcache.l2_backend``); null (the default) takes
        ``kvcache.l2_backend``. Recorded in the lock file: switching loses what the endpoint had
        cached and needs ``kvcache.l2_backend_switch_confirmed``."""

    # Set while the kvcache section resolves a null l2_backend: which field to name in messages.
    _inherits_l2_backend: bool = PrivateAttr(default=False)

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

    @property
    def l1_cache_gib(self) -> int:
        """The CPU cache it asks LMCache for (``LMCACHE_MAX_LOCAL_CPU_SIZE``, GiB): the Pod's
        memory limit less what vLLM needs (``VLLM_HOST_GIB`` + ``VLLM_HOST_GIB_PER_GPU`` per
        GPU); 0 with L1 off. What it gets: ``infra.config.model.l1_in_container_gib``."""
        if not self.enable_l1_cache:
            return 0
        return self.memory_gib - VLLM_HOST_GIB - VLLM_HOST_GIB_PER_GPU * self.tensor_parallel_size

    def l2_field(self, i: int) -> str:
        """The key that set its backend, for a message: its own ``kvcache.endpoints.<i>.
        l2_backend``, or ``kvcache.l2_backend`` when it inherits that."""
        return (
            "kvcache.l2_backend"
            if self._inherits_l2_backend
            else f"kvcache.endpoints.{i}.l2_backend"
        )


class KvCacheConfig(Section):
    l2_backend: L2Backend = "curvine"
    """The L2 of every endpoint that does not set its own: ``curvine`` (the GPU nodes' NVMe
    pooled by Curvine, mounted in the Pod and read by LMCache as ``fs://``), ``fsx_lustre`` (an
    FSx for Lustre file system mounted the same way, optionally exported to S3),
    ``tieredstorage`` (HyperPod's managed tier: the memory Tiered Storage reserves on every node
    for the ai-toolkit daemon, read through LMCache's ``sagemaker-hyperpod://`` connector; needs
    ``tiered_storage.mode: Enable``) or ``none`` (L1 only). Curvine is deployed only when some
    endpoint uses it, the FSx file system likewise, Kyverno and the L2 policy only for those
    two; Curvine and FSx do not share an environment. docs/architecture.md says when to pick
    which."""
    l2_backend_switch_confirmed: bool = False
    """Set to true (for one deploy) to switch an endpoint's ``l2_backend`` from the one its
    environment's lock file records; what the endpoint had cached in the old backend is lost."""
    curvine: CurvineConfig = CurvineConfig()
    fsx: FsxLustreConfig = FsxLustreConfig()
    """The FSx for Lustre file system (created when some endpoint's ``l2_backend`` is
    ``fsx_lustre``)."""
    kyverno: KyvernoConfig = KyvernoConfig()
    endpoints: tuple[EndpointConfig, ...] = (EndpointConfig(),)
    """Inference endpoints served from the cluster; those on one shared backend share its
    store (each in a directory named after it)."""
    l2_mount_path: str = "/mnt/curvine/l2cache"
    """Where the policy mounts the L2 claim in the vLLM container of a curvine or fsx_lustre
    endpoint (LMCACHE_REMOTE_URL is ``fs://localhost:0<path>/``): an absolute, normalized path
    of its own."""

    @field_validator("endpoints")
    @classmethod
    def _some_endpoint(cls, v: tuple[EndpointConfig, ...]) -> tuple[EndpointConfig, ...]:
        if not v:
            raise RuleViolation(
                "at least one endpoint: without one the app deploys the GPU nodes, Curvine and "
                "the operator, and serves nothing",
                "list an endpoint under kvcache.endpoints (config/dev.yaml has one), or remove "
                "the key to deploy the default endpoint",
            )
        return v

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

    @model_validator(mode="before")
    @classmethod
    def _removed_keys(cls, data: Any) -> Any:
        """Keys the endpoints' ``l2_backend`` replaced: say so rather than "unknown key"."""
        curvine = data.get("curvine") if isinstance(data, dict) else None
        if isinstance(curvine, dict) and "enabled" in curvine:
            raise RuleViolation(
                "nothing: Curvine is deployed exactly when some endpoint's l2_backend is curvine",
                "remove kvcache.curvine.enabled; to run without Curvine set the endpoints' "
                "l2_backend (or kvcache.l2_backend) to fsx_lustre, tieredstorage or none",
                field="kvcache.curvine.enabled",
                value=curvine["enabled"],
            )
        endpoints = data.get("endpoints") if isinstance(data, dict) else None
        for i, e in enumerate(endpoints if isinstance(endpoints, list | tuple) else ()):
            if isinstance(e, dict) and "enable_l2_cache" in e:
                raise RuleViolation(
                    "l2_backend (curvine, fsx_lustre, tieredstorage or none): enable_l2_cache "
                    "was replaced by it",
                    "write l2_backend: none where enable_l2_cache was false, and remove "
                    "enable_l2_cache (the endpoint then takes kvcache.l2_backend)",
                    field=f"kvcache.endpoints.{i}.enable_l2_cache",
                    value=e["enable_l2_cache"],
                )
        return data

    @model_validator(mode="after")
    def _resolve_backends(self) -> KvCacheConfig:
        """Every endpoint's backend concrete; one mounted store per environment."""
        resolved = tuple(
            e if e.l2_backend is not None else self._inherit(e) for e in self.endpoints
        )
        # frozen model: set once, while validating
        object.__setattr__(self, "endpoints", resolved)
        self._one_mounted_backend()
        self._images_serve_backends()
        self._room_for_l1()
        return self

    def _room_for_l1(self) -> None:
        """The Pod's memory holds vLLM's own need (below it the container is OOM-killed as the
        engine starts, L1 or not) and, with L1 on, at least 1 GiB of L1."""
        for i, e in enumerate(self.endpoints):
            vllm = VLLM_HOST_GIB + VLLM_HOST_GIB_PER_GPU * e.tensor_parallel_size
            field = f"kvcache.endpoints.{i}.memory_gib"
            if not e.enable_l1_cache and e.memory_gib < vllm:
                raise RuleViolation(
                    f"at least {vllm} with tensor_parallel_size {e.tensor_parallel_size}: vLLM's "
                    "API server and engine need that much of the Pod's memory",
                    f"raise memory_gib to {vllm}",
                    field=field,
                    value=e.memory_gib,
                )
            need = vllm + 1
            if e.enable_l1_cache and e.memory_gib < need:
                raise RuleViolation(
                    f"at least {need} with enable_l1_cache true and tensor_parallel_size "
                    f"{e.tensor_parallel_size}: vLLM needs {vllm} GiB of the Pod's memory "
                    "and LMCache's CPU cache (L1) gets the rest",
                    f"raise memory_gib to {need} or more, or set enable_l1_cache: false",
                    field=field,
                    value=e.memory_gib,
                )

    def _images_serve_backends(self) -> None:
        """A known image must carry what its endpoint's backend needs (infra/config/images.py)."""
        for i, e in enumerate(self.endpoints):
            found = images.shortfall(e.image, e.l2_backend, e.args)
            if found is not None:
                why, args_fix = found
                fix = f"set kvcache.endpoints.{i}.image to {images.RECOMMENDED}"
                if images.mirrored(e.image):
                    fix += f" (or your registry's copy of tag {images.SUPPORTED[0]})"
                if args_fix:
                    fix += f", or drop kv_load_failure_policy from kvcache.endpoints.{i}.args"
                raise RuleViolation(
                    f"an image that serves l2_backend {e.l2_backend}, like {images.RECOMMENDED}: "
                    f"{why}",
                    fix,
                    field=f"kvcache.endpoints.{i}.image",
                    value=e.image,
                )

    def _inherit(self, e: EndpointConfig) -> EndpointConfig:
        out = e.model_copy(update={"l2_backend": self.l2_backend})
        out._inherits_l2_backend = True
        return out

    def _one_mounted_backend(self) -> None:
        """One policy mount path and one claim per namespace: Curvine or FSx, not both."""
        curvine = next((e for e in self.endpoints if e.l2_backend == "curvine"), None)
        if curvine is None:
            return
        for i, e in enumerate(self.endpoints):
            if e.l2_backend == "fsx_lustre":
                raise RuleViolation(
                    f"curvine, tieredstorage or none while endpoint {curvine.namespace}/"
                    f"{curvine.name} uses curvine: Curvine and FSx for Lustre do not share an "
                    "environment",
                    f"use another environment for FSx, or set {e.l2_field(i)} to curvine",
                    field=e.l2_field(i),
                    value=e.l2_backend,
                )

    @property
    def l2_backends(self) -> frozenset[L2Backend]:
        """The backends some endpoint's L2 is on. Curvine, the FSx file system, Kyverno and the
        L2 policy are deployed for the backends in it, and only for them."""
        return frozenset(e.l2_backend for e in self.endpoints)

    @property
    def mounted_l2_backend(self) -> L2Backend | None:
        """The file system the L2 policy mounts (curvine or fsx_lustre; at most one per
        environment), or None: no endpoint has one."""
        return next((b for b in MOUNTED_L2_BACKENDS if b in self.l2_backends), None)

    @property
    def mounted_l2_endpoints(self) -> tuple[EndpointConfig, ...]:
        """The endpoints whose L2 the policy mounts, in config order."""
        return tuple(e for e in self.endpoints if e.l2_backend in MOUNTED_L2_BACKENDS)

    @property
    def uses_kyverno(self) -> bool:
        """The L2 policy exists (some endpoint's L2 is mounted), so Kyverno must serve it: the
        app's release (``installs_kyverno``) or the cluster's own."""
        return self.mounted_l2_backend is not None

    @property
    def installs_kyverno(self) -> bool:
        """The app installs Kyverno: the policy needs it and ``kyverno.install`` is on."""
        return self.uses_kyverno and self.kyverno.install
