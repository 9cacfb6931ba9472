"""The EKS control plane HyperPod attaches to (native ``AWS::EKS::Cluster`` via aws_eks_v2)."""

from __future__ import annotations

import json

from aws_cdk import Annotations, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.cdk.cluster_types import AnyCluster
from infra.cdk.nag import acknowledge
from infra.cdk.removal import retention
from infra.config.eks import EksConfig
from infra.facts.versions import SUPPORTED_KUBERNETES

ALL_LOG_TYPES = [
    eks.ClusterLoggingTypes.API,
    eks.ClusterLoggingTypes.AUDIT,
    eks.ClusterLoggingTypes.AUTHENTICATOR,
    eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
    eks.ClusterLoggingTypes.SCHEDULER,
]
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
# Enforce Kubernetes NetworkPolicies (the KV cache holds data derived from users' prompts): the
# vpc-cni add-on (1.14.0 or later) then runs its network policy agent as a second container of
# the aws-node DaemonSet on every node, enforcing with eBPF (kernel 5.10+, as on the HyperPod
# AL2023 AMIs). The key is a string "true" in the add-on's configuration schema. Source: Amazon EKS
# User Guide, "Restrict Pod network traffic with Kubernetes network policies"
# (https://docs.aws.amazon.com/eks/latest/userguide/cni-network-policy-configure.html); check with
# `aws eks describe-addon-configuration --addon-name vpc-cni --addon-version <pin>`.
VPC_CNI_CONFIGURATION = json.dumps({"enableNetworkPolicy": "true"})


class EksControlPlane(Construct):
    """EKS with API authentication, all control-plane logs, KMS-encrypted secrets, native OIDC.

    No node capacity: every node is a HyperPod instance. Self-managed default add-ons are not
    bootstrapped; the core add-ons are EKS add-ons with pinned versions instead.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: EksConfig,
        vpc: ec2.IVpc,
        control_plane_subnets: list[ec2.ISubnet],
        security_group: ec2.ISecurityGroup,
        removal_policy: RemovalPolicy,
    ) -> None:
        super().__init__(scope, id)
        pins = SUPPORTED_KUBERNETES[config.kubernetes_version]
        self.secrets_key = kms.Key(
            self,
            "SecretsKey",
            description=f"Envelope encryption of Kubernetes secrets in {config.cluster_name}",
            enable_key_rotation=True,
            removal_policy=removal_policy,
        )
        # EKS writes to this fixed name; creating it first lets the app own its retention.
        self.log_group = logs.LogGroup(
            self,
            "ControlPlaneLogs",
            log_group_name=f"/aws/eks/{config.cluster_name}/cluster",
            retention=retention(config.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        private = config.endpoint_access == "private"
        endpoint_access = (
            eks.EndpointAccess.PRIVATE
            if private
            else eks.EndpointAccess.PUBLIC_AND_PRIVATE.only_from(*config.public_cidrs)
        )
        if not private and not config.public_access_cidrs:
            Annotations.of(self).add_warning_v2(
                "hyperpod-kvcache:eks-endpoint-open",
                "eks.public_access_cidrs is not set: the EKS API endpoint accepts connections "
                "from any address (0.0.0.0/0); list the networks that deploy and run kubectl",
            )
        self.cluster = eks.Cluster(
            self,
            "Cluster",
            cluster_name=config.cluster_name,
            version=eks.KubernetesVersion.of(config.kubernetes_version),
            default_capacity=0,
            default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
            bootstrap_self_managed_addons=False,
            # The deploy role keeps cluster-admin only while no admin principal is configured.
            bootstrap_cluster_creator_admin_permissions=config.creator_admin,
            vpc=vpc,
            vpc_subnets=[ec2.SubnetSelection(subnets=control_plane_subnets)],
            security_group=security_group,
            endpoint_access=endpoint_access,
            cluster_logging=ALL_LOG_TYPES,
            secrets_encryption_key=self.secrets_key,
            # Not state worth keeping, and a retained cluster's fixed name would block a
            # recreate; the secrets key is what prod retains.
            removal_policy=RemovalPolicy.DESTROY,
            kubectl_provider_options=eks.KubectlProviderOptions(
                kubectl_layer=pins.kubectl_layer_class()(self, "KubectlLayer"),
                # A private endpoint is only reachable from inside the VPC.
                private_subnets=control_plane_subnets if private else None,
            ),
        )
        self.cluster.node.add_dependency(self.log_group)
        acknowledge(
            self.cluster.role,
            "AwsSolutions-IAM4",
            "EKS requires AmazonEKSClusterPolicy on the cluster service role.",
            "Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEKSClusterPolicy",
        )
        self.oidc_provider = eks.OidcProviderNative(
            self, "OidcProvider", url=self.cluster.cluster_open_id_connect_issuer_url
        )
        for index, arn in enumerate(config.admin_principal_arns):
            self.cluster.grant_access(
                f"Admin{index}",
                arn,
                [
                    eks.AccessPolicy.from_access_policy_name(
                        CLUSTER_ADMIN_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER
                    )
                ],
            )
        self.core_addons = self._core_addons(config)

    def _core_addons(self, config: EksConfig) -> list[eks.CfnAddon]:
        """vpc-cni, kube-proxy and the pod identity agent: DaemonSets, ACTIVE with zero nodes.

        coredns is not here: it stays DEGRADED until nodes join, and CloudFormation would wait on
        it; ``add_coredns`` creates it after the HyperPod nodes exist.
        """
        versions = config.addons
        return [
            self._addon(
                "VpcCni",
                "vpc-cni",
                versions.vpc_cni,
                configuration_values=VPC_CNI_CONFIGURATION,
            ),
            self._addon("KubeProxy", "kube-proxy", versions.kube_proxy),
            self._addon("PodIdentityAgent", "eks-pod-identity-agent", versions.pod_identity_agent),
        ]

    def _addon(
        self, id: str, name: str, version: str, *, configuration_values: str | None = None
    ) -> eks.CfnAddon:
        # OVERWRITE: no self-managed copies are bootstrapped, so nothing user-made is replaced.
        return eks.CfnAddon(
            self,
            id,
            addon_name=name,
            addon_version=version,
            cluster_name=self.cluster.cluster_name,
            resolve_conflicts="OVERWRITE",
            configuration_values=configuration_values,
        )


def add_coredns(scope: Construct, *, cluster: AnyCluster, version: str) -> eks.CfnAddon:
    """coredns, to be made dependent on the HyperPod nodes by the caller."""
    return eks.CfnAddon(
        scope,
        "CoreDns",
        addon_name="coredns",
        addon_version=version,
        cluster_name=cluster.cluster_name,
        resolve_conflicts="OVERWRITE",
    )
