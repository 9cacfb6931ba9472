"""The delivery pipeline: deployed once per account, it deploys the test environment, verifies it,
waits for a manual approval and deploys the environment whose config defines it (prod).

Self-mutating CDK Pipelines: a change to this file reaches the pipeline through its own run.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import DefaultStackSynthesizer, Environment, RemovalPolicy, Stack, Stage, pipelines
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.config import AppConfig
from infra.constructs.buckets import SecureBucket
from infra.constructs.pipeline import (
    BUILD_IMAGE,
    GitHubDeployRole,
    NightlyRecreate,
    VerifyRole,
    kubectl_version_for,
    tool_install_commands,
)
from infra.nag import acknowledge_codebuild_grants
from stacks.composition import EnvironmentStacks, compose


class EnvironmentStage(Stage):
    """One environment's stacks, as a pipeline stage (same stack names as a CLI deploy)."""

    def __init__(self, scope: Construct, id: str, *, config: AppConfig) -> None:
        super().__init__(scope, id, env=Environment(account=config.account, region=config.region))
        self.stacks: EnvironmentStacks = compose(
            self, config, synthesizer=bootstrap_synthesizer(config)
        )


def bootstrap_synthesizer(config: AppConfig) -> DefaultStackSynthesizer:
    """The default CDK bootstrap roles, spelled out for the known account and region.

    The default synthesizer writes them as Fn::Join over AWS::Partition, which CodePipeline's
    action configuration then carries (cfn-lint E3703); plain ARNs are the same roles.
    """
    arn = f"arn:{partition_of(config.region)}:iam::{config.account}:role/cdk-hnb659fds"
    suffix = f"{config.account}-{config.region}"
    return DefaultStackSynthesizer(
        deploy_role_arn=f"{arn}-deploy-role-{suffix}",
        cloud_formation_execution_role=f"{arn}-cfn-exec-role-{suffix}",
        file_asset_publishing_role_arn=f"{arn}-file-publishing-role-{suffix}",
        image_asset_publishing_role_arn=f"{arn}-image-publishing-role-{suffix}",
        lookup_role_arn=f"{arn}-lookup-role-{suffix}",
    )


def partition_of(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def synth_commands(test_env: str, prod_env: str) -> list[str]:
    """The README's commands, then the pipeline's own assembly (what the pipeline deploys)."""
    return [
        "make test",
        f"make synth ENV={test_env}",
        f"make synth ENV={prod_env}",
        f"make chart ENV={test_env}",
        f"make chart ENV={prod_env}",
        f"make pipeline-synth ENV={prod_env}",
    ]


class PipelineStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        test_config: AppConfig,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        settings = config.pipeline
        assert settings.connection_arn and settings.repository  # checked by the config model
        source = pipelines.CodePipelineSource.connection(
            settings.repository, settings.branch, connection_arn=settings.connection_arn
        )
        self.synth = pipelines.ShellStep(
            "Synth",
            input=source,
            install_commands=tool_install_commands(),
            commands=synth_commands(test_config.environment, config.environment),
            primary_output_directory="cdk.out",
        )
        # Artifacts (they include the synthesized templates): own KMS key, access-logged.
        artifacts_key = kms.Key(
            self, "ArtifactsKey", enable_key_rotation=True, removal_policy=RemovalPolicy.DESTROY
        )
        self.artifacts = SecureBucket(self, "Artifacts", retain=False, encryption_key=artifacts_key)
        self.pipeline = pipelines.CodePipeline(
            self,
            "Pipeline",
            pipeline_name=f"{config.project}-delivery",
            synth=self.synth,
            self_mutation=True,
            artifact_bucket=self.artifacts.bucket,
            code_build_defaults=pipelines.CodeBuildOptions(
                build_environment={"build_image": BUILD_IMAGE}
            ),
        )
        self.test_stage = EnvironmentStage(self, "Test", config=test_config)
        post: list[pipelines.Step] = []
        # Roles of build steps: CodeBuild adds its artifact/report/log grants to them.
        build_roles: list[iam.IRole] = []
        if settings.verify_test_environment:
            self.verify_role = VerifyRole(self, "VerifyRole", config=test_config)
            post.append(
                pipelines.CodeBuildStep(
                    "VerifyTest",
                    install_commands=tool_install_commands(
                        kubectl_version=kubectl_version_for(test_config)
                    ),
                    commands=[
                        "make install",
                        f"aws eks update-kubeconfig --name {test_config.eks.cluster_name} "
                        f"--region {test_config.region}",
                        f".venv/bin/python -m scripts verify --env {test_config.environment}",
                    ],
                    role=self.verify_role.role,
                )
            )
            build_roles.append(self.verify_role.role)
        self.pipeline.add_stage(self.test_stage, post=post)
        self.prod_stage = EnvironmentStage(self, "Prod", config=config)
        self.pipeline.add_stage(
            self.prod_stage,
            pre=[
                pipelines.ManualApprovalStep(
                    "PromoteToProd",
                    comment=f"{test_config.environment} deployed and verified; deploy "
                    f"{config.environment}?",
                )
            ],
        )
        if settings.nightly_recreate:
            self.nightly = NightlyRecreate(
                self, "NightlyRecreate", config=config, test_config=test_config
            )
            build_roles.append(self.nightly.role)
        if settings.github_actions.deploy_role_name:
            self.github = GitHubDeployRole(self, "GitHubDeploy", config=config)
        self.pipeline.build_pipeline()
        for role in build_roles:
            acknowledge_codebuild_grants(role)
