"""cdk-nag acknowledgments for findings that are required by AWS, each with its reason."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, findings: dict[str, str]) -> None:
    """``findings`` maps a finding id as cdk-nag prints it (``AwsSolutions-IAM5[...]``) to why it
    is acceptable. The acknowledgment applies to ``scope`` and its children only."""
    Validations.of(scope).acknowledge(
        *(Acknowledgment(id=f"AwsSolutions::{rule}", reason=why) for rule, why in findings.items())
    )


def managed_policy(name: str) -> str:
    return f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{name}]"


def wildcard(resource: str) -> str:
    return f"AwsSolutions-IAM5[Resource::{resource}]"
