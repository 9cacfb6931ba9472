"""A cluster the app does not own (``existing_cluster`` in config): the EKS and HyperPod clusters
imported, and a kubectl provider of this app's for the imported EKS cluster.

The kubectl handler runs as the role config names (used as it is) or as a role created here with
a cluster-admin access entry, and, for a private endpoint, in the subnets and security group
config names. Everything that applies Kubernetes objects on the cluster goes through that
provider (or its role, for the owned-manifest handler).
"""

from __future__ import annotations

from aws_cdk import Fn, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.cdk.nag import acknowledge_findings, render_intrinsic
from infra.config.hyperpod import ExistingClusterConfig
from infra.facts.versions import SUPPORTED_KUBERNETES


class ExistingCluster(Construct):
    """The imported clusters and this app's kubectl provider for them.

    ``eks_cluster`` (with the provider), ``oidc_provider``, ``hyperpod_cluster_name`` and
    ``hyperpod_cluster_arn`` are what the stacks above use, as they use a created cluster's.
    ``kubectl_access`` is the access entry created for the handler role (None: a role from
    config, which holds one already).
    """

    eks_cluster: eks.ICluster
    oidc_provider: iam.IOpenIdConnectProvider
    kubectl_access: eks.AccessEntry | None
    hyperpod_cluster_name: str
    hyperpod_cluster_arn: str

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        existing: ExistingClusterConfig,
        kubernetes_version: str,
    ) -> None:
        super().__init__(scope, id)
        pins = SUPPORTED_KUBERNETES[kubernetes_version]
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
