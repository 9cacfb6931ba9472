"""The SageMaker HyperPod cluster (EKS orchestrator) and what it needs before it is created."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import yaml
from aws_cdk import Annotations, CfnElement, RemovalPolicy, Stack, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_s3_deployment as s3_deployment
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from infra.cdk.cluster_types import AnyCluster, as_icluster
from infra.cdk.nag import acknowledge, finding_name, ref
from infra.config.hyperpod import DependenciesChartConfig, HyperPodConfig, InstanceGroupConfig
from infra.constructs.buckets import SecureBucket

LIFECYCLE_DIR = Path(__file__).resolve().parents[2] / "assets" / "lifecycle"
LIFECYCLE_PREFIX = "lifecycle/"
ON_CREATE = "on_create.sh"
INSTANCE_ROLE_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"
# Components of the dependencies chart that the add-ons stack installs as EKS add-ons instead;
# pinned off here (they default to off) so two owners never fight over the same objects.
CHART_VALUES: dict[str, Any] = {
    "cert-manager": {"enabled": False},
    "inferenceOperators": {"enabled": False},
    "storage": {"enabled": False},
}


def chart_values(region: str, chart_dir: Path) -> dict[str, Any]:
    """The values the dependencies chart is installed with.

    The chart guesses what it is not told: the health-monitoring agent takes its Region from a
    Node's labels and falls back to us-east-1 when there is none. The chart goes in before any
    node exists, so its image would come from another Region's registry, which the node role
    cannot pull from. AWS's Terraform module (``helm_release``) sets
    ``health-monitoring-agent.region`` to the Region and passes the chart's
    ``regional-values/values-<region>.yaml`` when it has one; so does this. ``region`` may be a
    token: CloudFormation resolves it inside the values string.
    """
    values: dict[str, Any] = {}
    regional = chart_dir / "regional-values" / f"values-{region}.yaml"
    if not Token.is_unresolved(region) and regional.is_file():
        values = yaml.safe_load(regional.read_text()) or {}
    values.update(copy.deepcopy(CHART_VALUES))
    values["health-monitoring-agent"] = {
        **values.get("health-monitoring-agent", {}),
        "region": region,
    }
    return values


def instance_groups_hash(config: HyperPodConfig) -> str:
    """Fingerprint of the instance groups: changes whenever CloudFormation updates them."""
    groups = [config.gpu_group.model_dump(mode="json"), config.system_group.model_dump(mode="json")]
    return hashlib.sha256(json.dumps(groups, sort_keys=True).encode()).hexdigest()[:16]


class LifecycleScripts(Construct):
    """The project's own lifecycle scripts (assets/lifecycle), uploaded at deploy time."""

    def __init__(self, scope: Construct, id: str, *, retain: bool) -> None:
        super().__init__(scope, id)
        self.storage = SecureBucket(self, "Storage", retain=retain)
        self.bucket = self.storage.bucket
        self.deployment = s3_deployment.BucketDeployment(
            self,
            "Upload",
            sources=[s3_deployment.Source.asset(str(LIFECYCLE_DIR))],
            destination_bucket=self.bucket,
            destination_key_prefix=LIFECYCLE_PREFIX,
            retain_on_delete=False,
            # Unnamed and deleted with the stack: CDK's default log group has a fixed name
            # and is retained, which would collide when the environment is recreated.
            log_group=logs.LogGroup(
                self,
                "UploadLogs",
                retention=logs.RetentionDays.ONE_MONTH,
                removal_policy=RemovalPolicy.DESTROY,
            ),
        )
        self.s3_uri = f"s3://{self.bucket.bucket_name}/{LIFECYCLE_PREFIX}"


