"""The delivery pipeline: it deploys the test environment, verifies it, waits for a manual
approval and deploys the environment whose config defines it (prod).

Self-mutating CDK Pipelines: a change to the app reaches the pipeline through its own run. The
environments' stages are built by the pipeline stack (stacks/pipeline_stack.py) and handed in.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy, Stage, pipelines
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.cdk.nag import acknowledge_codebuild_grants
from infra.config import AppConfig
from infra.constructs.buckets import SecureBucket
from infra.constructs.pipeline import (
    BUILD_IMAGE,
    RUNTIME_VERSIONS,
    GitHubDeployRole,
    NightlyRecreate,
    VerifyRole,
    kubectl_version_for,
    tool_install_commands,
)


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


class DeliveryPipeline(Construct):
    """Source, synth, the test stage (verified when ``pipeline.verify_test_environment``), the
    approval, the prod stage; the nightly recreate and GitHub's deploy role when configured."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        test_config: AppConfig,
        test_stage: Stage,
        prod_stage: Stage,
    ) -> None:
        super().__init__(scope, id)
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
                build_environment={"build_image": BUILD_IMAGE},
                partial_build_spec=codebuild.BuildSpec.from_object(
                    {"phases": {"install": {"runtime-versions": RUNTIME_VERSIONS}}}
                ),
            ),
        )
        post: list[pipelines.Step] = []
        # Roles of build steps: CodeBuild adds its artifact/report/log grants to them.
        build_roles: list[iam.IRole] = []
        self.verify_role: VerifyRole | None = None
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
        self.pipeline.add_stage(test_stage, post=post)
        self.pipeline.add_stage(
            prod_stage,
            pre=[
                pipelines.ManualApprovalStep(
                    "PromoteToProd",
                    comment=f"{test_config.environment} deployed and verified; deploy "
                    f"{config.environment}?",
                )
            ],
        )
        self.nightly: NightlyRecreate | None = None
        if settings.nightly_recreate:
            self.nightly = NightlyRecreate(
                self,
                "NightlyRecreate",
                config=config,
                test_config=test_config,
                reports=self.artifacts.bucket,
            )
            build_roles.append(self.nightly.role)
        self.github: GitHubDeployRole | None = None
        if settings.github_actions.deploy_role_name:
            self.github = GitHubDeployRole(self, "GitHubDeploy", config=config)
        self.pipeline.build_pipeline()
        for role in build_roles:
            acknowledge_codebuild_grants(role)
