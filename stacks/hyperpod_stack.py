"""HyperPod stack: the HyperPod cluster on the EKS cluster, and the settings the app owns on it.

Two modes, one interface for the stacks above it (``eks_cluster``, ``oidc_provider``,
``hyperpod_cluster_name``, ``hyperpod_cluster_arn``):
- created: lifecycle scripts, instance role, dependencies chart, the cluster;
- existing (``existing_cluster`` in config): the clusters are imported and only the settings the
  app owns (Tiered Storage) and a kubectl provider for the imported EKS cluster are created.

The node readiness gate and CoreDNS are in the nodes stack, the Tiered Storage custom resource in
the tiered-storage stack; their Providers are built here, beside the cluster: this stack ends with
the cluster, so neither waits for the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Fn, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.cluster_types import AnyCluster
from infra.config import AppConfig
from infra.config.hyperpod import ExistingClusterConfig
from infra.constructs.hyperpod import (
    HyperPodCluster,
    HyperPodDependencies,
    HyperPodExecutionRole,
    LifecycleScripts,
)
from infra.constructs.network import Network
from infra.custom_resources.node_gate.construct import NodeGateProvider
from infra.custom_resources.tiered_storage.construct import TieredStorageProvider
from infra.deps import needs
from infra.nag import acknowledge_findings, render_intrinsic
from infra.versions import SUPPORTED_KUBERNETES
from stacks.eks_stack import EksStack


class HyperPodStack(Stack):
    eks_cluster: AnyCluster
    oidc_provider: iam.IOpenIdConnectProvider
    hyperpod_cluster_name: str
    hyperpod_cluster_arn: str
    hyperpod: HyperPodCluster | None = None

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        chart_dir: Path,
        network: Network | None = None,
        eks_stack: EksStack | None = None,
        egress: Construct | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        if config.existing_cluster is not None:
            self._attach(config, config.existing_cluster)
        else:
            assert network is not None and eks_stack is not None
            self._create(config, network, eks_stack, chart_dir)
            if egress is not None:
                # Nodes reach the internet through the NAT gateways, and the kubectl handler that
                # installs the chart runs in the private subnets.
                assert self.hyperpod is not None
                needs(self.hyperpod.cluster, egress)
                if self.dependencies_chart.chart is not None:
                    needs(self.dependencies_chart.chart, egress)
        # The Providers of the Tiered Storage and node gate custom resources (in the
        # tiered-storage and nodes stacks): they reference no cluster, so they are built while
        # it is created.
        self.tiered_storage_provider = TieredStorageProvider(self, "TieredStorage")
        self.node_gate_provider = NodeGateProvider(self, "NodesReadyGate")

    def _create(
        self, config: AppConfig, network: Network, eks_stack: EksStack, chart_dir: Path
    ) -> None:
        retain = config.retain_stateful_resources
        self.lifecycle = LifecycleScripts(self, "Lifecycle", retain=retain)
        self.execution_role = HyperPodExecutionRole(
            self,
            "ExecutionRole",
            lifecycle_bucket=self.lifecycle.bucket,
            subnet=network.hyperpod_subnet,
            security_group=network.cluster_security_group,
        )
        self.dependencies_chart = HyperPodDependencies(
            self,
            "Dependencies",
            cluster=eks_stack.cluster,
            config=config.hyperpod.dependencies_chart,
            chart_dir=chart_dir,
        )
        self.hyperpod = HyperPodCluster(
            self,
            "HyperPod",
            config=config.hyperpod,
            eks_cluster=eks_stack.cluster,
            execution_role=self.execution_role.role,
            lifecycle_s3_uri=self.lifecycle.s3_uri,
            subnet=network.hyperpod_subnet,
            security_group=network.cluster_security_group,
        )
        # Nodes need the scripts uploaded, the chart installed and the CNI running.
        self.hyperpod.cluster.node.add_dependency(self.lifecycle.deployment)
        self.hyperpod.cluster.node.add_dependency(self.execution_role)
        if self.dependencies_chart.chart is not None:
            self.hyperpod.cluster.node.add_dependency(self.dependencies_chart.chart)
        self.eks_cluster = eks_stack.cluster
        self.oidc_provider = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
            self, "OidcProvider", eks_stack.control_plane.oidc_provider.oidc_provider_arn
        )
        self.hyperpod_cluster_name = config.hyperpod.cluster_name
        self.hyperpod_cluster_arn = self.hyperpod.cluster.attr_cluster_arn

    def _attach(self, config: AppConfig, existing: ExistingClusterConfig) -> None:
        pins = SUPPORTED_KUBERNETES[config.eks.kubernetes_version]
        self.oidc_provider = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
            self,
            "OidcProvider",
            existing.oidc_provider_arn,
        )
        # The kubectl provider takes the handler's VPC from the cluster it is given; an imported
        # cluster has one only when it is passed in, so both imports get it.
        vpc = _kubectl_vpc(self, existing)
        target = eks.Cluster.from_cluster_attributes(
            self, "KubectlTarget", cluster_name=existing.eks_cluster_name, vpc=vpc
        )
        role, self.kubectl_access = _kubectl_role(self, existing, target)
        provider = eks.KubectlProvider(
            self,
            "KubectlProvider",
            cluster=target,
            kubectl_layer=pins.kubectl_layer_class()(self, "KubectlLayer"),
            role=role,
            private_subnets=[
                ec2.Subnet.from_subnet_id(self, f"KubectlSubnet{i}", subnet_id)
                for i, subnet_id in enumerate(existing.kubectl_subnet_ids)
            ]
            or None,
            security_groups=[
                ec2.SecurityGroup.from_security_group_id(
                    self, "KubectlSecurityGroup", existing.kubectl_security_group_id
                )
            ]
            if existing.kubectl_security_group_id
            else None,
        )
        if self.kubectl_access is not None:
            # An imported cluster has no kubectl barrier: every manifest reaches the provider
            # through its service token (the framework function), so making the provider wait
            # for the access entry makes every kubectl call wait for it, and on destroy the
            # entry goes last.
            provider.node.add_dependency(self.kubectl_access)
            _acknowledge_handler_policies(role)
        self.eks_cluster = eks.Cluster.from_cluster_attributes(
            self,
            "EksCluster",
            cluster_name=existing.eks_cluster_name,
            vpc=vpc,
            open_id_connect_provider=self.oidc_provider,
            kubectl_provider=provider,
        )
        self.hyperpod_cluster_name = existing.hyperpod_cluster_name
        self.hyperpod_cluster_arn = existing.hyperpod_cluster_arn


def _kubectl_vpc(scope: Construct, existing: ExistingClusterConfig) -> ec2.IVpc | None:
    """The cluster's VPC for a kubectl handler in private subnets (config guarantees the id).

    The handler's subnets are passed to the provider explicitly, so the VPC needs no subnets of
    its own; its AZs are not known offline and not used."""
    if not existing.kubectl_subnet_ids:
        return None
    assert existing.vpc_id is not None
    return ec2.Vpc.from_vpc_attributes(
        scope, "Vpc", vpc_id=existing.vpc_id, availability_zones=Fn.get_azs()
    )


def _kubectl_role(
    scope: Construct, existing: ExistingClusterConfig, cluster: eks.ICluster
) -> tuple[iam.IRole, eks.AccessEntry | None]:
    """The kubectl handler's execution role, and the access entry this stack gives it.

    A role from config is used as it is (immutable: the provider's policy additions are
    dropped, so it must carry them already). Otherwise the stack creates the role; the
    provider adds eks:DescribeCluster, ECR read access and, in a VPC, the VPC access policy."""
    if existing.kubectl_role_arn is not None:
        return iam.Role.from_role_arn(
            scope, "KubectlRole", existing.kubectl_role_arn, mutable=False
        ), None
    role = iam.Role(
        scope,
        "KubectlHandlerRole",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        managed_policies=[
            iam.ManagedPolicy.from_aws_managed_policy_name(
                "service-role/AWSLambdaBasicExecutionRole"
            )
        ],
        description="kubectl handler of this stack on an existing EKS cluster (cluster admin)",
    )
    access = eks.AccessEntry(
        scope,
        "KubectlAccessEntry",
        cluster=cluster,
        principal=role.role_arn,
        access_policies=[
            eks.AccessPolicy.from_access_policy_name(
                "AmazonEKSClusterAdminPolicy", access_scope_type=eks.AccessScopeType.CLUSTER
            )
        ],
    )
    return role, access


def _acknowledge_handler_policies(role: iam.IRole) -> None:
    """Acknowledge the managed policies on the handler role this stack creates, each with its
    reason (the provider adds ECR and VPC access policies to the role it is given)."""
    reasons = {
        "AWSLambdaBasicExecutionRole": "The kubectl handler's CloudWatch Logs writes (a Lambda "
        "function's standard logging policy).",
        "AWSLambdaVPCAccessExecutionRole": "Added by aws-cdk-lib's KubectlProvider for a handler "
        "in private subnets (ENI management).",
        "AmazonEC2ContainerRegistryReadOnly": "Added by aws-cdk-lib's KubectlProvider so Helm can "
        "pull charts from ECR.",
        "AmazonElasticContainerRegistryPublicReadOnly": "Added by aws-cdk-lib's KubectlProvider "
        "(in the aws partition only) so Helm can pull charts from ECR Public.",
    }
    cfn = role.node.default_child
    assert isinstance(cfn, iam.CfnRole)
    findings = {}
    for arn in Stack.of(role).resolve(cfn.managed_policy_arns) or []:
        rendered = render_intrinsic(arn)
        reason = next((r for name, r in reasons.items() if name in rendered), None)
        assert reason is not None, f"unexpected managed policy on the kubectl role: {rendered}"
        findings[f"AwsSolutions-IAM4[Policy::{rendered}]"] = reason
    acknowledge_findings(role, findings)
