"""Pieces of the delivery pipeline: build tools, the verify role, the nightly recreate, and the
role GitHub Actions assumes through OIDC."""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.cdk.nag import acknowledge
from infra.config import AppConfig
from infra.config.model import topic_name
from infra.environment.layout import STACK_SUFFIXES, stack_name

# CodeBuild's Ubuntu 22.04 image (standard:7.0); it offers Python 3.9 to 3.14 and Node.js 18 to 24
# (aws/aws-codebuild-docker-images, ubuntu/standard/7.0/runtimes.yml).
BUILD_IMAGE = codebuild.LinuxBuildImage.STANDARD_7_0
# The Python and Node.js the project is tested with (pyproject.toml's python_version, CI's
# setup-python and setup-node), pinned in every buildspec: without runtime-versions CodeBuild
# uses the image's defaults, which move when a version reaches its end of life.
RUNTIME_VERSIONS = {"python": "3.11", "nodejs": "22"}
HELM_VERSION = "v3.16.3"
GITHUB_OIDC_URL = "https://token.actions.githubusercontent.com"
# The CDK bootstrap roles (default qualifier) a deploy assumes; they hold the deploy rights.
# The environment's stacks, <stack_prefix>-<suffix> (scripts/lib/teardown/ deletes these): what
# the nightly role may delete (infra/environment/layout.py).
ENVIRONMENT_STACKS = STACK_SUFFIXES
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


# Where the nightly run publishes the bench compare report: <prefix>/<build number>/ in the
# pipeline's artifacts bucket; the variables its post_build commands read.
REPORT_PREFIX = "nightly-reports"
REPORT_DIR = "bench-results/nightly"
REPORT_BUCKET, ALERT_TOPIC = "REPORT_BUCKET", "ALERT_TOPIC_ARN"


def alert_topic_arn(test_config: AppConfig) -> str | None:
    """The test environment's alert topic (its observability stack's, recreated under the same
    name every night), or None when observability is off there."""
    if not test_config.observability.enabled:
        return None
    return f"arn:aws:sns:{test_config.region}:{test_config.account}:{topic_name(test_config)}"


def nightly_commands(test_config: AppConfig) -> list[str]:
    """Recreate, then verify, then bench compare: the first that fails ends the build phase
    (and fails the run); bench compare exits 1 when a tier misses a threshold in ``bench``."""
    env = test_config.environment
    return [
        "make install node_modules/.installed",
        f"aws eks update-kubeconfig --name {test_config.eks.cluster_name} "
        f"--region {test_config.region} || true",
        f".venv/bin/python -m scripts recreate --env {env} --yes --skip-verify",
        f"aws eks update-kubeconfig --name {test_config.eks.cluster_name} "
        f"--region {test_config.region}",
        f".venv/bin/python -m scripts verify --env {env} --wait-minutes 30",
        f".venv/bin/python -m scripts bench compare --env {env} --out {REPORT_DIR} "
        '--note "Nightly run $CODEBUILD_BUILD_NUMBER of the recreated environment"',
    ]


def nightly_report_commands(notify: bool) -> list[str]:
    """Publish whatever report there is, then (with an alert topic) say on it that the run
    failed. A failed publish or notification fails no further: the build already has."""
    dest = f"s3://${REPORT_BUCKET}/{REPORT_PREFIX}/$CODEBUILD_BUILD_NUMBER/"
    commands = [
        f"if [ -d {REPORT_DIR} ]; then aws s3 cp --recursive --only-show-errors "
        f'{REPORT_DIR} "{dest}"; fi',
    ]
    if notify:
        commands.append(
            'if [ "$CODEBUILD_BUILD_SUCCEEDING" != "1" ]; then aws sns publish '
            f'--topic-arn "${ALERT_TOPIC}" --subject "Nightly recreate failed" --message '
            '"Nightly run $CODEBUILD_BUILD_NUMBER failed: recreate, a verify check or a bench '
            f"compare verdict. Report (when bench compare ran): {dest}report.md. Log: "
            '$CODEBUILD_BUILD_URL" || echo "could not notify the alert topic"; fi'
        )
    return commands


