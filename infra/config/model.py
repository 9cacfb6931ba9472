"""The typed configuration of one environment (``config/<env>.yaml``): ``AppConfig``, made of one
section per concern (its own module here), and the values derived from the whole of it.

Every field has a default and a docstring; units are in the names (``_gib``, ``_days``). Field
rules shared by sections are in ``fields``; rules that span sections in ``rules`` (they name the
field to change); the lock file in ``locks``. ``loader`` runs them in that order.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import field_validator, model_validator

from infra.config.addons import AddonsConfig
from infra.config.base import Section
from infra.config.bench import BenchConfig
from infra.config.eks import EksConfig
from infra.config.errors import RuleViolation
from infra.config.fields import region
from infra.config.hyperpod import ExistingClusterConfig, HyperPodConfig, hyperpod_cluster_name
from infra.config.images import LMCACHE_DEFAULT_L1_GIB
from infra.config.kvcache import (
    MOUNTED_L2_BACKENDS,
    PLACEHOLDER_MODEL_BUCKET,
    EndpointConfig,
    KvCacheConfig,
    L2Backend,
)
from infra.config.network import NetworkConfig
from infra.config.observability import ObservabilityConfig
from infra.config.pipeline import PipelineConfig
from infra.config.tags import check_tags
from infra.config.tiered_storage import TieredStorageConfig

GIB = 2**30
ACCOUNT = re.compile(r"^[0-9]{12}$")
# Part of every stack name (<project>-<environment>-network; CloudFormation: [A-Za-z][A-Za-z0-9-]*)
# and of the names derived from it; lower case, as project is.
ENVIRONMENT = re.compile(r"^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$")
ENVIRONMENT_ALLOWED = (
    "1-32 lower-case letters, digits and '-', starting with a letter and ending with a letter "
    "or digit (it is part of every stack name, e.g. hyperpod-kvcache-dev-network)"
)


def environment_name(name: str) -> str:
    if not ENVIRONMENT.match(name):
        raise RuleViolation(
            ENVIRONMENT_ALLOWED, "rename the environment (and its file, config/<environment>.yaml)"
        )
    return name


class AppConfig(Section):
    project: str = "hyperpod-kvcache"
    """Project name: prefix of stack names and value of the ``project`` tag."""
    environment: str
    """Environment name; must equal the config file's name (dev for config/dev.yaml): 1-32
    lower-case letters, digits and '-', starting with a letter (it is part of every stack
    name)."""
    account: str
    """AWS account id the environment deploys to (12 digits)."""
    region: str = "us-west-2"
    """AWS region."""
    tags: dict[str, str] = {}
    """Extra tags on every resource and stack (``project`` and ``environment`` are always added).
    AWS's tag rules apply: keys of 1-128 and values of 1-256 letters, digits, spaces and
    ``_ . : / = + - @``, no key starting with ``aws:``, at most 48 tags."""
    retain_stateful_resources: bool = False
    """Keep buckets, keys and log groups on destroy (prod). When false they are deleted and
    buckets are emptied first."""
    termination_protection: bool = False
    """CloudFormation termination protection on every stack."""
    network: NetworkConfig = NetworkConfig()
    eks: EksConfig = EksConfig()
    hyperpod: HyperPodConfig = HyperPodConfig()
    existing_cluster: ExistingClusterConfig | None = None
    """Set to attach to an existing HyperPod EKS cluster instead of creating one; then no
    ``network`` section (the cluster's own network is used; even one of default values is
    refused)."""
    tiered_storage: TieredStorageConfig = TieredStorageConfig()
    addons: AddonsConfig = AddonsConfig()
    kvcache: KvCacheConfig = KvCacheConfig()
    pipeline: PipelineConfig = PipelineConfig()
    observability: ObservabilityConfig = ObservabilityConfig()
    bench: BenchConfig = BenchConfig()

    @field_validator("project")
    @classmethod
    def _project(cls, v: str) -> str:
        if not re.match(r"^[a-z][a-z0-9-]{1,30}[a-z0-9]$", v):
            raise RuleViolation("3-32 lower-case letters, digits and hyphens", "rename project")
        return v

    @field_validator("environment")
    @classmethod
    def _environment(cls, v: str) -> str:
        return environment_name(v)

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: dict[str, str]) -> dict[str, str]:
        check_tags(v)
        return v

    @field_validator("account")
    @classmethod
    def _account(cls, v: str) -> str:
        if not ACCOUNT.match(v):
            raise RuleViolation(
                "a 12-digit account id, quoted in YAML",
                'run `aws sts get-caller-identity --query Account` and write it as "123456789012"',
            )
        return v

    @field_validator("region")
    @classmethod
    def _region(cls, v: str) -> str:
        return region(v, "fix region")

    @model_validator(mode="before")
    @classmethod
    def _unused_network(cls, data: Any) -> Any:
        """``network`` describes a VPC the app creates or extends; an existing cluster brings
        its own, so settings there would be ignored without a word."""
        if not (isinstance(data, dict) and data.get("existing_cluster") and data.get("network")):
            return data
        # Even values equal to the defaults: config/dev.yaml's network section is the defaults,
        # and a config copied from it keeps the section while nothing reads it.
        raise RuleViolation(
            "no network settings with existing_cluster: the cluster's own VPC and subnets are "
            "used (existing_cluster names them)",
            "remove the network section",
            field="network",
            value=data["network"],
        )

    @model_validator(mode="after")
    def _name_clusters(self) -> AppConfig:
        """A cluster whose name the config leaves out is named after the environment."""
        derived = self.stack_prefix
        if self.eks.cluster_name is None:
            # frozen models: set once, while validating
            object.__setattr__(self, "eks", self.eks.model_copy(update={"cluster_name": derived}))
        if self.hyperpod.cluster_name is None:
            try:
                hyperpod_cluster_name(derived, "")
            except RuleViolation:
                raise RuleViolation(
                    "a HyperPod cluster name of at most 63 characters: left out, it is "
                    f"<project>-<environment>, {derived} ({len(derived)} characters)",
                    "write hyperpod.cluster_name, or shorten project or environment",
                    field="hyperpod.cluster_name",
                ) from None
            hyperpod = self.hyperpod.model_copy(update={"cluster_name": derived})
            object.__setattr__(self, "hyperpod", hyperpod)
        return self

    @property
    def existing(self) -> bool:
        return self.existing_cluster is not None

    @property
    def stack_prefix(self) -> str:
        return f"{self.project}-{self.environment}"


def sagemaker_endpoint_name(app: AppConfig, e: EndpointConfig) -> str:
    """The SageMaker endpoint the operator creates for ``e`` (the InferenceEndpointConfig's
    ``endpointName``). SageMaker endpoint names are unique per account and Region, so it carries
    the environment: two environments of one account can serve an endpoint of one name."""
    return f"{app.environment}-{e.name}"


def sagemaker_model_name(app: AppConfig, e: EndpointConfig) -> str:
    """The SageMaker model the operator creates for ``e`` (the InferenceEndpointConfig's
    ``modelName``). Model names are unique per account and Region too, so it carries the
    environment the same way (and fits SageMaker's 63 characters when the endpoint name does)."""
    return f"{app.environment}-{e.name}"


def topic_name(app: AppConfig) -> str:
    return app.observability.alert_topic_name or f"{app.stack_prefix}-kvcache-alerts"


def creates_collector(app: AppConfig) -> bool:
    """Whether the observability stack creates the managed collector: always on a cluster this
    app creates; on an existing one only with the collector's network in config."""
    obs = app.observability
    return obs.enabled and (app.existing_cluster is None or bool(obs.scraper_subnet_ids))


def model_bucket_names(app: AppConfig) -> tuple[str, ...]:
    """Buckets the S3 CSI driver's role may read: ``addons.s3_csi.model_bucket_names`` plus the
    bucket of every endpoint whose model source is s3 (added here, so the two cannot diverge)."""
    names = list(app.addons.s3_csi.model_bucket_names)
    for e in app.kvcache.endpoints:
        if e.model.source == "s3" and e.model.s3_bucket and e.model.s3_bucket not in names:
            names.append(e.model.s3_bucket)
    return tuple(names)


def placeholder_buckets(app: AppConfig) -> list[tuple[str, str]]:
    """(field, endpoint) of each endpoint whose weights are still to come from the placeholder
    bucket (the default, and what the shipped configs hold): the synth names them in a warning,
    so an example config still synthesizes, and ``hpkv preflight`` refuses them. A YAML merge
    that gives a second endpoint the first one's keys can leave one there beside a real
    bucket."""
    return [
        (f"kvcache.endpoints.{i}.model.s3_bucket", e.name)
        for i, e in enumerate(app.kvcache.endpoints)
        if e.model.source == "s3" and e.model.s3_bucket == PLACEHOLDER_MODEL_BUCKET
    ]


def l2_pool_bytes(
    app: AppConfig,
    l2_backend: L2Backend,
    *,
    worker_gib: float | None = None,
    gpu_nodes: int | None = None,
) -> int:
    """What the shared store of ``l2_backend`` holds, in bytes: each GPU node's Curvine worker
    capacity times the GPU nodes (curvine), the file system's capacity (fsx_lustre); 0 for the
    backends without a shared store (tieredstorage's memory is per node, none has no L2).
    ``worker_gib`` and ``gpu_nodes`` stand in for the config's values (``hpkv size``'s what-ifs).
    """
    if l2_backend == "curvine":
        worker = app.kvcache.curvine.worker.capacity_gib if worker_gib is None else worker_gib
        nodes = app.hyperpod.gpu_group.instance_count if gpu_nodes is None else gpu_nodes
        return int(worker * nodes * GIB)
    if l2_backend == "fsx_lustre":
        return app.kvcache.fsx.storage_capacity_gib * GIB
    return 0


def curvine_writable_bytes(app: AppConfig) -> int:
    """What writes can fill of the Curvine pool, in bytes: each worker's capacity less its
    ``dir_reserved``, times the GPU nodes. Curvine v0.4.1 counts a data directory's free space
    as capacity - used - reserved (``crates/adapters/curvine-storage-local/src/vfs_dir.rs``
    ``VfsDir::available``), so a write fails once a worker holds capacity - reserved, while its
    statfs still reports the whole capacity as the size (``curvine-fuse/src/fs/
    curvine_file_system.rs`` ``stat_fs``: blocks from the master's summed worker capacity).
    The evictor's water marks are shares of this, not of the capacity."""
    w = app.kvcache.curvine.worker
    return (w.capacity_gib - w.reserved_gib) * app.hyperpod.gpu_group.instance_count * GIB


def l1_in_container_gib(app: AppConfig, e: EndpointConfig) -> float:
    """The CPU cache (L1) LMCache of ``e`` really gets, in GiB: the size it asks for
    (``l1_cache_gib``) where ``LMCACHE_MAX_LOCAL_CPU_SIZE`` reaches the container (the L2 policy
    writes it on curvine and fsx_lustre endpoints; an operator that keeps the endpoint's
    LMCACHE_* variables passes it on), else LMCache's default; 0 with L1 off."""
    if not e.enable_l1_cache:
        return 0.0
    written = e.l2_backend in MOUNTED_L2_BACKENDS
    if written or app.addons.inference_operator.operator.keeps_lmcache_env:
        return float(e.l1_cache_gib)
    return LMCACHE_DEFAULT_L1_GIB
