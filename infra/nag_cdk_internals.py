"""Acknowledge cdk-nag findings on resources that CDK itself generates and configures.

The kubectl provider, BucketDeployment, the custom-resource Provider framework and the
auto-delete-objects handler are CDK-owned singletons: their runtimes, managed policies and
wildcards are CDK's choices, not this project's. Each finding is acknowledged explicitly (cdk-nag 3
has no prefix matching), with the reason, only on constructs under these CDK-owned paths; a
finding on any of the project's own resources still fails the synth.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnResource, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_

from infra.nag import acknowledge, render_intrinsic

CDK_OWNED = (
    "/KubectlProvider/",
    "/Custom::CDKBucketDeployment",
    "/Custom::S3AutoDeleteObjectsCustomResourceProvider",
    "/framework-onEvent/",
    "/framework-isComplete/",
    "/framework-onTimeout/",
    "/waiter-state-machine/",
)
REASON = "CDK-managed resource ({what}); its configuration is set by aws-cdk-lib, not this app."


def acknowledge_cdk_internals(stack: Stack) -> None:
    for construct in stack.node.find_all():
        path = "/" + construct.node.path + "/"
        if not any(marker in path for marker in CDK_OWNED):
            continue
        if isinstance(construct, lambda_.CfnFunction):
            acknowledge(construct, "AwsSolutions-L1", REASON.format(what="Lambda runtime"))
        elif isinstance(construct, iam.CfnRole):
            for arn in stack.resolve(construct.managed_policy_arns) or []:
                acknowledge(
                    construct,
                    "AwsSolutions-IAM4",
                    REASON.format(what="managed policy"),
                    f"Policy::{render_intrinsic(arn)}",
                )
        elif isinstance(construct, iam.CfnPolicy):
            for finding in _wildcard_findings(stack.resolve(construct.policy_document)):
                acknowledge(construct, "AwsSolutions-IAM5", REASON.format(what="wildcard"), finding)
        elif isinstance(construct, CfnResource) and construct.cfn_resource_type == "AWS::IAM::Role":
            # The auto-delete provider is a raw CfnResource role with inline policies.
            props = stack.resolve(construct._cfn_properties)
            for arn in props.get("ManagedPolicyArns", []):
                acknowledge(
                    construct,
                    "AwsSolutions-IAM4",
                    REASON.format(what="managed policy"),
                    f"Policy::{render_intrinsic(arn)}",
                )


def _wildcard_findings(document: dict[str, Any]) -> list[str]:
    findings: list[str] = []
    for statement in document.get("Statement", []):
        for key, prefix in (("Action", "Action::"), ("Resource", "Resource::")):
            values = statement.get(key, [])
            for value in values if isinstance(values, list) else [values]:
                rendered = render_intrinsic(value)
                if "*" in rendered:
                    findings.append(prefix + rendered)
    return findings
