"""The HyperPod inference operator add-on, its four IAM roles and its TLS certificate bucket."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from aws_cdk import CfnElement, CfnJson, Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.cdk.cluster_types import AnyCluster
from infra.cdk.nag import (
    acknowledge_findings,
    finding_name,
    managed_policy_finding,
    ref,
    wildcard_finding,
)
from infra.config.addons import InferenceOperatorConfig
from infra.constructs.addons.alb_controller_policy import alb_controller_statements
from infra.constructs.addons.base import EksAddon
from infra.constructs.addons.irsa import STS_AUDIENCE, irsa_role
from infra.constructs.addons.service_accounts import (
    ALB_CONTROLLER,
    INFERENCE_CONTROLLER,
    KEDA_OPERATOR,
    gated_model_download,
)
from infra.constructs.buckets import SecureBucket

# The add-on rejects an execution role whose name does not start with this, and the AWS-managed
# AmazonSageMakerHyperPodInferenceAccess only allows iam:PassRole on
# role/SageMakerHyperPodInference*.
EXECUTION_ROLE_PREFIX = "SageMakerHyperPodInference"
ROLE_NAME_MAX = 64
ALB_WILDCARD_REASON = (
    "Load balancers, listeners, target groups and security groups are created at runtime with "
    "generated names; changes are limited by the elbv2.k8s.aws/cluster tag (the node security "
    "groups by the cluster's VPC), and Describe calls have no resource-level permissions."
)


def execution_role_name(unique: str) -> str:
    """``SageMakerHyperPodInference-<unique>``, shortened with a hash to fit IAM's 64 chars."""
    name = f"{EXECUTION_ROLE_PREFIX}-{unique}"
    if len(name) <= ROLE_NAME_MAX:
        return name
    digest = hashlib.sha256(unique.encode()).hexdigest()[:8]
    keep = ROLE_NAME_MAX - len(EXECUTION_ROLE_PREFIX) - len(digest) - 2
    return f"{EXECUTION_ROLE_PREFIX}-{unique[:keep].rstrip('-')}-{digest}"


def gated_model_principal(
    scope: Construct,
    oidc_provider: iam.IOpenIdConnectProvider,
    namespaces: Sequence[str],
) -> iam.IPrincipal:
    """SageMaker, and the operator's gated-download service accounts in exactly ``namespaces``
    (one ``StringLike`` value per namespace: the account name ends in a generated suffix)."""
    sagemaker = iam.ServicePrincipal("sagemaker.amazonaws.com")
    if not namespaces:  # no endpoints: no service account may assume it
        return sagemaker
    issuer = oidc_provider.open_id_connect_provider_issuer
    subjects = [gated_model_download(ns).subject for ns in sorted(set(namespaces))]
    conditions = {
        "StringLike": CfnJson(
            scope, "GatedModelRoleTrustSubCondition", value={f"{issuer}:sub": subjects}
        ),
        "StringEquals": CfnJson(
            scope, "GatedModelRoleTrustAudCondition", value={f"{issuer}:aud": STS_AUDIENCE}
        ),
    }
    web = iam.FederatedPrincipal(
        oidc_provider.open_id_connect_provider_arn, conditions, "sts:AssumeRoleWithWebIdentity"
    )
    return iam.CompositePrincipal(web, sagemaker)


def _vpc_id(cluster: AnyCluster, existing_vpc_id: str | None) -> str:
    """The cluster's VPC: the created cluster's, or the one an existing cluster's config names
    (config requires it there whenever the ALB controller's role is made)."""
    vpc_id = cluster.vpc.vpc_id if isinstance(cluster, eks.Cluster) else existing_vpc_id
    assert vpc_id is not None, "existing_cluster.vpc_id is required with alb_enabled"
    return vpc_id


