"""Pieces of the delivery pipeline: build tools, the verify role, the nightly recreate, and the
role GitHub Actions assumes through OIDC."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config import AppConfig
from infra.nag import acknowledge
from infra.stack_layout import STACK_SUFFIXES

# CodeBuild's Ubuntu image with Python 3.11+/3.12 and Node.js 20 (the toolkit's prerequisites).
BUILD_IMAGE = codebuild.LinuxBuildImage.STANDARD_7_0
HELM_VERSION = "v3.16.3"
GITHUB_OIDC_URL = "https://token.actions.githubusercontent.com"
# The CDK bootstrap roles (default qualifier) a deploy assumes; they hold the deploy rights.
# The environment's stacks, <stack_prefix>-<suffix> (scripts/lib/teardown/ deletes these).
ENVIRONMENT_STACKS = STACK_SUFFIXES  # what the nightly role may delete (infra/stack_layout.py)
CDK_BOOTSTRAP_ROLES = "cdk-hnb659fds-*-role-{account}-{region}"


def tool_install_commands(*, kubectl_version: str | None = None) -> list[str]:
    """Pinned helm (for `make chart`) and optionally kubectl, each checked against the
    checksum its publisher lists next to the download."""
    helm = f"helm-{HELM_VERSION}-linux-amd64.tar.gz"
    commands = [
        f"curl -fsSLO https://get.helm.sh/{helm} -O https://get.helm.sh/{helm}.sha256sum",
        f"sha256sum -c {helm}.sha256sum",
        f"tar -xzf {helm} linux-amd64/helm && install linux-amd64/helm /usr/local/bin/helm",
    ]
    if kubectl_version:
        base = f"https://dl.k8s.io/release/{kubectl_version}/bin/linux/amd64/kubectl"
        commands += [
            f"curl -fsSLO {base} -O {base}.sha256",
            'echo "$(cat kubectl.sha256)  kubectl" | sha256sum -c',
            "install kubectl /usr/local/bin/kubectl",
        ]
    return commands


def kubectl_version_for(config: AppConfig) -> str:
    return f"v{config.eks.kubernetes_version}.0"


def _acknowledge_wildcards(
    role: iam.IRole, statements: list[iam.PolicyStatement], reason: str
) -> None:
    """Acknowledge the wildcard resources of ``statements`` (written just above, in full view)."""
    wildcards = sorted({r for s in statements for r in s.resources if "*" in r})
    acknowledge(role, "AwsSolutions-IAM5", reason, *(f"Resource::{r}" for r in wildcards))


def verify_role_name(config: AppConfig) -> str:
    """Fixed so the test environment's config can list it in eks.admin_principal_arns."""
    return f"{config.project}-{config.environment}-pipeline-verify"


def _read_environment_statements(config: AppConfig) -> list[iam.PolicyStatement]:
    """What `scripts verify` reads: the clusters and the add-ons of one environment."""
    eks_cluster = f"arn:aws:eks:{config.region}:{config.account}:cluster/{config.eks.cluster_name}"
    return [
        iam.PolicyStatement(
            actions=["eks:DescribeCluster", "eks:ListAddons"], resources=[eks_cluster]
        ),
        iam.PolicyStatement(
            actions=["eks:DescribeAddon"],
            resources=[
                f"arn:aws:eks:{config.region}:{config.account}:addon/{config.eks.cluster_name}/*/*"
            ],
        ),
        iam.PolicyStatement(
            actions=["sagemaker:DescribeCluster"],
            # The HyperPod cluster's ARN ends in a generated id, unknown before it exists.
            resources=[f"arn:aws:sagemaker:{config.region}:{config.account}:cluster/*"],
        ),
    ]


class VerifyRole(Construct):
    """Role of the pipeline's verify step. Add its ARN to the test environment's
    ``eks.admin_principal_arns`` so it can read the cluster's objects."""

    def __init__(self, scope: Construct, id: str, *, config: AppConfig) -> None:
        super().__init__(scope, id)
        self.role = iam.Role(
            self,
            "Role",
            role_name=verify_role_name(config),
            assumed_by=iam.ServicePrincipal("codebuild.amazonaws.com"),
            description=f"Runs `scripts verify` against {config.environment}",
        )
        statements = _read_environment_statements(config)
        for statement in statements:
            self.role.add_to_policy(statement)
        _acknowledge_wildcards(
            self.role,
            statements,
            "The HyperPod cluster ARN ends in an id generated at creation; the add-on ARNs "
            "end in their name and a generated id.",
        )


# GuardDuty tags the VPC endpoint and security group it creates for runtime monitoring.
GUARDDUTY_TAG = "GuardDutyManaged"


