"""Tiered Storage handler against moto, plus canaries on what moto lacks.

Double: moto 5.2 (mock_aws) for SageMaker HyperPod clusters. moto has no UpdateCluster, drops
NodeRecovery and TieredStorageConfig from CreateCluster, rejects ml.g6e.* and answers a missing
cluster with ValidationException. The ``moto_extended`` fixture EXTENDS moto (test-only
monkeypatch): it keeps NodeRecovery/TieredStorageConfig on the cluster, shows them in
DescribeCluster and adds UpdateCluster, which, like the real API, rejects TieredStorageConfig
without NodeRecovery. The canary tests fail as soon as a moto upgrade changes any of this; then
drop the extension and test against moto itself. Exact request shapes are pinned with botocore's
Stubber in test_index.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.core.responses import ActionResult
from moto.sagemaker import models as moto_models
from moto.sagemaker.exceptions import ValidationError
from moto.sagemaker.responses import SageMakerResponse

from infra.custom_resources.tiered_storage.handler import index
from infra.custom_resources.tiered_storage.handler.errors import HandlerError
from tests.doubles.tiered_storage_events import CLUSTER, event, properties

REGION = "us-west-2"


def instance_groups(instance_type: str = "ml.g5.4xlarge") -> list[dict[str, Any]]:
    return [
        {
            "InstanceGroupName": "gpu",
            "InstanceType": instance_type,
            "InstanceCount": 1,
            "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-lc/", "OnCreate": "on_create.sh"},
            "ExecutionRole": "arn:aws:iam::123456789012:role/hyperpod-nodes",
            "ThreadsPerCore": 1,
        }
    ]


def create_cluster(client: Any, **extra: Any) -> None:
    client.create_cluster(
        ClusterName=CLUSTER,
        InstanceGroups=instance_groups(extra.pop("instance_type", "ml.g5.4xlarge")),
        VpcConfig={"SecurityGroupIds": ["sg-0123456789abcdef0"], "Subnets": ["subnet-01234567"]},
        **extra,
    )


@pytest.fixture
def sagemaker(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        yield boto3.client("sagemaker", region_name=REGION)


# --- canaries: fail when moto changes, so the extension below can be removed ----------------------


def test_canary_moto_has_no_update_cluster(sagemaker: Any) -> None:
    assert not hasattr(SageMakerResponse, "update_cluster")
    with pytest.raises(NotImplementedError, match="update_cluster"):
        sagemaker.update_cluster(ClusterName=CLUSTER, NodeRecovery="Automatic")


def test_canary_moto_drops_node_recovery_and_tiered_storage(sagemaker: Any) -> None:
    create_cluster(
        sagemaker,
        NodeRecovery="Automatic",
        TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20},
    )
    described = sagemaker.describe_cluster(ClusterName=CLUSTER)
    assert "NodeRecovery" not in described
    assert "TieredStorageConfig" not in described


def test_canary_moto_rejects_g6e(sagemaker: Any) -> None:
    with pytest.raises(ClientError, match=r"ml\.g6e\.4xlarge"):
        create_cluster(sagemaker, instance_type="ml.g6e.4xlarge")


def test_canary_moto_reports_a_missing_cluster_as_validation_error(sagemaker: Any) -> None:
    with pytest.raises(ClientError) as raised:
        sagemaker.describe_cluster(ClusterName="does-not-exist")
    assert raised.value.response["Error"]["Code"] == "ValidationException"


# --- moto as it is --------------------------------------------------------------------------------


def test_missing_cluster_on_create_fails_clearly(sagemaker: Any) -> None:
    with pytest.raises(HandlerError, match=f"HyperPod cluster '{CLUSTER}' not found"):
        index.on_event(event("Create", properties()), None, client=sagemaker)


def test_missing_cluster_on_delete_succeeds(sagemaker: Any) -> None:
    physical_id = f"tiered-storage:{CLUSTER}:restore:Disable"
    delete = event("Delete", properties(restore_on_delete="true"), physical_id)
    result = index.on_event(delete, None, client=sagemaker)
    assert result["PhysicalResourceId"] == physical_id
    assert index.is_complete({**delete, **result}, None, client=sagemaker)["IsComplete"]


# --- moto extended with UpdateCluster -------------------------------------------------------------


def _cluster(response: SageMakerResponse, name: str) -> Any:
    cluster = response.sagemaker_backend.clusters.get(name)
    if cluster is None:
        raise ValidationError(message=f"Could not find cluster '{name}'.")
    return cluster


@pytest.fixture
def moto_extended(sagemaker: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """moto plus NodeRecovery/TieredStorageConfig and UpdateCluster (see the module docstring)."""
    original_create = SageMakerResponse.create_cluster
    original_describe = moto_models.Cluster.describe
    calls: list[dict[str, Any]] = []

    def create_cluster(self: SageMakerResponse) -> ActionResult:
        result = original_create(self)
        cluster = _cluster(self, self._get_param("ClusterName"))
        cluster.node_recovery = self._get_param("NodeRecovery")
        cluster.tiered_storage = self._get_param("TieredStorageConfig")
        return result

    def describe(self: Any) -> dict[str, Any]:
        answer = original_describe(self)
        for key, attribute in (
            ("NodeRecovery", "node_recovery"),
            ("TieredStorageConfig", "tiered_storage"),
        ):
            if getattr(self, attribute, None) is not None:
                answer[key] = getattr(self, attribute)
        return answer

    def update_cluster(self: SageMakerResponse) -> ActionResult:
        cluster = _cluster(self, self._get_param("ClusterName"))
        tiered = self._get_param("TieredStorageConfig")
        node_recovery = self._get_param("NodeRecovery")
        calls.append({"TieredStorageConfig": tiered, "NodeRecovery": node_recovery})
        if tiered is not None and node_recovery is None:
            # The real API's quirk this product exists to handle.
            raise ValidationError(message="NodeRecovery is required with TieredStorageConfig.")
        cluster.tiered_storage = tiered if tiered is not None else cluster.tiered_storage
        cluster.node_recovery = node_recovery or cluster.node_recovery
        return ActionResult({"ClusterArn": cluster.arn})

    monkeypatch.setattr(SageMakerResponse, "create_cluster", create_cluster)
    monkeypatch.setattr(SageMakerResponse, "update_cluster", update_cluster, raising=False)
    monkeypatch.setattr(moto_models.Cluster, "describe", describe)
    sagemaker.update_calls = calls
    return sagemaker


def test_existing_cluster_lifecycle_enables_changes_and_restores(moto_extended: Any) -> None:
    client = moto_extended
    create_cluster(client, NodeRecovery="Automatic")  # no TieredStorageConfig before the app
    props = properties(restore_on_delete="true")

    create = event("Create", props)
    result = index.on_event(create, None, client=client)
    physical_id = result["PhysicalResourceId"]
    assert physical_id == f"tiered-storage:{CLUSTER}:restore:unset"
    assert index.is_complete({**create, **result}, None, client=client)["IsComplete"]
    assert client.describe_cluster(ClusterName=CLUSTER)["TieredStorageConfig"] == {
        "Mode": "Enable",
        "InstanceMemoryAllocationPercentage": 20,
    }

    update = event(
        "Update",
        properties(restore_on_delete="true", percentage="50"),
        physical_id,
        old_props=props,
    )
    result = index.on_event(update, None, client=client)
    assert result["PhysicalResourceId"] == physical_id
    assert index.is_complete({**update, **result}, None, client=client)["IsComplete"]
    described = client.describe_cluster(ClusterName=CLUSTER)
    assert described["TieredStorageConfig"]["InstanceMemoryAllocationPercentage"] == 50

    # Re-running with nothing to change makes no UpdateCluster call.
    calls_before = len(client.update_calls)
    again = event(
        "Update",
        properties(restore_on_delete="true", percentage="50", groups_hash="h2"),
        physical_id,
        old_props=props,
    )
    index.on_event(again, None, client=client)
    assert len(client.update_calls) == calls_before

    delete = event("Delete", props, physical_id)
    result = index.on_event(delete, None, client=client)
    assert index.is_complete({**delete, **result}, None, client=client)["IsComplete"]
    assert client.describe_cluster(ClusterName=CLUSTER)["TieredStorageConfig"] == {
        "Mode": "Disable"
    }
    assert all(call["NodeRecovery"] == "Automatic" for call in client.update_calls)
    assert len(client.update_calls) == 3  # enable, 50 %, restore


def test_created_cluster_delete_leaves_the_cluster_alone(moto_extended: Any) -> None:
    client = moto_extended
    create_cluster(client, NodeRecovery="None")
    create = event("Create", properties())
    result = index.on_event(create, None, client=client)
    delete = event("Delete", properties(), result["PhysicalResourceId"])
    index.on_event(delete, None, client=client)
    assert client.describe_cluster(ClusterName=CLUSTER)["TieredStorageConfig"]["Mode"] == "Enable"
    assert client.update_calls == [
        {
            "TieredStorageConfig": {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20},
            "NodeRecovery": "None",
        }
    ]
