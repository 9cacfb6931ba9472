"""The Provider framework as this repository's long-wait custom resources use it."""

from __future__ import annotations

from collections.abc import Callable

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import custom_resources as cr
from constructs import Construct

from infra.nag import acknowledge


def polling_provider(
    scope: Construct,
    *,
    on_event: lambda_.IFunction,
    is_complete: lambda_.IFunction,
    query_interval: Duration,
    total_timeout: Duration,
    log_group: Callable[[str], logs.ILogGroup],
) -> cr.Provider:
    """``Provider`` with on_event/is_complete, a bounded total timeout and both of its logs kept:
    the framework's (``FrameworkLogs``) and the waiter state machine's (``WaiterLogs``), which is
    where a stuck poll is diagnosed and which CDK leaves off by default."""
    provider = cr.Provider(
        scope,
        "Provider",
        on_event_handler=on_event,
        is_complete_handler=is_complete,
        query_interval=query_interval,
        total_timeout=total_timeout,
        log_group=log_group("FrameworkLogs"),
        disable_waiter_state_machine_logging=False,
        waiter_state_machine_log_options=cr.LogOptions(
            destination=log_group("WaiterLogs"), level=sfn.LogLevel.ALL
        ),
    )
    acknowledge(
        provider,
        "AwsSolutions-SF2",
        "The Provider's waiter state machine has no X-Ray option; it only polls is_complete, "
        "and its execution log (level ALL) is kept.",
    )
    return provider
