"""The typed configuration of one environment (``config/<env>.yaml``).

Every field has a default and a docstring; units are in the names (``_gib``, ``_days``). Rules that
span fields live in ``AppConfig._cross_field_rules`` and name the field to change.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from infra.config.addons import AddonsConfig, check_addons
from infra.config.base import Section
from infra.config.errors import RuleViolation
from infra.config.kvcache import KvCacheConfig, check_kvcache
from infra.config.observability import ObservabilityConfig, check_observability
from infra.config.pipeline import PipelineConfig, check_pipeline
from infra.config.tiered_storage import TieredStorageConfig
from infra.instances import GPU_FAMILIES, GPU_INSTANCES
from infra.versions import (
    CORE_ADDON_VERSIONS,
    DEFAULT_KUBERNETES_VERSION,
    HYPERPOD_SUPPORTED_MINORS,
    SUPPORTED_KUBERNETES,
    addon_minor,
)

HYPERPOD_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
EKS_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$")
AZ_ID = re.compile(r"^([a-z]{2,4})([0-9])-az[0-9]+$")
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]$")
ACCOUNT = re.compile(r"^[0-9]{12}$")
INSTANCE_TYPE = re.compile(r"^ml\.[a-z][a-z0-9-]*\.[0-9]*x?large$")
ARN = re.compile(r"^arn:aws[a-z-]*:")
# Values CloudWatch Logs accepts for retention.
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827,
                      2192, 2557, 2922, 3288, 3653)  # fmt: skip
# The compass words of region names as they appear in AZ ids (us-west-2 -> usw2).
_COMPASS = {"north": "n", "south": "s", "east": "e", "west": "w", "central": "c",
            "northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw"}  # fmt: skip
EBS_MIN_GIB, EBS_MAX_GIB = 100, 16384


def az_id_prefix(region: str) -> str | None:
    """``us-west-2`` -> ``usw2``; None when the region uses a word this table does not know."""
    parts = region.split("-")
    if len(parts) != 3 or parts[1] not in _COMPASS:
        return None
    return f"{parts[0]}{_COMPASS[parts[1]]}{parts[2]}"


def _cidr(value: str, field: str, lo: int, hi: int) -> str:
    try:
        net = ipaddress.IPv4Network(value, strict=True)
    except ValueError:
        raise RuleViolation(
            f"an IPv4 network in CIDR form, /{lo} to /{hi}", f"set {field} to e.g. 10.0.0.0/16"
        ) from None
    if not lo <= net.prefixlen <= hi:
        raise RuleViolation(f"a prefix length from /{lo} to /{hi}", f"resize {field}")
    return value


class HyperPodSubnetConfig(Section):
    az_id: str = "usw2-az2"
    """AZ *id* (``usw2-az2`` form, the same physical zone in every account) of the HyperPod subnet.
    Pick one where your G6e capacity is (``python -m scripts preflight`` checks the offering)."""
    cidr: str = "10.1.0.0/16"
    """Secondary VPC CIDR block that becomes the HyperPod subnet (HyperPod uses one IP per Pod)."""

    @field_validator("az_id")
    @classmethod
    def _az_id(cls, v: str) -> str:
        if not AZ_ID.match(v):
            raise RuleViolation(
                "an AZ id like usw2-az2 (not an AZ name like us-west-2b)",
                "run `aws ec2 describe-availability-zones --query "
                "'AvailabilityZones[].[ZoneName,ZoneId]'` and use the ZoneId",
            )
        return v

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, v: str) -> str:
        return _cidr(v, "network.hyperpod_subnet.cidr", 16, 24)


class ExistingVpcConfig(Section):
    """A VPC the app does not own. The app adds the HyperPod subnet (with an S3 gateway endpoint
    on its route table), flow logs and the cluster security group to it."""

    vpc_id: str
    """Id of the VPC (vpc-...)."""
    vpc_cidr: str
    """Its primary CIDR (the security group allows HTTPS from it)."""
    private_subnet_ids: tuple[str, str]
    """Two private subnets in different AZs (listed in network.availability_zones, same order)
    with a NAT route: the EKS control-plane subnets."""
    nat_gateway_id: str
    """NAT gateway the HyperPod subnet routes its internet egress through."""

    @field_validator("vpc_id")
    @classmethod
    def _vpc_id(cls, v: str) -> str:
        return _aws_id(v, "vpc", "network.existing_vpc.vpc_id")

    @field_validator("private_subnet_ids")
    @classmethod
    def _subnets(cls, v: tuple[str, str]) -> tuple[str, str]:
        for subnet in v:
            _aws_id(subnet, "subnet", "network.existing_vpc.private_subnet_ids")
        return v

    @field_validator("nat_gateway_id")
    @classmethod
    def _nat(cls, v: str) -> str:
        return _aws_id(v, "nat", "network.existing_vpc.nat_gateway_id")

    @field_validator("vpc_cidr")
    @classmethod
    def _cidr(cls, v: str) -> str:
        return _cidr(v, "network.existing_vpc.vpc_cidr", 16, 28)


def _aws_id(value: str, kind: str, field: str) -> str:
    if not re.match(rf"^{kind}-[0-9a-f]{{8,17}}$", value):
        raise RuleViolation(f"an id like {kind}-0abc1234def567890", f"copy the id into {field}")
    return value


class NetworkConfig(Section):
    existing_vpc: ExistingVpcConfig | None = None
    """Use this VPC instead of creating one (null: the app creates a VPC)."""
    vpc_cidr: str = "10.192.0.0/16"
    """Primary CIDR of the VPC the app creates (public and EKS control-plane subnets)."""
    availability_zones: tuple[str, str] = ("us-west-2a", "us-west-2b")
    """Two AZ names for the public and EKS control-plane subnets (EKS needs two AZs)."""
    nat_gateways: int = Field(default=1, ge=1, le=2)
    """NAT gateways: 1 is cheaper, 2 survives the loss of one AZ."""
    hyperpod_subnet: HyperPodSubnetConfig = HyperPodSubnetConfig()
    flow_logs_retention_days: int = 30
    """Retention of the VPC flow log group, in days."""

    @field_validator("vpc_cidr")
    @classmethod
    def _vpc_cidr(cls, v: str) -> str:
        return _cidr(v, "network.vpc_cidr", 16, 24)

    @field_validator("flow_logs_retention_days")
    @classmethod
    def _retention(cls, v: int) -> int:
        return _retention_days(v, "network.flow_logs_retention_days")

    @property
    def primary_cidr(self) -> str:
        return self.existing_vpc.vpc_cidr if self.existing_vpc else self.vpc_cidr


def _retention_days(v: int, field: str) -> int:
    if v not in LOG_RETENTION_DAYS:
        raise RuleViolation(
            f"one of CloudWatch's retention values {', '.join(map(str, LOG_RETENTION_DAYS))}",
            f"set {field} to the nearest of them",
        )
    return v


class EksAddonVersions(Section):
    vpc_cni: str = "v1.20.4-eksbuild.2"
    """``vpc-cni`` add-on version; HyperPod requires 1.18.3 or later."""
    kube_proxy: str = "v1.34.1-eksbuild.2"
    """``kube-proxy`` add-on version; must match the cluster's minor."""
    coredns: str = "v1.12.4-eksbuild.1"
    """``coredns`` add-on version (degraded until nodes join; the deploy does not wait on it)."""
    pod_identity_agent: str = "v1.3.9-eksbuild.3"
    """``eks-pod-identity-agent`` add-on version."""

    @field_validator("vpc_cni")
    @classmethod
    def _cni(cls, v: str) -> str:
        m = re.match(r"^v(\d+)\.(\d+)\.(\d+)-eksbuild\.\d+$", v)
        if not m:
            raise RuleViolation("an EKS add-on version like v1.20.4-eksbuild.2", "run `aws eks "
                                "describe-addon-versions --addon-name vpc-cni`")  # fmt: skip
        if tuple(map(int, m.groups())) < (1, 18, 3):
            raise RuleViolation("v1.18.3 or later (HyperPod requirement)", "raise the version")
        return v

    @field_validator("kube_proxy", "coredns", "pod_identity_agent")
    @classmethod
    def _pinned(cls, v: str) -> str:
        if not re.match(r"^v\d+\.\d+\.\d+-eksbuild\.\d+$", v):
            raise RuleViolation(
                "a pinned EKS add-on version like v1.12.4-eksbuild.1",
                "run `aws eks describe-addon-versions --addon-name <name>` and pin one",
            )
        return v