class HyperPodExecutionRole(Construct):
    """Instance role of the HyperPod nodes: the managed instance policy plus scoped rights."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        lifecycle_bucket: s3.IBucket,
        subnet: ec2.ISubnet,
        security_group: ec2.ISecurityGroup,
    ) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description="HyperPod instance role (EKS orchestrator)",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(INSTANCE_ROLE_POLICY)],
        )
        arn = stack.format_arn
        eni_arn = arn(service="ec2", resource="network-interface", resource_name="*")
        # HyperPod's instances live in an account SageMaker owns, not this one (the VPC CNI
        # sees their subnets cross-account: aws/amazon-vpc-cni-k8s ad95439d): an instance ARN
        # of this account would refuse every attach. Any account, this Region; the ENI side
        # (ManageEnisInHyperPodSubnet) keeps attaches to interfaces of the HyperPod subnet.
        instance_arn = arn(service="ec2", resource="instance", resource_name="*", account="*")
        # Every registry the nodes pull from is regional: the HyperPod chart's images come from
        # a per-Region AWS account (regional-values/values-<region>.yaml), the EKS add-ons from
        # the per-Region EKS registry, vLLM/DLC and the inference operator from per-Region
        # accounts, the user's own images from their account. Those accounts differ per Region
        # and per component version, so they are not enumerated: pulls are scoped to this Region.
        ecr_repos_arn = arn(service="ecr", resource="repository", resource_name="*", account="*")
        subnet_arn = arn(service="ec2", resource="subnet", resource_name=subnet.subnet_id)
        sg_arn = arn(
            service="ec2", resource="security-group", resource_name=security_group.security_group_id
        )
        # ENI changes only in the HyperPod subnet: HyperPod attaches the nodes' interfaces there
        # and the VPC CNI adds Pod interfaces beside them (no custom networking), so no other
        # interface of the account may be modified, detached or deleted with this role.
        in_subnet = {"ArnEquals": {"ec2:Subnet": subnet_arn}}
        statements = [
            # The VPC CNI on the nodes attaches ENIs in the HyperPod subnet with the cluster SG.
            iam.PolicyStatement(
                sid="CreateEnisInHyperPodSubnet",
                actions=["ec2:CreateNetworkInterface"],
                resources=[eni_arn, subnet_arn, sg_arn],
            ),
            # Attach/Detach authorize on the instance as well as on the ENI (AWS's reference
            # HyperPod EKS role grants instance/* too); the ENI side is the subnet-scoped one below,
            # so no interface outside the HyperPod subnet is attached anywhere.
            iam.PolicyStatement(
                sid="AttachEnisToNodes",
                actions=["ec2:AttachNetworkInterface", "ec2:DetachNetworkInterface"],
                resources=[instance_arn],
            ),
            iam.PolicyStatement(
                sid="ManageEnisInHyperPodSubnet",
                actions=[
                    "ec2:AttachNetworkInterface",
                    "ec2:DetachNetworkInterface",
                    "ec2:AssignPrivateIpAddresses",
                    "ec2:UnassignPrivateIpAddresses",
                    "ec2:DeleteNetworkInterface",
                    "ec2:ModifyNetworkInterfaceAttribute",
                    "ec2:CreateNetworkInterfacePermission",
                    "ec2:DeleteNetworkInterfacePermission",
                ],
                resources=[eni_arn],
                conditions=in_subnet,
            ),
            # The VPC CNI tags the ENIs it creates, and the node's primary ENI it did not create:
            # on creation, or an existing ENI of the HyperPod subnet.
            iam.PolicyStatement(
                sid="TagNewEnis",
                actions=["ec2:CreateTags"],
                resources=[eni_arn],
                conditions={"StringEquals": {"ec2:CreateAction": "CreateNetworkInterface"}},
            ),
            iam.PolicyStatement(
                sid="TagEnisInHyperPodSubnet",
                actions=["ec2:CreateTags"],
                resources=[eni_arn],
                conditions=in_subnet,
            ),
            # Describe calls cannot be scoped to resources (IAM does not support it).
            iam.PolicyStatement(
                sid="DescribeNetwork",
                actions=[
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeInstances",
                    "ec2:DescribeSubnets",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeVpcs",
                    "ec2:DescribeDhcpOptions",
                    "ec2:DescribeTags",
                    # The VPC CNI looks up ENI/IP limits of instance types it has no table for.
                    "ec2:DescribeInstanceTypes",
                ],
                resources=["*"],
            ),
            # GetAuthorizationToken has no resource type: it is the only ECR action on "*".
            iam.PolicyStatement(
                sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]
            ),
            iam.PolicyStatement(
                sid="PullImages",
                actions=[
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:GetDownloadUrlForLayer",
                ],
                resources=[ecr_repos_arn],
            ),
            iam.PolicyStatement(
                sid="PodIdentity", actions=["eks-auth:AssumeRoleForPodIdentity"], resources=["*"]
            ),
            iam.PolicyStatement(
                sid="ReadLifecycleScripts",
                actions=["s3:GetObject", "s3:ListBucket"],
                resources=[lifecycle_bucket.bucket_arn, f"{lifecycle_bucket.bucket_arn}/*"],
            ),
        ]
        policy = iam.Policy(self, "Inline", statements=statements)
        bucket_resource = lifecycle_bucket.node.default_child
        assert isinstance(bucket_resource, CfnElement)
        lifecycle_bucket_ref = ref(bucket_resource, "Arn")
        policy.attach_to_role(self.role)
        acknowledge(
            self.role,
            "AwsSolutions-IAM4",
            "HyperPod requires AmazonSageMakerClusterInstanceRolePolicy on the instance role.",
            f"Policy::arn:<AWS::Partition>:iam::aws:policy/{INSTANCE_ROLE_POLICY}",
        )
        for finding, why in (
            ("Resource::*", "ec2 Describe*, ecr:GetAuthorizationToken and eks-auth: no resources."),
            (
                f"Resource::{finding_name(self, eni_arn)}",
                "ENI ids are created at run time by HyperPod and the VPC CNI; changes are "
                "limited to the HyperPod subnet by condition.",
            ),
            (
                f"Resource::{finding_name(self, instance_arn)}",
                "HyperPod instance ids are assigned at run time (CNI attaches ENIs to them).",
            ),
            (
                f"Resource::{finding_name(self, ecr_repos_arn)}",
                "Image pulls: the registries (per-Region AWS accounts of HyperPod, EKS, DLC and "
                "the user's) cannot be enumerated; scoped to this Region.",
            ),
            (f"Resource::{lifecycle_bucket_ref}/*", "Lifecycle scripts are read by key."),
        ):
            acknowledge(policy, "AwsSolutions-IAM5", why, finding)


class HyperPodDependencies(Construct):
    """The HyperPod dependencies Helm chart (aws/sagemaker-hyperpod-cli), pinned to a commit.

    The chart is not published to a Helm repository, so ``make chart`` checks the pinned commit
    out into ``.charts/`` and CDK ships it as an asset. Without it synth still works (offline
    tests) but warns, and nothing is installed: ``make deploy`` always fetches it first.

    Installed without waiting for Pods: it goes in before the HyperPod cluster, when no node
    exists, and its values enable Deployments by default (training operator, MPI operator) that
    cannot schedule until nodes join. AWS's own installers run it without waiting too (Terraform
    ``helm_release`` ``wait = false``; the CloudFormation injector's plain ``helm install``).
    Whatever needs its Pods running depends on the node readiness gate instead.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: AnyCluster,
        config: DependenciesChartConfig,
        chart_dir: Path,
    ) -> None:
        super().__init__(scope, id)
        self.chart: eks.HelmChart | None = None
        if not (chart_dir / "Chart.yaml").is_file():
            Annotations.of(self).add_warning_v2(
                "hyperpod-kvcache:chart-missing",
                f"HyperPod dependencies chart not found at {_relative(chart_dir)}; it is not part "
                "of this synth. Run `make chart` before deploying a new cluster.",
            )
            return
        asset = s3_assets.Asset(self, "ChartAsset", path=str(chart_dir))
        self.chart = eks.HelmChart(
            self,
            "Chart",
            cluster=as_icluster(cluster),
            chart_asset=asset,
            release=config.release,
            namespace=config.namespace,
            create_namespace=False,
            values=chart_values(Stack.of(self).region, chart_dir),
            # Never wait here: no node exists yet (see the class docstring).
            wait=False,
        )


