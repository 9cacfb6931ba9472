"""Entry points for ``aws_cdk.custom_resources.Provider``: ``on_event`` and ``is_complete``.

on_event validates, records what Delete must restore (in the physical id, see ``physical_id``)
and takes the first step; is_complete repeats the step on every poll until the cluster is
InService with the desired config, or fails with a clear message before CloudFormation's own
one-hour custom-resource timeout would (the handler's deadline comes from the construct).
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from .client import require_tiered_storage_api, sagemaker_client
from .cluster import RetryLater, Step, converge, describe, missing
from .errors import HandlerError
from .physical_id import decode, encode
from .properties import TieredStorage, parse_properties

log = logging.getLogger(__name__)
logging.getLogger().setLevel(logging.INFO)

# on_event's answer is merged into every is_complete event (Provider contract), so the start time
# travels with the request; is_complete itself is stateless.
STARTED_AT = "TieredStorageStartedAt"
DEADLINE_ENV = "TIERED_STORAGE_DEADLINE_SECONDS"
DEFAULT_DEADLINE_SECONDS = 50 * 60


def on_event(
    event: dict[str, Any], context: Any, *, client: Any = None, now: float | None = None
) -> dict[str, Any]:
    client = sagemaker_client() if client is None else client
    started = time.time() if now is None else now
    kind = event["RequestType"]
    log.info("%s %s", kind, _summary(event))
    if kind == "Delete":
        # CloudFormation sends the physical id with every Delete and Update, the properties
        # with every Create and Update, and the logical id always.
        physical_id = event["PhysicalResourceId"]
        record = decode(physical_id)
        if record is None or record.restore_to is None:
            log.info("Delete: nothing to restore for %r", physical_id)
        else:
            require_tiered_storage_api(client)
            _step(client, record.cluster_name, record.restore_to, deleting=True, event=event)
        # Delete must answer with the id it was given.
        return {"PhysicalResourceId": physical_id, STARTED_AT: started}

    request = parse_properties(event["ResourceProperties"])
    require_tiered_storage_api(client)
    physical_id = event["PhysicalResourceId"] if kind == "Update" else ""
    old = decode(physical_id)
    desc = None
    if old is None or old.cluster_name != request.cluster_name:
        # Create (or a new target cluster): record what the cluster has before any change.
        desc = _describe_or_fail(client, request.cluster_name)
        physical_id = encode(
            request.cluster_name,
            desc.get("TieredStorageConfig"),
            restore=request.restore_on_delete,
        )
    _step(client, request.cluster_name, request.desired, deleting=False, event=event, desc=desc)
    return {"PhysicalResourceId": physical_id, STARTED_AT: started}


def is_complete(
    event: dict[str, Any], context: Any, *, client: Any = None, now: float | None = None
) -> dict[str, Any]:
    client = sagemaker_client() if client is None else client
    now = time.time() if now is None else now
    if event["RequestType"] == "Delete":
        record = decode(event["PhysicalResourceId"])
        if record is None or record.restore_to is None:
            return {"IsComplete": True}
        cluster, target, deleting = record.cluster_name, record.restore_to, True
    else:
        request = parse_properties(event["ResourceProperties"])
        cluster, target, deleting = request.cluster_name, request.desired, False
    step = _step(client, cluster, target, deleting=deleting, event=event)
    if step.done:
        return {"IsComplete": True}
    elapsed = now - float(event[STARTED_AT])
    if elapsed >= deadline_seconds():
        message = (
            f"Timed out after {elapsed / 60:.0f} minutes waiting for Tiered Storage {target} on "
            f"HyperPod cluster {cluster!r}; last state: {step.reason}. Check: `aws sagemaker "
            f"describe-cluster --cluster-name {cluster} --query "
            "'[ClusterStatus,TieredStorageConfig,FailureMessage]'`, then deploy again once it "
            "is InService."
        )
        error = HandlerError(message)
        raise _delete_hint(error, event, target) if deleting else error
    return {"IsComplete": False}


def deadline_seconds() -> float:
    return float(os.environ.get(DEADLINE_ENV, DEFAULT_DEADLINE_SECONDS))


def _step(
    client: Any,
    cluster: str,
    target: TieredStorage,
    *,
    deleting: bool,
    event: dict[str, Any],
    desc: dict[str, Any] | None = None,
) -> Step:
    try:
        step = converge(client, cluster, target, deleting=deleting, desc=desc)
    except RetryLater as e:
        step = Step(False, f"{e}; trying again on the next poll")
    except HandlerError as e:
        if deleting:
            raise _delete_hint(e, event, target) from e
        raise
    log.info("%s: %s", cluster, step.reason)
    return step


def _describe_or_fail(client: Any, cluster: str) -> dict[str, Any]:
    try:
        desc = describe(client, cluster)
    except RetryLater as e:
        raise HandlerError(f"{e} (after retries with backoff); nothing was changed") from e
    if desc is None:
        raise missing(cluster)
    return desc


def _delete_hint(error: HandlerError, event: dict[str, Any], target: TieredStorage) -> HandlerError:
    logical_id = event["LogicalResourceId"]
    return HandlerError(
        f"{error} Tiered Storage was not restored to {target}. To finish the delete without "
        f"restoring, retry it with `--retain-resources {logical_id}` and set the config by hand "
        "(README.md, Tiered Storage: recovery)."
    )


def _summary(event: dict[str, Any]) -> dict[str, Any]:
    keys = ("LogicalResourceId", "PhysicalResourceId", "ResourceProperties")
    return {k: event[k] for k in keys if k in event}