def _logical(bucket: s3.IBucket) -> str:
    """The bucket's logical id, as cdk-nag names a token in a finding."""
    cfn = bucket.node.default_child
    assert isinstance(cfn, s3.CfnBucket)
    return str(Stack.of(bucket).resolve(cfn.logical_id))


def _report_statements(
    reports: s3.IBucket, test_config: AppConfig, topic: str | None
) -> list[iam.PolicyStatement]:
    """Put the report under its prefix only (the bucket's key encrypts it); publish to the alert
    topic only, through its key for that topic only (SNS's encryption context names it)."""
    statements = [
        iam.PolicyStatement(
            sid="PublishNightlyReport",
            actions=["s3:PutObject"],
            resources=[reports.arn_for_objects(f"{REPORT_PREFIX}/*")],
        )
    ]
    if reports.encryption_key is not None:
        statements.append(
            iam.PolicyStatement(
                sid="EncryptNightlyReport",
                actions=["kms:GenerateDataKey"],
                resources=[reports.encryption_key.key_arn],
            )
        )
    if topic is not None:
        region, account = test_config.region, test_config.account
        statements += [
            iam.PolicyStatement(
                sid="NotifyNightlyFailure", actions=["sns:Publish"], resources=[topic]
            ),
            iam.PolicyStatement(
                sid="NotifyThroughTopicKey",
                actions=["kms:GenerateDataKey", "kms:Decrypt"],
                # The topic's key is created with the observability stack, recreated nightly.
                resources=[f"arn:aws:kms:{region}:{account}:key/*"],
                conditions={
                    "StringEquals": {
                        "kms:ViaService": f"sns.{region}.amazonaws.com",
                        "kms:EncryptionContext:aws:sns:topicArn": topic,
                    }
                },
            ),
        ]
    return statements


# GuardDuty tags the VPC endpoint and security group it creates for runtime monitoring.
GUARDDUTY_TAG = "GuardDutyManaged"


class NightlyRecreate(Construct):
    """A scheduled CodeBuild run on the test environment: `scripts recreate` (teardown, deploy),
    `verify`, then `bench compare`, whose report goes to ``reports`` under ``nightly-reports/``;
    a failure (a missed threshold included) fails the run and says so on the test environment's
    alert topic. Failures show drift and recreate problems before a release."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        test_config: AppConfig,
        reports: s3.IBucket,
    ) -> None:
        super().__init__(scope, id)
        settings = config.pipeline
        topic = alert_topic_arn(test_config)
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
            environment_variables={
                REPORT_BUCKET: codebuild.BuildEnvironmentVariable(value=reports.bucket_name),
                ALERT_TOPIC: codebuild.BuildEnvironmentVariable(value=topic or ""),
            },
            timeout=Duration.hours(8),
            logging=codebuild.LoggingOptions(
                cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=log_group)
            ),
            build_spec=codebuild.BuildSpec.from_object(
                {
                    "version": "0.2",
                    "phases": {
                        "install": {
                            "runtime-versions": RUNTIME_VERSIONS,
                            "commands": tool_install_commands(
                                kubectl_version=kubectl_version_for(test_config)
                            ),
                        },
                        "build": {"commands": nightly_commands(test_config)},
                        # Runs after a failed build phase too; the build stays failed.
                        "post_build": {"commands": nightly_report_commands(topic is not None)},
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
        stack_names = [stack_name(test_config, s) for s in ENVIRONMENT_STACKS]
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
        for statement in _report_statements(reports, test_config, topic):
            role.add_to_principal_policy(statement)
        # The report's object key pattern (a token ARN + prefix) is written in full above.
        acknowledge(
            role,
            "AwsSolutions-IAM5",
            "The nightly report goes under one prefix of the artifacts bucket, one object per "
            "file; the alert topic's key is created with the observability stack each night, so "
            "its id is unknown: the statement holds only for SNS and that topic's context.",
            f"Resource::<{_logical(reports)}.Arn>/{REPORT_PREFIX}/*",
            f"Resource::arn:aws:kms:{test_config.region}:{test_config.account}:key/*",
        )
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
