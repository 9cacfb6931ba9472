"""Entry points for ``aws_cdk.custom_resources.Provider``: ``on_event`` and ``is_complete``.

Create and Update read the cluster once; ``is_complete`` polls until every instance group has
its target count of Running nodes, or fails with a message naming the groups, counts and statuses
before the Provider's own total timeout would. Delete does nothing and always succeeds.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import boto3
from botocore.config import Config

from .nodes import GateError, RetryLater, inspect_command, read_state

log = logging.getLogger(__name__)
logging.getLogger().setLevel(logging.INFO)

# on_event's answer is merged into every is_complete event (Provider contract).
STARTED_AT = "NodeGateStartedAt"
DEADLINE_ENV = "NODE_GATE_DEADLINE_SECONDS"
DEFAULT_DEADLINE_SECONDS = 40 * 60
RETRIES = {"mode": "standard", "max_attempts": 8}


def sagemaker_client() -> Any:
    return boto3.client(
        "sagemaker", config=Config(retries=RETRIES, connect_timeout=10, read_timeout=30)
    )


def on_event(
    event: dict[str, Any], context: Any, *, client: Any = None, now: float | None = None
) -> dict[str, Any]:
    started = time.time() if now is None else now
    kind = event["RequestType"]
    # CloudFormation sends ResourceProperties with every request, PhysicalResourceId with Delete.
    props = event["ResourceProperties"]
    log.info("%s %s", kind, props)
    if kind == "Delete":
        # Nothing was created: the gate only reads. Answer with the id it was given.
        return {"PhysicalResourceId": event["PhysicalResourceId"], STARTED_AT: started}
    cluster = _cluster(props)
    return {"PhysicalResourceId": f"nodes-ready:{cluster}", STARTED_AT: started}


def is_complete(
    event: dict[str, Any], context: Any, *, client: Any = None, now: float | None = None
) -> dict[str, Any]:
    if event["RequestType"] == "Delete":
        return {"IsComplete": True}
    client = sagemaker_client() if client is None else client
    now = time.time() if now is None else now
    cluster = _cluster(event["ResourceProperties"])
    try:
        state = read_state(client, cluster)
    except RetryLater as e:
        log.info("%s: %s; trying again on the next poll", cluster, e)
        last = f"{e} (a transient error; retried on every poll)"
    else:
        log.info("%s: %s", cluster, state)
        if state.ready:
            return {"IsComplete": True}
        last = str(state)
    # on_event's answer, with STARTED_AT, is merged into every is_complete event.
    elapsed = now - float(event[STARTED_AT])
    if elapsed >= deadline_seconds():
        raise GateError(
            f"Timed out after {elapsed / 60:.0f} minutes waiting for the nodes of HyperPod "
            f"cluster {cluster!r} to be Running; last state: {last}. Inspect: "
            f"{inspect_command(cluster)} (InstanceStatus.Message says why a node is not "
            "Running), then deploy again."
        )
    return {"IsComplete": False}


def deadline_seconds() -> float:
    return float(os.environ.get(DEADLINE_ENV, DEFAULT_DEADLINE_SECONDS))


def _cluster(props: dict[str, Any]) -> str:
    cluster = str(props.get("ClusterName", ""))
    if not cluster:
        raise GateError("ClusterName is empty: the node gate needs the HyperPod cluster's name")
    return cluster
