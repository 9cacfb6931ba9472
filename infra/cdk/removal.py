"""What happens to stateful resources on destroy, per environment."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_logs as logs

from infra.config import AppConfig
from infra.config.fields import LOG_RETENTION_DAYS


def removal_policy(config: AppConfig) -> RemovalPolicy:
    """RETAIN for environments that keep state (prod), DESTROY for those that come and go."""
    return RemovalPolicy.RETAIN if config.retain_stateful_resources else RemovalPolicy.DESTROY


def retention(days: int) -> logs.RetentionDays:
    """The RetentionDays member for a day count the config model already validated.

    jsii enum values are member names, so the members are paired with CloudWatch's day counts
    (both lists are in ascending order; INFINITE is left out).
    """
    members = [m for m in logs.RetentionDays if m is not logs.RetentionDays.INFINITE]
    return dict(zip(LOG_RETENTION_DAYS, members, strict=True))[days]
