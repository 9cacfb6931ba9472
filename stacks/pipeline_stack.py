"""The delivery pipeline's stack, deployed once per account: the pipeline
(infra/constructs/delivery_pipeline.py) and the stages it deploys, each one environment's stacks
as a CLI deploy composes them.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import DefaultStackSynthesizer, Environment, Stack, Stage
from constructs import Construct

from infra.config import AppConfig
from infra.config.rules_pipeline import check_pipeline_reaches_test
from infra.constructs.delivery_pipeline import DeliveryPipeline
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
        check_pipeline_reaches_test(config, test_config)
        self.test_stage = EnvironmentStage(self, "Test", config=test_config)
        self.prod_stage = EnvironmentStage(self, "Prod", config=config)
        # Id "Default": CDK leaves that path component out of logical IDs, so the pipeline's
        # resources keep the IDs they had when this stack built them itself.
        self.delivery = DeliveryPipeline(
            self,
            "Default",
            config=config,
            test_config=test_config,
            test_stage=self.test_stage,
            prod_stage=self.prod_stage,
        )