class EksConfig(Section):
    cluster_name: str = "hyperpod-kvcache"
    """Name of the EKS cluster."""
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    """Kubernetes minor; selects the kubectl layer and cdk8s-plus package (infra/versions.py)."""
    endpoint_access: Literal["public_and_private", "private"] = "public_and_private"
    """API endpoint access. ``private`` needs a deploy host inside the VPC (or VPN)."""
    public_access_cidrs: tuple[str, ...] = ("0.0.0.0/0",)
    """CIDRs allowed to reach the public endpoint (ignored when private)."""
    admin_principal_arns: tuple[str, ...] = ()
    """IAM role/user ARNs (humans and the CI role) given cluster-admin through access entries."""
    log_retention_days: int = 30
    """Retention of the control-plane log group, in days."""
    addons: EksAddonVersions = EksAddonVersions()

    @field_validator("cluster_name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not EKS_NAME.match(v):
            raise RuleViolation(
                "1-100 characters: letters, digits, '-' and '_', starting with a letter or digit",
                "rename eks.cluster_name",
            )
        return v

    @field_validator("kubernetes_version")
    @classmethod
    def _version(cls, v: str) -> str:
        if v in SUPPORTED_KUBERNETES:
            return v
        supported = ", ".join(SUPPORTED_KUBERNETES)
        if v in HYPERPOD_SUPPORTED_MINORS:
            raise RuleViolation(
                f"{supported} (HyperPod accepts {v}, but this toolkit pins kubectl layers and "
                "cdk8s-plus only for the minors listed)",
                f"set eks.kubernetes_version to {DEFAULT_KUBERNETES_VERSION}",
            )
        raise RuleViolation(
            f"{supported} (HyperPod supports {', '.join(HYPERPOD_SUPPORTED_MINORS)})",
            f'set eks.kubernetes_version to "{DEFAULT_KUBERNETES_VERSION}" (quoted)',
        )

    @model_validator(mode="after")
    def _addon_versions_follow_the_minor(self) -> EksConfig:
        """Keys left out of ``eks.addons`` come from the minor's table (infra/versions.py)."""
        minor = self.kubernetes_version
        table = CORE_ADDON_VERSIONS.get(minor)
        if table is None:
            raise RuleViolation(
                f"a minor with an add-on version table in infra/versions.py "
                f"({', '.join(CORE_ADDON_VERSIONS)})",
                "add the minor to CORE_ADDON_VERSIONS or pick one listed",
                field="eks.kubernetes_version",
                value=minor,
            )
        chosen = self.addons.model_fields_set
        defaults = {k: getattr(table, k) for k in EksAddonVersions.model_fields if k not in chosen}
        addons = self.addons.model_copy(update=defaults)
        proxy_minor = addon_minor(addons.kube_proxy)
        if proxy_minor != minor:
            raise RuleViolation(
                f"a kube-proxy version of the cluster's minor {minor} (e.g. {table.kube_proxy})",
                f"set eks.addons.kube_proxy to {table.kube_proxy}, or remove the key to use it",
                field="eks.addons.kube_proxy",
                value=addons.kube_proxy,
            )
        object.__setattr__(self, "addons", addons)  # frozen model: set once, while validating
        return self

    @field_validator("admin_principal_arns")
    @classmethod
    def _arns(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for arn in v:
            if not re.match(r"^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/.+$", arn):
                raise RuleViolation(
                    "IAM role or user ARNs (arn:aws:iam::123456789012:role/Name)",
                    f"replace {arn!r}; for an SSO session use its role ARN, not the sts "
                    "assumed-role ARN",
                )
        return v

    @field_validator("public_access_cidrs")
    @classmethod
    def _public_cidrs(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for cidr in v:
            _cidr(cidr, "eks.public_access_cidrs", 0, 32)
        return v

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, v: int) -> int:
        return _retention_days(v, "eks.log_retention_days")


class InstanceGroupConfig(Section):
    name: str
    """Instance group name (HyperPod naming rules)."""
    instance_type: str
    """HyperPod instance type, ``ml.`` prefix."""
    instance_count: int = Field(ge=1, le=256)
    """Number of instances."""
    ebs_volume_size_gib: int = 500
    """EBS volume per instance, mounted at /opt/sagemaker (containerd and kubelet live there)."""
    threads_per_core: Literal[1, 2] = 1
    """1 disables hyper-threading (HyperPod's recommendation for GPU work)."""
    on_start_deep_health_checks: tuple[Literal["InstanceStress", "InstanceConnectivity"], ...] = ()
    """Deep health checks run when instances start (adds time to node creation)."""
    labels: dict[str, str] = {}
    """Kubernetes labels HyperPod puts on the group's nodes; later layers select on them."""

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not HYPERPOD_NAME.match(v):
            raise RuleViolation(
                "1-63 letters, digits and hyphens, starting and ending with a letter or digit",
                "rename the instance group",
            )
        return v

    @field_validator("instance_type")
    @classmethod
    def _type(cls, v: str) -> str:
        if not INSTANCE_TYPE.match(v):
            raise RuleViolation(
                "a HyperPod instance type with the ml. prefix (ml.g6e.4xlarge)",
                f"write ml.{v}" if not v.startswith("ml.") else "check the spelling",
            )
        return v

    @field_validator("ebs_volume_size_gib")
    @classmethod
    def _ebs(cls, v: int) -> int:
        if not EBS_MIN_GIB <= v <= EBS_MAX_GIB:
            raise RuleViolation(
                f"{EBS_MIN_GIB} to {EBS_MAX_GIB} GiB (container images and model weights live "
                "on this volume)",
                f"set ebs_volume_size_gib between {EBS_MIN_GIB} and {EBS_MAX_GIB}",
            )
        return v


class DependenciesChartConfig(Section):
    repository: str = "https://github.com/aws/sagemaker-hyperpod-cli.git"
    """Git repository of the HyperPod dependencies Helm chart."""
    commit: str = "011ca927123e02b35a399935bbb3ab1905fe33c7"
    """Pinned commit (40 hex digits); `make chart` checks it out into .charts/."""
    path: str = "helm_chart/HyperPodHelmChart"
    """Chart directory inside the repository."""
    release: str = "hyperpod-dependencies"
    """Helm release name."""
    namespace: str = "kube-system"
    """Namespace of the release."""

    @field_validator("commit")
    @classmethod
    def _commit(cls, v: str) -> str:
        if not re.match(r"^[0-9a-f]{40}$", v):
            raise RuleViolation("a full 40-hex-digit commit id", "pin a commit, not a branch")
        return v


class HyperPodConfig(Section):
    cluster_name: str = "hyperpod-kvcache"
    """Name of the SageMaker HyperPod cluster."""
    node_recovery: Literal["Automatic", "None"] = "Automatic"
    """What HyperPod does with a faulty node (replace/reboot, or only label it)."""
    gpu_group: InstanceGroupConfig = InstanceGroupConfig(
        name="gpu",
        instance_type="ml.g6e.4xlarge",
        instance_count=2,
        labels={"hyperpod-kvcache/node-role": "gpu-inference"},
    )
    """The G6e (or P5) group that runs vLLM and the Curvine workers."""
    system_group: InstanceGroupConfig = InstanceGroupConfig(
        name="system",
        instance_type="ml.c5.4xlarge",
        instance_count=1,
        ebs_volume_size_gib=200,
        labels={"hyperpod-kvcache/node-role": "system"},
    )
    """CPU group for add-ons (the inference operator alone runs 13+ Pods)."""
    dependencies_chart: DependenciesChartConfig = DependenciesChartConfig()

    @field_validator("cluster_name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not HYPERPOD_NAME.match(v):
            raise RuleViolation(
                "^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$: 1-63 letters, digits and hyphens, starting "
                "and ending with a letter or digit",
                "rename hyperpod.cluster_name (no underscores or dots)",
            )
        return v

    @field_validator("gpu_group")
    @classmethod
    def _gpu_family(cls, v: InstanceGroupConfig) -> InstanceGroupConfig:
        if v.instance_type not in GPU_INSTANCES:
            raise RuleViolation(
                f"{GPU_FAMILIES}: types with local NVMe for the L2 pool",
                "set hyperpod.gpu_group.instance_type to e.g. ml.g6e.4xlarge",
                field="hyperpod.gpu_group.instance_type",
                value=v.instance_type,
            )
        return v


class ExistingClusterConfig(Section):
    """Attach to clusters the app does not own: no network, EKS or HyperPod stack is created."""

    eks_cluster_name: str
    """Name of the existing EKS cluster."""
    hyperpod_cluster_name: str
    """Name of the existing HyperPod cluster orchestrated by that EKS cluster."""
    hyperpod_cluster_arn: str
    """ARN of that HyperPod cluster (its id is not its name; IAM policies are scoped to it)."""
    kubectl_role_arn: str | None = None
    """Bring your own execution role for the kubectl handler (a Lambda function). Null (the
    default): the stack creates that role and a cluster-admin access entry for it, and removes
    both on destroy. When set, the role is used as it is: it must trust lambda.amazonaws.com,
    allow eks:DescribeCluster on the cluster and CloudWatch Logs writes (plus
    AWSLambdaVPCAccessExecutionRole with ``kubectl_subnet_ids``), and already hold an access
    entry with AmazonEKSClusterAdminPolicy (``python -m scripts preflight`` checks it)."""
    oidc_provider_arn: str
    """IAM OIDC provider of the EKS cluster (the add-ons' IRSA roles trust it)."""
    vpc_id: str | None = None
    """VPC of the cluster; required with ``kubectl_subnet_ids`` (private endpoint)."""
    kubectl_subnet_ids: tuple[str, ...] = ()
    """Private subnets for the kubectl and owned-manifest handlers (and their Provider framework
    functions) when the cluster's API endpoint is private; they must reach the EKS, Lambda and S3
    APIs (a NAT gateway, or VPC endpoints) and, to install Kyverno, the internet
    (``python -m scripts preflight`` checks the routes). Empty: the endpoint must be public."""
    kubectl_security_group_id: str | None = None
    """Security group of the kubectl handler (with ``kubectl_subnet_ids``); the cluster security
    group must allow HTTPS from it."""

    @field_validator("hyperpod_cluster_name")
    @classmethod
    def _name(cls, v: str) -> str:
        return HyperPodConfig._name(v)

    @field_validator("hyperpod_cluster_arn")
    @classmethod
    def _hp_arn(cls, v: str) -> str:
        if not re.match(r"^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:[0-9]{12}:cluster/[a-z0-9]{12}$", v):
            raise RuleViolation(
                "arn:aws:sagemaker:<region>:<account>:cluster/<12-char id>",
                "run `aws sagemaker describe-cluster --cluster-name <name> --query ClusterArn`",
            )
        return v

    @field_validator("kubectl_role_arn", "oidc_provider_arn")
    @classmethod
    def _arn(cls, v: str | None) -> str | None:
        if v is not None and not ARN.match(v):
            raise RuleViolation("an IAM ARN starting with arn:aws", "copy the full ARN")
        return v

    @field_validator("vpc_id")
    @classmethod
    def _vpc(cls, v: str | None) -> str | None:
        return None if v is None else _aws_id(v, "vpc", "existing_cluster.vpc_id")

    @field_validator("kubectl_subnet_ids")
    @classmethod
    def _subnets(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for subnet in v:
            _aws_id(subnet, "subnet", "existing_cluster.kubectl_subnet_ids")
        return v

    @field_validator("kubectl_security_group_id")
    @classmethod
    def _sg(cls, v: str | None) -> str | None:
        return None if v is None else _aws_id(v, "sg", "existing_cluster.kubectl_security_group_id")

    @model_validator(mode="after")
    def _private_endpoint(self) -> ExistingClusterConfig:
        """A kubectl handler in the VPC needs the VPC and its own security group: an imported
        cluster has neither, and CDK would fail on the missing VPC."""
        if not self.kubectl_subnet_ids:
            for name in ("vpc_id", "kubectl_security_group_id"):
                if getattr(self, name) is not None:
                    raise RuleViolation(
                        "null unless kubectl_subnet_ids is set (private endpoint)",
                        "list the kubectl handler's subnets in existing_cluster.kubectl_subnet_ids"
                        f", or remove existing_cluster.{name}",
                        field=f"existing_cluster.{name}",
                        value=getattr(self, name),
                    )
            return self
        for name, example in (("vpc_id", "vpc-0abc1234def567890"),
                              ("kubectl_security_group_id", "sg-0abc1234def567890")):  # fmt: skip
            if getattr(self, name) is None:
                raise RuleViolation(
                    f"set when kubectl_subnet_ids is (e.g. {example}): the kubectl handler runs "
                    "in those subnets",
                    f"run `aws eks describe-cluster --name {self.eks_cluster_name} --query "
                    "cluster.resourcesVpcConfig` and copy the "
                    + (
                        "vpcId"
                        if name == "vpc_id"
                        else "id of a security group the cluster security group allows on 443"
                    ),
                    field=f"existing_cluster.{name}",
                    value=None,
                )
        return self


class AppConfig(Section):
    project: str = "hyperpod-kvcache"
    """Project name: prefix of stack names and value of the ``project`` tag."""
    environment: str
    """Environment name; must equal the config file's name (dev for config/dev.yaml)."""
    account: str
    """AWS account id the environment deploys to (12 digits)."""
    region: str = "us-west-2"
    """AWS region."""
    tags: dict[str, str] = {}
    """Extra tags on every resource (``project`` and ``environment`` are always added)."""
    retain_stateful_resources: bool = False
    """Keep buckets, keys and log groups on destroy (prod). When false they are deleted and
    buckets are emptied first."""
    termination_protection: bool = False
    """CloudFormation termination protection on every stack."""
    network: NetworkConfig = NetworkConfig()
    eks: EksConfig = EksConfig()
    hyperpod: HyperPodConfig = HyperPodConfig()
    existing_cluster: ExistingClusterConfig | None = None
    """Set to attach to an existing HyperPod EKS cluster instead of creating one."""
    tiered_storage: TieredStorageConfig = TieredStorageConfig()
    addons: AddonsConfig = AddonsConfig()
    kvcache: KvCacheConfig = KvCacheConfig()
    pipeline: PipelineConfig = PipelineConfig()
    observability: ObservabilityConfig = ObservabilityConfig()

    @field_validator("project")
    @classmethod
    def _project(cls, v: str) -> str:
        if not re.match(r"^[a-z][a-z0-9-]{1,30}[a-z0-9]$", v):
            raise RuleViolation("3-32 lower-case letters, digits and hyphens", "rename project")
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
        if not REGION.match(v):
            raise RuleViolation("a region code like us-west-2", "fix region")
        return v

    @property
    def existing(self) -> bool:
        return self.existing_cluster is not None

    @property
    def stack_prefix(self) -> str:
        return f"{self.project}-{self.environment}"

    @model_validator(mode="after")
    def _cross_field_rules(self) -> AppConfig:
        prefix = az_id_prefix(self.region)
        az_id = self.network.hyperpod_subnet.az_id
        if prefix is not None and not az_id.startswith(prefix + "-"):
            raise RuleViolation(
                f"an AZ id of region {self.region} ({prefix}-az1, {prefix}-az2, ...)",
                "pick an AZ id in the configured region",
                field="network.hyperpod_subnet.az_id",
                value=az_id,
            )
        for az in self.network.availability_zones:
            if not az.startswith(self.region):
                raise RuleViolation(
                    f"AZ names in {self.region} (e.g. {self.region}a)",
                    "list two AZ names of the configured region",
                    field="network.availability_zones",
                    value=list(self.network.availability_zones),
                )
        if self.network.availability_zones[0] == self.network.availability_zones[1]:
            raise RuleViolation(
                "two different AZ names (EKS needs subnets in two AZs)",
                "list two different AZs",
                field="network.availability_zones",
                value=list(self.network.availability_zones),
            )
        hp = ipaddress.IPv4Network(self.network.hyperpod_subnet.cidr)
        if hp.overlaps(ipaddress.IPv4Network(self.network.primary_cidr)):
            raise RuleViolation(
                "a CIDR that does not overlap the VPC's primary CIDR "
                f"({self.network.primary_cidr})",
                "use a separate range, e.g. 10.1.0.0/16",
                field="network.hyperpod_subnet.cidr",
                value=self.network.hyperpod_subnet.cidr,
            )
        gpu = self.hyperpod.gpu_group
        if self.kvcache.curvine.enabled and gpu.instance_count < 2:
            raise RuleViolation(
                "at least 2 when the shared L2 cache (kvcache.curvine.enabled) is on: one node "
                "cannot show cross-node reuse",
                "set hyperpod.gpu_group.instance_count to 2 or more, or kvcache.curvine.enabled "
                "to false",
                field="hyperpod.gpu_group.instance_count",
                value=gpu.instance_count,
            )
        if self.hyperpod.gpu_group.name == self.hyperpod.system_group.name:
            raise RuleViolation(
                "different names for the GPU and system instance groups",
                "rename one of them",
                field="hyperpod.system_group.name",
                value=self.hyperpod.system_group.name,
            )
        if self.existing_cluster is not None:
            _describe_existing_groups(self.hyperpod, self.existing_cluster)
        check_addons(self)
        check_kvcache(self)
        check_pipeline(self)
        check_observability(self)
        return self


def _describe_existing_groups(hyperpod: HyperPodConfig, existing: ExistingClusterConfig) -> None:
    """On a cluster the app does not create, the defaults of ``hyperpod.gpu_group`` and
    ``system_group`` describe nothing: the GPU group's name selects the L2 nodes (HyperPod labels
    every node with its instance group's name), its type sizes the endpoint and its count the L2
    pool, and a wrong default would select no node while CloudFormation still succeeds. So both
    groups must be written out (a group given needs name, instance_type and instance_count);
    ``python -m scripts preflight`` compares them with DescribeCluster."""
    for group in ("gpu_group", "system_group"):
        if group in hyperpod.model_fields_set:
            continue
        kind = "GPU" if group == "gpu_group" else "CPU (system)"
        raise RuleViolation(
            f"set with existing_cluster: name, instance_type and instance_count of the existing "
            f"cluster's {kind} instance group (the defaults describe a cluster this app creates)",
            f"run `aws sagemaker describe-cluster --cluster-name "
            f"{existing.hyperpod_cluster_name} --query 'InstanceGroups[].[InstanceGroupName,"
            f"InstanceType,CurrentCount]'` (or `python -m scripts preflight`) and write "
            f"hyperpod.{group}",
            field=f"hyperpod.{group}.name",
            value=None,
        )
