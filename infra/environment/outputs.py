"""A deployed stack's outputs, read with CloudFormation ``DescribeStacks`` for what needs them
without CDK (``make manifests`` writing plain YAML). A failed read is one reason and one fix,
which each caller words into its own one-line error.

Light on purpose: boto3 and botocore load only when a lookup runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infra.config import AppConfig


class OutputsUnreadable(Exception):
    """Why the outputs could not be read, and the fix."""

    def __init__(self, reason: str, fix: str) -> None:
        super().__init__(f"{reason}; fix: {fix}")
        self.reason = reason
        self.fix = fix


def stack_outputs(
    config: AppConfig, stack: str, deploy_fix: str, cloudformation: Any = None
) -> dict[str, str]:
    """Output key to value of ``stack``; ``deploy_fix`` is the fix when it does not exist.
    ``cloudformation``: a boto3 client (default: one for the environment's region)."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    if cloudformation is None:
        import boto3

        cloudformation = boto3.client("cloudformation", region_name=config.region)
    try:
        stacks = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except NoCredentialsError:
        raise OutputsUnreadable(
            "no AWS credentials",
            f"sign in to account {config.account} (AWS_PROFILE or `aws sso login`)",
        ) from None
    except ClientError as exc:
        error = exc.response.get("Error", {})
        if "does not exist" in str(error.get("Message", "")):
            raise OutputsUnreadable("the stack does not exist", deploy_fix) from None
        raise OutputsUnreadable(
            f"DescribeStacks failed: {error.get('Code')}: {error.get('Message')}",
            f"allow cloudformation:DescribeStacks on {stack}",
        ) from None
    except BotoCoreError as exc:
        raise OutputsUnreadable(f"DescribeStacks failed: {exc}", "check the network") from None
    return {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs", [])}
