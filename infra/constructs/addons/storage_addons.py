"""CSI driver add-ons: Mountpoint for S3, FSx for Lustre and EBS, each with its own IAM role."""

from __future__ import annotations

from aws_cdk import Aws
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.cdk.cluster_types import AnyCluster
from infra.cdk.nag import acknowledge_findings, managed_policy_finding, wildcard_finding
from infra.config.addons import EbsCsiConfig, FsxCsiConfig, S3CsiConfig
from infra.constructs.addons.base import EksAddon
from infra.constructs.addons.irsa import irsa_role
from infra.constructs.addons.service_accounts import (
    EBS_CSI_CONTROLLER,
    FSX_CSI_CONTROLLER,
    S3_CSI,
)


class S3CsiDriverAddon(EksAddon):
    """Mountpoint for S3 CSI driver; its IRSA role can only list and read the model buckets."""

    ADDON_NAME = "aws-mountpoint-s3-csi-driver"

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: AnyCluster,
        oidc_provider: iam.IOpenIdConnectProvider,
        settings: S3CsiConfig,
        existing_cluster: bool,
    ) -> None:
        if settings.adopted:  # the installed driver keeps its own role
            super().__init__(
                scope, id, cluster=cluster, settings=settings, existing_cluster=existing_cluster
            )
            return
        holder = Construct(scope, f"{id}Iam")
        self.role = irsa_role(
            holder,
            "Role",
            oidc_provider=oidc_provider,
            service_account=S3_CSI,
            description="Mountpoint S3 CSI driver: read-only access to the model buckets",
        )
        buckets = [f"arn:{Aws.PARTITION}:s3:::{name}" for name in settings.model_bucket_names]
        if buckets:
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="ListModelBuckets", actions=["s3:ListBucket"], resources=buckets
                )
            )
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="ReadModelObjects",
                    actions=["s3:GetObject"],
                    resources=[f"{arn}/*" for arn in buckets],
                )
            )
            acknowledge_findings(
                self.role,
                {
                    wildcard_finding(
                        f"arn:<AWS::Partition>:s3:::{name}/*"
                    ): "Objects of a model bucket "
                    "named in config (read-only); keys are not known in advance."
                    for name in settings.model_bucket_names
                },
            )
        super().__init__(
            scope,
            id,
            cluster=cluster,
            settings=settings,
            existing_cluster=existing_cluster,
            service_account_role_arn=self.role.role_arn,
        )


class FsxCsiDriverAddon(EksAddon):
    """FSx for Lustre CSI driver; its role reaches the controller through a pod identity
    association created as its own resource (the add-on's inline association would tie the
    role's lifecycle to the add-on's)."""

    ADDON_NAME = "aws-fsx-csi-driver"

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: AnyCluster,
        settings: FsxCsiConfig,
        existing_cluster: bool,
    ) -> None:
        if settings.adopted:  # the installed driver keeps its own role
            super().__init__(
                scope, id, cluster=cluster, settings=settings, existing_cluster=existing_cluster
            )
            return
        holder = Construct(scope, f"{id}Iam")
        self.role = iam.Role(
            holder,
            "Role",
            assumed_by=iam.ServicePrincipal("pods.eks.amazonaws.com").with_session_tags(),
            description="FSx for Lustre CSI controller (EKS Pod Identity)",
        )
        if settings.dynamic_provisioning:
            self.role.add_managed_policy(
                iam.ManagedPolicy.from_aws_managed_policy_name("AmazonFSxFullAccess")
            )
        else:
            # Static volumes only: the controller looks file systems up, it never creates them.
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="DescribeFileSystems",
                    actions=["fsx:DescribeFileSystems"],
                    resources=["*"],
                )
            )
        # Acknowledge only what is attached: the managed policy or the Describe wildcard.
        acknowledge_findings(
            self.role,
            {
                managed_policy_finding("AmazonFSxFullAccess"): "AWS documents this policy for "
                "the FSx CSI driver's dynamic provisioning (opt-in: dynamic_provisioning)."
            }
            if settings.dynamic_provisioning
            else {
                wildcard_finding("*"): "fsx:DescribeFileSystems has no resource-level permissions."
            },
        )
        self.association = eks.CfnPodIdentityAssociation(
            holder,
            "PodIdentityAssociation",
            cluster_name=cluster.cluster_name,
            namespace=FSX_CSI_CONTROLLER.namespace,
            service_account=FSX_CSI_CONTROLLER.name,
            role_arn=self.role.role_arn,
        )
        super().__init__(
            scope, id, cluster=cluster, settings=settings, existing_cluster=existing_cluster
        )
        # The controller must find its credentials on first start.
        self.resource.node.add_dependency(self.association)


class EbsCsiDriverAddon(EksAddon):
    """EBS CSI driver. On HyperPod nodes a volume attaches through SageMaker
    (AttachClusterNodeVolume), so the role needs those actions on the HyperPod cluster and
    DescribeCluster on the EKS cluster besides AmazonEBSCSIDriverPolicy."""

    ADDON_NAME = "aws-ebs-csi-driver"

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: AnyCluster,
        oidc_provider: iam.IOpenIdConnectProvider,
        hyperpod_cluster_arn: str,
        settings: EbsCsiConfig,
        existing_cluster: bool,
    ) -> None:
        if settings.adopted:  # the installed driver keeps its own role
            super().__init__(
                scope, id, cluster=cluster, settings=settings, existing_cluster=existing_cluster
            )
            return
        holder = Construct(scope, f"{id}Iam")
        self.role = irsa_role(
            holder,
            "Role",
            oidc_provider=oidc_provider,
            service_account=EBS_CSI_CONTROLLER,
            description="EBS CSI controller, including volume attach on HyperPod nodes",
        )
        self.role.add_managed_policy(
            iam.ManagedPolicy.from_aws_managed_policy_name("service-role/AmazonEBSCSIDriverPolicy")
        )
        acknowledge_findings(
            self.role,
            {
                managed_policy_finding(
                    "service-role/AmazonEBSCSIDriverPolicy"
                ): "AWS's policy for the "
                "EBS CSI driver; it is kept current with the driver's API calls."
            },
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="HyperPodNodeVolumes",
                actions=["sagemaker:AttachClusterNodeVolume", "sagemaker:DetachClusterNodeVolume"],
                resources=[hyperpod_cluster_arn],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="DescribeEksCluster",
                actions=["eks:DescribeCluster"],
                resources=[cluster.cluster_arn],
            )
        )
        super().__init__(
            scope,
            id,
            cluster=cluster,
            settings=settings,
            existing_cluster=existing_cluster,
            service_account_role_arn=self.role.role_arn,
        )