class NightlyRecreate(Construct):
    """A scheduled CodeBuild run of `scripts recreate` on the test environment: teardown,
    deploy, verify. Failures show drift and recreate problems before a release."""

    def __init__(
        self, scope: Construct, id: str, *, config: AppConfig, test_config: AppConfig
    ) -> None:
        super().__init__(scope, id)
        settings = config.pipeline
        assert settings.repository and settings.connection_arn
        owner, repo = settings.repository.split("/", 1)
        log_group = logs.LogGroup(self, "Logs", retention=logs.RetentionDays.ONE_MONTH)
        # Named so the test environment's config can give it an access entry (teardown deletes
        # the endpoints and PVCs through the Kubernetes API).
        self.role = role = iam.Role(
            self,
            "Role",
            role_name=f"{test_config.project}-{test_config.environment}-nightly-recreate",
            assumed_by=iam.ServicePrincipal("codebuild.amazonaws.com"),
        )
        self.project = codebuild.Project(
            self,
            "Project",
            role=role,
            description=f"Nightly teardown and recreate of {test_config.environment}",
            source=codebuild.Source.git_hub(owner=owner, repo=repo, branch_or_ref=settings.branch),
            environment=codebuild.BuildEnvironment(build_image=BUILD_IMAGE),
            timeout=Duration.hours(8),
            logging=codebuild.LoggingOptions(
                cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=log_group)
            ),
            build_spec=codebuild.BuildSpec.from_object(
                {
                    "version": "0.2",
                    "phases": {
                        "install": {
                            "commands": tool_install_commands(
                                kubectl_version=kubectl_version_for(test_config)
                            )
                        },
                        "build": {
                            "commands": [
                                "make install node_modules/.installed",
                                f"aws eks update-kubeconfig --name {test_config.eks.cluster_name} "
                                f"--region {test_config.region} || true",
                                ".venv/bin/python -m scripts recreate "
                                f"--env {test_config.environment} --yes",
                            ]
                        },
                    },
                }
            ),
        )
        # The source is read through the pipeline's connection, not a stored token.
        cfn_project = self.project.node.default_child
        assert isinstance(cfn_project, codebuild.CfnProject)
        cfn_project.add_property_override(
            "Source.Auth", {"Type": "CODECONNECTIONS", "Resource": settings.connection_arn}
        )
        account, region = test_config.account, test_config.region
        bootstrap_roles = f"arn:aws:iam::{account}:role/" + CDK_BOOTSTRAP_ROLES.format(
            account=account, region=region
        )
        stack_names = [f"{test_config.stack_prefix}-{s}" for s in ENVIRONMENT_STACKS]
        statements = [
            iam.PolicyStatement(
                sid="UseConnection",
                actions=["codeconnections:UseConnection", "codestar-connections:UseConnection"],
                resources=[settings.connection_arn],
            ),
            iam.PolicyStatement(
                sid="DeployThroughCdkBootstrapRoles",
                actions=["sts:AssumeRole"],
                resources=[bootstrap_roles],
            ),
            *_read_environment_statements(test_config),
            iam.PolicyStatement(
                sid="DeleteEnvironmentStacks",
                actions=[
                    "cloudformation:DescribeStacks",
                    "cloudformation:DescribeStackEvents",
                    "cloudformation:ListStackResources",
                    "cloudformation:DeleteStack",
                ],
                # Exact stack names: a prefix pattern would also match test2, test-west, ...
                resources=[
                    f"arn:aws:cloudformation:{region}:{account}:stack/{name}/*"
                    for name in stack_names
                ],
            ),
            iam.PolicyStatement(
                sid="FindLeftovers",
                actions=[
                    "cloudformation:ListStacks",
                    "ec2:DescribeVpcs",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeVpcEndpoints",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeVolumes",
                    "logs:DescribeLogGroups",
                    "elasticloadbalancing:DescribeLoadBalancers",
                    "elasticloadbalancing:DescribeTags",
                ],
                resources=["*"],
            ),
            # Teardown sweeps GuardDuty's endpoint and security group, which block the VPC's
            # deletion: GuardDuty creates them (not our stacks), tagged GuardDutyManaged=true.
            # No network-interface deletes: ENIs carry no tags and the VPC id changes with every
            # recreate, so no condition could keep them to this environment; teardown leaves
            # them to CloudFormation (docs/cli.md).
            iam.PolicyStatement(
                sid="SweepGuardDutyNetworkLeftovers",
                actions=["ec2:DeleteVpcEndpoints", "ec2:DeleteSecurityGroup"],
                resources=[
                    f"arn:aws:ec2:{region}:{account}:{kind}/*"
                    for kind in ("vpc-endpoint", "security-group")
                ],
                conditions={"StringEquals": {f"aws:ResourceTag/{GUARDDUTY_TAG}": "true"}},
            ),
            iam.PolicyStatement(
                sid="SweepTaggedVolumes",
                actions=["ec2:DeleteVolume"],
                resources=[f"arn:aws:ec2:{region}:{account}:volume/*"],
                conditions={
                    "StringEquals": {
                        "aws:ResourceTag/project": test_config.project,
                        "aws:ResourceTag/environment": test_config.environment,
                    }
                },
            ),
            iam.PolicyStatement(
                sid="SweepClusterVolumes",
                actions=["ec2:DeleteVolume"],
                resources=[f"arn:aws:ec2:{region}:{account}:volume/*"],
                conditions={
                    "StringEquals": {
                        f"aws:ResourceTag/kubernetes.io/cluster/{test_config.eks.cluster_name}": (
                            "owned"
                        )
                    }
                },
            ),
            iam.PolicyStatement(
                sid="SweepLogGroups",
                actions=["logs:DeleteLogGroup"],
                # The names teardown derives from the stacks' resources: CloudFormation names a
                # resource <stack>-<logical id>-<suffix>, Lambda logs to /aws/lambda/<function>.
                resources=[
                    f"arn:aws:logs:{region}:{account}:log-group:{group}:*"
                    for group in (
                        *(f"{name}-*" for name in stack_names),
                        *(f"/aws/lambda/{name}-*" for name in stack_names),
                        f"/aws/eks/{test_config.eks.cluster_name}/cluster",
                        f"/aws/sagemaker/Clusters/{test_config.hyperpod.cluster_name}/*",
                    )
                ],
            ),
        ]
        for statement in statements:
            role.add_to_principal_policy(statement)
        self.rule = events.Rule(
            self,
            "Schedule",
            schedule=events.Schedule.expression(settings.nightly_schedule),
            targets=[targets.CodeBuildProject(self.project)],
        )
        acknowledge(
            self.project,
            "AwsSolutions-CB4",
            "Build artifacts are not produced; logs go to an encrypted-at-rest CloudWatch group.",
        )
        _acknowledge_wildcards(
            role,
            statements,
            "Teardown sweeps resources CloudFormation left behind, whose ids are not known "
            "before they exist; deploys go through the CDK bootstrap roles (one name pattern); "
            "Describe calls cannot be resource-scoped; the HyperPod cluster and add-on ARNs end "
            "in generated ids.",
        )


