"""Read the cluster and move its TieredStorageConfig one step towards a target.

``converge`` is called by on_event (first step) and by every is_complete poll, so a step that could
not run (cluster busy, ConflictException, throttling) is simply tried again on the next poll.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from .errors import HandlerError
from .properties import TieredStorage

log = logging.getLogger(__name__)

# Errors that mean "not now": the next poll tries again (botocore's standard retry mode has
# already retried throttling inside the call with backoff; ConflictException it never retries).
RETRY_LATER = frozenset(
    {
        "ConflictException",
        "ThrottlingException",
        "Throttling",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ServiceUnavailable",
        "InternalFailure",
    }
)
# The API model declares ResourceNotFound for DescribeCluster; some endpoints (and moto) answer a
# missing cluster with a ValidationException saying so instead.
_NOT_FOUND_TEXT = re.compile(r"could not find|not found|does not exist", re.IGNORECASE)
CHECKS = {
    "AccessDeniedException": "the handler role allows sagemaker:{op} on this cluster's ARN "
    "(a wrong hyperpod_cluster_arn in config scopes the policy to another cluster)",
    "ValidationException": "that Tiered Storage is available for this cluster's Region and "
    "instance types, and that the same `aws sagemaker update-cluster` works by hand "
    "(README.md, Tiered Storage)",
    "ResourceLimitExceeded": "the SageMaker HyperPod quotas of the account (Service Quotas)",
}
DEFAULT_CHECK = "the cluster's events in the SageMaker console and the {op} call in CloudTrail"


@dataclass(frozen=True)
class Step:
    done: bool
    reason: str


class RetryLater(Exception):
    """A retryable AWS error; the caller reports 'not complete yet'."""


def aws_failure(op: str, cluster: str, error: ClientError) -> HandlerError:
    """The service's message verbatim, plus what to check."""
    err = error.response.get("Error", {})
    code = str(err.get("Code", "Unknown"))
    check = CHECKS.get(code, DEFAULT_CHECK).format(op=op)
    return HandlerError(
        f"SageMaker {op} on HyperPod cluster {cluster!r} failed: {code}: "
        f"{err.get('Message', '')}. Check: {check}."
    )


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def describe(client: Any, cluster: str) -> dict[str, Any] | None:
    """DescribeCluster; None when the cluster does not exist."""
    try:
        result: dict[str, Any] = client.describe_cluster(ClusterName=cluster)
        return result
    except ClientError as e:
        code = _code(e)
        message = str(e.response.get("Error", {}).get("Message", ""))
        if code == "ResourceNotFound" or (
            code == "ValidationException" and _NOT_FOUND_TEXT.search(message)
        ):
            return None
        if code in RETRY_LATER:
            raise RetryLater(f"DescribeCluster: {code}: {message}") from e
        raise aws_failure("DescribeCluster", cluster, e) from e


def missing(cluster: str) -> HandlerError:
    return HandlerError(
        f"HyperPod cluster {cluster!r} not found (DescribeCluster). Check: the cluster name in "
        "config, and that the stack deploys to the cluster's account and Region."
    )


def converge(
    client: Any,
    cluster: str,
    target: TieredStorage,
    *,
    deleting: bool = False,
    desc: dict[str, Any] | None = None,
) -> Step:
    """One step towards ``target``. Raises HandlerError on a failure that waiting cannot fix.

    ``desc`` is a DescribeCluster answer the caller already has (saves a call on Create).

    With ``deleting`` (restoring on Delete) a cluster that is gone, being deleted or Failed counts
    as done: there is nothing left to restore onto, and failing would wedge the stack's deletion.
    """
    desc = describe(client, cluster) if desc is None else desc
    if desc is None:
        if deleting:
            return Step(True, f"cluster {cluster!r} no longer exists; nothing to restore")
        raise missing(cluster)
    status = str(desc.get("ClusterStatus", ""))
    if status in ("Failed", "Deleting"):
        detail = desc.get("FailureMessage") or "(no FailureMessage)"
        if deleting:
            log.warning(
                "cluster %s is %s (%s): Tiered Storage not restored", cluster, status, detail
            )
            return Step(True, f"cluster {cluster!r} is {status}; nothing to restore")
        raise HandlerError(
            f"HyperPod cluster {cluster!r} is {status}: {detail}. Tiered Storage was not changed. "
            "Fix or recreate the cluster, then deploy again."
        )
    current = desc.get("TieredStorageConfig")
    if target.satisfied_by(current):
        if status == "InService":
            return Step(True, f"Tiered Storage is {target} and the cluster is InService")
        return Step(False, f"Tiered Storage reads back as {target}; cluster is {status}")
    if status != "InService":
        # UpdateCluster would only answer ConflictException; wait for the running operation.
        return Step(False, f"cluster is {status} (current Tiered Storage: {current}); waiting")
    node_recovery = desc.get("NodeRecovery")
    if not node_recovery:
        raise HandlerError(
            f"DescribeCluster of {cluster!r} returned no NodeRecovery, and UpdateCluster with "
            "TieredStorageConfig alone is rejected. Check: set it once with `aws sagemaker "
            f"update-cluster --cluster-name {cluster} --node-recovery Automatic` (or None)."
        )
    try:
        # NodeRecovery is sent back unchanged: UpdateCluster with TieredStorageConfig alone
        # returns ValidationException.
        client.update_cluster(
            ClusterName=cluster, TieredStorageConfig=target.to_api(), NodeRecovery=node_recovery
        )
    except ClientError as e:
        if _code(e) in RETRY_LATER:
            return Step(False, f"UpdateCluster: {_code(e)}: {e.response['Error'].get('Message')}")
        raise aws_failure("UpdateCluster", cluster, e) from e
    log.info("UpdateCluster accepted for %s: %s (was %s)", cluster, target, current)
    return Step(False, f"UpdateCluster accepted: {target}; waiting for InService")