class InferenceOperatorAddon(EksAddon):
    ADDON_NAME = "amazon-sagemaker-hyperpod-inference"

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: AnyCluster,
        oidc_provider: iam.IOpenIdConnectProvider,
        hyperpod_cluster_arn: str,
        settings: InferenceOperatorConfig,
        existing_cluster: bool,
        execution_role_unique_name: str,
        retain_stateful_resources: bool,
        endpoint_namespaces: Sequence[str] = (),
        existing_vpc_id: str | None = None,
        metrics_workspace_arn: str | None = None,
    ) -> None:
        """``metrics_workspace_arn``: the observability AMP workspace, the only one KEDA's
        role may query (None, observability off: no Prometheus query at all)."""
        if settings.adopted:
            # The installed operator keeps its execution role, TLS bucket and ALB/KEDA roles:
            # they stay in adopted_configuration, and nothing here would outlive a destroy.
            super().__init__(
                scope, id, cluster=cluster, settings=settings, existing_cluster=existing_cluster
            )
            return
        holder = Construct(scope, f"{id}Iam")
        self.tls = SecureBucket(scope, "TlsCertificates", retain=retain_stateful_resources)

        self.execution_role = irsa_role(
            holder,
            "ExecutionRole",
            oidc_provider=oidc_provider,
            service_account=INFERENCE_CONTROLLER,
            also_trusted_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            role_name=execution_role_name(execution_role_unique_name),
            description="HyperPod inference operator execution role",
        )
        self.execution_role.add_managed_policy(
            iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSageMakerHyperPodInferenceAccess")
        )
        # The managed policy only covers buckets named hyperpod-tls*; this bucket is CDK-named.
        self.execution_role.add_to_policy(
            iam.PolicyStatement(
                sid="TlsCertificateObjects",
                actions=["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging", "s3:DeleteObject"],
                resources=[self.tls.bucket.arn_for_objects("*")],
            )
        )

        tls_cfn = self.tls.bucket.node.default_child
        assert isinstance(tls_cfn, CfnElement)
        acknowledge_findings(
            self.execution_role,
            {
                managed_policy_finding("AmazonSageMakerHyperPodInferenceAccess"): "Required by the "
                "HyperPod inference add-on; AWS maintains it with the operator's API calls.",
                wildcard_finding(f"{ref(tls_cfn, 'Arn')}/*"): "Certificates "
                "the operator writes into its own TLS bucket; keys are generated per endpoint.",
            },
        )
        self.gated_model_role = iam.Role(
            holder,
            "GatedModelRole",
            assumed_by=gated_model_principal(holder, oidc_provider, endpoint_namespaces),
            description="Downloads gated JumpStart models for HyperPod inference endpoints",
        )
        self.gated_model_role.add_managed_policy(
            iam.ManagedPolicy.from_aws_managed_policy_name(
                "AmazonSageMakerHyperPodGatedModelAccess"
            )
        )

        acknowledge_findings(
            self.gated_model_role,
            {
                managed_policy_finding(
                    "AmazonSageMakerHyperPodGatedModelAccess"
                ): "Required by the HyperPod inference add-on for gated JumpStart model downloads."
            },
        )
        config: dict[str, object] = {
            "executionRoleArn": self.execution_role.role_arn,
            "tlsCertificateS3Bucket": self.tls.bucket.bucket_name,
            "hyperpodClusterArn": hyperpod_cluster_arn,
            "jumpstartGatedModelDownloadRoleArn": self.gated_model_role.role_arn,
            "alb": {"enabled": False},
            "keda": {"enabled": False},
        }
        self.alb_role: iam.Role | None = None
        if settings.alb_enabled:
            self.alb_role = irsa_role(
                holder,
                "AlbControllerRole",
                oidc_provider=oidc_provider,
                service_account=ALB_CONTROLLER,
                description="AWS Load Balancer Controller installed by the inference add-on",
            )
            statements = alb_controller_statements(
                Stack.of(self.alb_role), _vpc_id(cluster, existing_vpc_id)
            )
            for statement in statements:
                self.alb_role.add_to_policy(statement)
            wildcards = {
                finding_name(self.alb_role, r)
                for s in statements
                for r in s.resources
                if "*" in finding_name(self.alb_role, r)
            }
            acknowledge_findings(
                self.alb_role, {wildcard_finding(r): ALB_WILDCARD_REASON for r in wildcards}
            )
            config["alb"] = {
                "enabled": True,
                "serviceAccount": {"create": True, "roleArn": self.alb_role.role_arn},
            }
        self.keda_role: iam.Role | None = None
        if settings.keda_enabled:
            self.keda_role = irsa_role(
                holder,
                "KedaRole",
                oidc_provider=oidc_provider,
                service_account=KEDA_OPERATOR,
                description="KEDA operator installed by the inference add-on (scaling metrics)",
            )
            self.keda_role.add_to_policy(
                iam.PolicyStatement(
                    sid="CloudWatchMetrics",
                    actions=[
                        "cloudwatch:GetMetricData",
                        "cloudwatch:GetMetricStatistics",
                        "cloudwatch:ListMetrics",
                    ],
                    resources=["*"],  # CloudWatch metric reads have no resource-level scoping
                )
            )
            if metrics_workspace_arn is not None:
                # The autoscaled endpoints' triggers query the observability workspace only.
                self.keda_role.add_to_policy(
                    iam.PolicyStatement(
                        sid="PrometheusQueries",
                        actions=[
                            "aps:QueryMetrics",
                            "aps:GetLabels",
                            "aps:GetSeries",
                            "aps:GetMetricMetadata",
                        ],
                        resources=[metrics_workspace_arn],
                    )
                )
            acknowledge_findings(
                self.keda_role,
                {
                    wildcard_finding(
                        "*"
                    ): "CloudWatch metric reads have no resource-level permissions.",
                },
            )
            config["keda"] = {
                "enabled": True,
                "auth": {"aws": {"irsa": {"enabled": True, "roleArn": self.keda_role.role_arn}}},
            }

        super().__init__(
            scope,
            id,
            cluster=cluster,
            settings=settings,
            existing_cluster=existing_cluster,
            # Tokens (role ARNs, bucket name) become an Fn::Join that renders valid JSON.
            configuration_values=Stack.of(scope).to_json_string(config),
        )
        self.configuration = config