def _relative(path: Path) -> str:
    root = Path(__file__).resolve().parents[2]
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return path.name


class HyperPodCluster(Construct):
    """``AWS::SageMaker::Cluster`` with the GPU and system groups.

    ``TieredStorageConfig`` is deliberately absent: the Tiered Storage custom resource owns it,
    and two owners would undo each other on every update.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: HyperPodConfig,
        eks_cluster: AnyCluster,
        execution_role: iam.IRole,
        lifecycle_s3_uri: str,
        subnet: ec2.ISubnet,
        security_group: ec2.ISecurityGroup,
    ) -> None:
        super().__init__(scope, id)

        def group(g: InstanceGroupConfig) -> sagemaker.CfnCluster.ClusterInstanceGroupProperty:
            return sagemaker.CfnCluster.ClusterInstanceGroupProperty(
                instance_group_name=g.name,
                instance_type=g.instance_type,
                instance_count=g.instance_count,
                execution_role=execution_role.role_arn,
                threads_per_core=g.threads_per_core,
                life_cycle_config=sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
                    source_s3_uri=lifecycle_s3_uri, on_create=ON_CREATE
                ),
                instance_storage_configs=[
                    sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
                        ebs_volume_config=sagemaker.CfnCluster.ClusterEbsVolumeConfigProperty(
                            volume_size_in_gb=g.ebs_volume_size_gib
                        )
                    )
                ],
                on_start_deep_health_checks=list(g.on_start_deep_health_checks) or None,
                kubernetes_config=sagemaker.CfnCluster.ClusterKubernetesConfigProperty(
                    labels=dict(g.labels)
                )
                if g.labels
                else None,
            )

        self.cluster = sagemaker.CfnCluster(
            self,
            "Cluster",
            cluster_name=config.cluster_name,
            orchestrator=sagemaker.CfnCluster.OrchestratorProperty(
                eks=sagemaker.CfnCluster.ClusterOrchestratorEksConfigProperty(
                    cluster_arn=eks_cluster.cluster_arn
                )
            ),
            instance_groups=[group(config.gpu_group), group(config.system_group)],
            vpc_config=sagemaker.CfnCluster.VpcConfigProperty(
                security_group_ids=[security_group.security_group_id],
                subnets=[subnet.subnet_id],
            ),
            node_recovery=config.node_recovery,
            node_provisioning_mode="Continuous",
        )