class GitHubDeployRole(Construct):
    """The role GitHub Actions assumes with its OIDC token to deploy from the configured branch
    (no long-lived keys). It may only assume the CDK bootstrap roles."""

    def __init__(self, scope: Construct, id: str, *, config: AppConfig) -> None:
        super().__init__(scope, id)
        settings = config.pipeline
        github = settings.github_actions
        assert github.deploy_role_name and settings.repository
        if github.create_oidc_provider:
            provider: iam.IOpenIdConnectProvider = iam.OpenIdConnectProvider(
                self, "Provider", url=GITHUB_OIDC_URL, client_ids=["sts.amazonaws.com"]
            )
        else:
            provider = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
                self,
                "Provider",
                f"arn:aws:iam::{config.account}:oidc-provider/token.actions.githubusercontent.com",
            )
        issuer = "token.actions.githubusercontent.com"
        self.role = iam.Role(
            self,
            "Role",
            role_name=github.deploy_role_name,
            description=f"GitHub Actions deploys of {settings.repository}@{settings.branch}",
            assumed_by=iam.WebIdentityPrincipal(
                provider.open_id_connect_provider_arn,
                conditions={
                    "StringEquals": {
                        f"{issuer}:aud": "sts.amazonaws.com",
                        f"{issuer}:sub": f"repo:{settings.repository}:ref:refs/heads/"
                        f"{settings.branch}",
                    }
                },
            ),
            max_session_duration=Duration.hours(4),
        )
        pattern = CDK_BOOTSTRAP_ROLES.format(account=config.account, region=config.region)
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["sts:AssumeRole"],
                resources=[f"arn:aws:iam::{config.account}:role/{pattern}"],
            )
        )
        acknowledge(
            self.role,
            "AwsSolutions-IAM5",
            "Deploys go through the CDK bootstrap roles (deploy, file and image publishing, "
            "lookup), which share this name pattern.",
            f"Resource::arn:aws:iam::{config.account}:role/{pattern}",
        )
