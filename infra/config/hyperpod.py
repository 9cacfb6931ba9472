"""The HyperPod cluster: the one the app creates (instance groups, dependencies chart) or an
existing one it attaches to."""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, Literal, cast

from pydantic import Field, field_validator, model_validator

from infra.config.base import Section
from infra.config.errors import RuleViolation
from infra.config.fields import aws_id
from infra.facts.aws_models import BOTOCORE, cluster_instance_types
from infra.facts.instances import GPU_FAMILIES, GPU_INSTANCES

HYPERPOD_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
ARN = re.compile(r"^arn:aws[a-z-]*:")
EBS_MIN_GIB, EBS_MAX_GIB = 100, 16384


def cluster_instance_type(v: str) -> str:
    """A type of the SageMaker API's ClusterInstanceType enum: HyperPod refuses any other at
    CreateCluster, after the stacks before it are deployed."""
    known = cluster_instance_types()
    if v in known:
        return v
    if not v.startswith("ml."):
        raise RuleViolation(
            "a HyperPod instance type with the ml. prefix (ml.g6e.4xlarge)",
            f"write ml.{v}" if f"ml.{v}" in known else "check the spelling",
        )
    family = v.rsplit(".", 1)[0]
    same = [t for t in known if t.rsplit(".", 1)[0] == family]
    families = sorted({t.rsplit(".", 1)[0] for t in known})
    close = difflib.get_close_matches(v, same or known, n=1)
    raise RuleViolation(
        f"a HyperPod instance type (ClusterInstanceType of the SageMaker API in {BOTOCORE}): "
        + (
            ", ".join(same)
            if same
            else f"none of family {family}; the families: " + ", ".join(families)
        ),
        (f"did you mean {close[0]}? " if close else "")
        + "`hpkv preflight` then checks the type's quota in the account",
    )


def hyperpod_cluster_name(v: str, fix: str) -> str:
    # The pattern counts a run of hyphens with the character after it: the API's length limit
    # (63) is a rule of its own.
    if not HYPERPOD_NAME.match(v) or len(v) > 63:
        raise RuleViolation(
            "^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$: 1-63 letters, digits and hyphens, starting "
            "and ending with a letter or digit",
            f"{fix} (no underscores or dots)",
        )
    return v


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
        if not HYPERPOD_NAME.match(v) or len(v) > 63:
            raise RuleViolation(
                "1-63 letters, digits and hyphens, starting and ending with a letter or digit",
                "rename the instance group",
            )
        return v

    @field_validator("instance_type")
    @classmethod
    def _type(cls, v: str) -> str:
        return cluster_instance_type(v)

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
    if TYPE_CHECKING:  # what a loaded config holds: AppConfig names a null one
        cluster_name: str = cast(str, None)
    else:
        cluster_name: str | None = None
        """Name of the SageMaker HyperPod cluster (unique per account and Region). Null (the
        default): ``<project>-<environment>``, as ``eks.cluster_name``; a name another
        environment's config in the same folder uses is refused likewise."""
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
    def _name(cls, v: str | None) -> str | None:
        return None if v is None else hyperpod_cluster_name(v, "rename hyperpod.cluster_name")

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
    entry with AmazonEKSClusterAdminPolicy (``hpkv preflight`` checks it)."""
    oidc_provider_arn: str
    """IAM OIDC provider of the EKS cluster (the add-ons' IRSA roles trust it)."""
    vpc_id: str | None = None
    """VPC of the cluster; required with ``kubectl_subnet_ids`` (private endpoint) and when the
    inference add-on's AWS Load Balancer Controller role is created here
    (``addons.inference_operator`` mode create with ``alb_enabled``): that role may create and
    change security groups in this VPC only."""
    kubectl_subnet_ids: tuple[str, ...] = ()
    """Private subnets for the kubectl and owned-manifest handlers (and their Provider framework
    functions) when the cluster's API endpoint is private; they must reach the EKS, Lambda and S3
    APIs (a NAT gateway, or VPC endpoints) and, to install Kyverno, the internet
    (``hpkv preflight`` checks the routes). Empty: the endpoint must be public."""
    kubectl_security_group_id: str | None = None
    """Security group of the kubectl handler (with ``kubectl_subnet_ids``); the cluster security
    group must allow HTTPS from it."""

    @field_validator("hyperpod_cluster_name")
    @classmethod
    def _name(cls, v: str) -> str:
        return hyperpod_cluster_name(v, "rename existing_cluster.hyperpod_cluster_name")

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
        return None if v is None else aws_id(v, "vpc", "existing_cluster.vpc_id")

    @field_validator("kubectl_subnet_ids")
    @classmethod
    def _subnets(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for subnet in v:
            aws_id(subnet, "subnet", "existing_cluster.kubectl_subnet_ids")
        return v

    @field_validator("kubectl_security_group_id")
    @classmethod
    def _sg(cls, v: str | None) -> str | None:
        return None if v is None else aws_id(v, "sg", "existing_cluster.kubectl_security_group_id")

    @model_validator(mode="after")
    def _private_endpoint(self) -> ExistingClusterConfig:
        """A kubectl handler in the VPC needs the VPC and its own security group: an imported
        cluster has neither, and CDK would fail on the missing VPC."""
        if not self.kubectl_subnet_ids:
            if self.kubectl_security_group_id is not None:
                raise RuleViolation(
                    "null unless kubectl_subnet_ids is set (private endpoint)",
                    "list the kubectl handler's subnets in existing_cluster.kubectl_subnet_ids"
                    ", or remove existing_cluster.kubectl_security_group_id",
                    field="existing_cluster.kubectl_security_group_id",
                    value=self.kubectl_security_group_id,
                )
            return self
        for name, example in (
            ("vpc_id", "vpc-0abc1234def567890"),
            ("kubectl_security_group_id", "sg-0abc1234def567890"),
        ):
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
