"""CloudFormation-shaped events for the Tiered Storage handler (every property is a string)."""

from __future__ import annotations

from typing import Any

CLUSTER = "hp-test"
CLUSTER_ARN = "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef123456"
LOGICAL_ID = "TieredStorage8649EEDD"


def properties(
    *,
    mode: str = "Enable",
    percentage: str = "20",
    restore_on_delete: str = "false",
    cluster: str = CLUSTER,
    groups_hash: str = "h1",
) -> dict[str, Any]:
    return {
        "ServiceToken": "arn:aws:lambda:us-west-2:111122223333:function:framework-onEvent",
        "ClusterName": cluster,
        "Mode": mode,
        "InstanceMemoryAllocationPercentage": percentage,
        "InstanceGroupsHash": groups_hash,
        "RestoreOnDelete": restore_on_delete,
    }


def event(
    request_type: str,
    props: dict[str, Any],
    physical_id: str | None = None,
    old_props: dict[str, Any] | None = None,
) -> dict[str, Any]:
    e: dict[str, Any] = {
        "RequestType": request_type,
        "ServiceToken": props["ServiceToken"],
        "ResponseURL": "https://cloudformation-custom-resource-response.example/...",
        "StackId": "arn:aws:cloudformation:us-west-2:111122223333:stack/hyperpod/guid",
        "RequestId": "5d4f3c2b-0000-4000-8000-000000000001",
        "LogicalResourceId": LOGICAL_ID,
        "ResourceType": "Custom::HyperPodTieredStorage",
        "ResourceProperties": props,
    }
    if physical_id is not None:
        e["PhysicalResourceId"] = physical_id
    if old_props is not None:
        e["OldResourceProperties"] = old_props
    return e


def describe(
    *,
    status: str = "InService",
    tiered: dict[str, Any] | None = None,
    node_recovery: str | None = "Automatic",
    failure: str | None = None,
    cluster: str = CLUSTER,
) -> dict[str, Any]:
    """A DescribeCluster answer (Stubber checks it against the real output shape)."""
    answer: dict[str, Any] = {
        "ClusterArn": CLUSTER_ARN,
        "ClusterName": cluster,
        "ClusterStatus": status,
        "InstanceGroups": [
            {"InstanceGroupName": "gpu", "InstanceType": "ml.g6e.4xlarge", "CurrentCount": 2}
        ],
    }
    if tiered is not None:
        answer["TieredStorageConfig"] = tiered
    if node_recovery is not None:
        answer["NodeRecovery"] = node_recovery
    if failure is not None:
        answer["FailureMessage"] = failure
    return answer
