"""One converge step of the Tiered Storage handler, exactly: its answer and its reason for each
cluster state, what its log line says, and DescribeCluster's errors. Double: botocore's Stubber
(requests and answers checked against the real SageMaker model), as in test_index.py."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import botocore.session
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from infra.custom_resources.tiered_storage.handler.cluster import (
    RetryLater,
    converge,
    describe,
)
from infra.custom_resources.tiered_storage.handler.errors import HandlerError
from infra.custom_resources.tiered_storage.handler.properties import TieredStorage
from tests.doubles.tiered_storage_events import CLUSTER, CLUSTER_ARN
from tests.doubles.tiered_storage_events import describe as answer
from tests.support.logs import assert_lines_say, line_saying

ENABLE_20 = TieredStorage("Enable", 20)
DISABLE = TieredStorage("Disable")
LOGGER = "infra.custom_resources.tiered_storage.handler.cluster"


@pytest.fixture
def client() -> Any:
    return botocore.session.get_session().create_client(
        "sagemaker",
        region_name="us-west-2",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def stub(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def test_done_when_read_back_and_in_service(client: Any) -> None:
    desc = answer(tiered={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20})
    step = converge(client, CLUSTER, ENABLE_20, desc=desc)
    assert step.done is True
    line_saying(step.reason, "Enable", "20%", "InService")


def test_read_back_but_updating_waits(client: Any) -> None:
    desc = answer(
        status="Updating", tiered={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}
    )
    step = converge(client, CLUSTER, ENABLE_20, desc=desc)
    assert step.done is False
    line_saying(step.reason, "Enable", "20%", "Updating")


def test_not_yet_applied_and_busy_waits(client: Any) -> None:
    desc = answer(status="Updating", tiered={"Mode": "Disable"})
    step = converge(client, CLUSTER, ENABLE_20, desc=desc)
    assert step.done is False
    line_saying(step.reason, "Updating", "Disable")


def test_an_accepted_update_waits_and_logs(
    client: Any, stub: Stubber, caplog: pytest.LogCaptureFixture
) -> None:
    tiered = {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}
    stub.add_response(
        "update_cluster",
        {"ClusterArn": CLUSTER_ARN},
        {"ClusterName": CLUSTER, "NodeRecovery": "Automatic", "TieredStorageConfig": tiered},
    )
    caplog.set_level(logging.INFO, LOGGER)
    step = converge(client, CLUSTER, ENABLE_20, desc=answer(tiered={"Mode": "Disable"}))
    # Not done yet; what the wait shows names the call, the mode asked and the state awaited.
    assert step.done is False
    line_saying(step.reason, "UpdateCluster", "Enable", "20%", "InService")
    # The log names the cluster, what was asked and what it replaced.
    assert_lines_say(caplog.messages, ["UpdateCluster", CLUSTER, "Enable", "20%", "Disable"])


def test_a_conflicting_update_waits_with_the_service_message(client: Any, stub: Stubber) -> None:
    stub.add_client_error("update_cluster", "ConflictException", "busy")
    step = converge(client, CLUSTER, ENABLE_20, desc=answer(tiered={"Mode": "Disable"}))
    assert step.done is False
    line_saying(step.reason, "UpdateCluster", "ConflictException", "busy")


@pytest.mark.parametrize("status", ["Failed", "Deleting"])
def test_a_failed_cluster_fails_create_but_lets_delete_finish(
    client: Any, status: str, caplog: pytest.LogCaptureFixture
) -> None:
    desc = answer(status=status)
    with pytest.raises(HandlerError) as err:
        converge(client, CLUSTER, ENABLE_20, desc=desc)
    assert str(err.value) == (
        f"HyperPod cluster {CLUSTER!r} is {status}: (no FailureMessage). Tiered Storage was not "
        "changed. Fix or recreate the cluster, then deploy again."
    )
    caplog.set_level(logging.WARNING, LOGGER)
    step = converge(client, CLUSTER, DISABLE, deleting=True, desc=desc)
    assert step.done is True
    line_saying(step.reason, CLUSTER, status, "nothing to restore")
    assert_lines_say(caplog.messages, [CLUSTER, status, "no FailureMessage", "not restored"])


def test_a_missing_cluster_fails_create_and_lets_delete_finish(client: Any, stub: Stubber) -> None:
    stub.add_client_error("describe_cluster", "ResourceNotFound", "no such cluster")
    with pytest.raises(HandlerError, match=rf"^HyperPod cluster {CLUSTER!r} not found"):
        converge(client, CLUSTER, ENABLE_20)
    stub.add_client_error("describe_cluster", "ResourceNotFound", "no such cluster")
    step = converge(client, CLUSTER, DISABLE, deleting=True)
    assert step.done is True
    line_saying(step.reason, CLUSTER, "no longer exists", "nothing to restore")


def test_missing_node_recovery_names_the_command(client: Any) -> None:
    with pytest.raises(HandlerError) as err:
        converge(client, CLUSTER, ENABLE_20, desc=answer(tiered=None, node_recovery=None))
    assert str(err.value) == (
        f"DescribeCluster of {CLUSTER!r} returned no NodeRecovery, and UpdateCluster with "
        "TieredStorageConfig alone is rejected. Check: set it once with `aws sagemaker "
        f"update-cluster --cluster-name {CLUSTER} --node-recovery Automatic` (or None)."
    )


@pytest.mark.parametrize(
    ("code", "message", "result"),
    [
        ("ResourceNotFound", "x", None),
        ("ValidationException", "Could not find cluster kv", None),
        ("ValidationException", "Cluster kv DOES NOT EXIST", None),
    ],
)
def test_describe_reads_not_found_as_none(
    client: Any, stub: Stubber, code: str, message: str, result: None
) -> None:
    stub.add_client_error("describe_cluster", code, message)
    assert describe(client, CLUSTER) is result


def test_describe_retries_later_on_throttling(client: Any, stub: Stubber) -> None:
    stub.add_client_error("describe_cluster", "ThrottlingException", "slow down")
    with pytest.raises(RetryLater, match=r"^DescribeCluster: ThrottlingException: slow down$"):
        describe(client, CLUSTER)


def test_describe_fails_on_other_errors_with_the_service_message(
    client: Any, stub: Stubber
) -> None:
    stub.add_client_error("describe_cluster", "ValidationException", "bad name")
    with pytest.raises(HandlerError) as err:
        describe(client, CLUSTER)
    assert str(err.value) == (
        f"SageMaker DescribeCluster on HyperPod cluster {CLUSTER!r} failed: ValidationException: "
        "bad name. Check: that Tiered Storage is available for this cluster's Region and "
        "instance types, and that the same `aws sagemaker update-cluster` works by hand "
        "(README.md, Tiered Storage)."
    )


class _Raises:
    """A client whose DescribeCluster raises a ClientError with a bare response (botocore fills
    Code and Message; a hand-made or proxied error may not)."""

    def __init__(self, response: dict[str, Any]) -> None:
        self.response = response

    def describe_cluster(self, **_: Any) -> Any:
        raise ClientError(self.response, "DescribeCluster")


def test_an_error_without_code_or_message_still_fails_clearly() -> None:
    for response in ({}, {"Error": {}}):
        with pytest.raises(HandlerError) as err:
            describe(_Raises(response), CLUSTER)
        assert str(err.value) == (
            f"SageMaker DescribeCluster on HyperPod cluster {CLUSTER!r} failed: Unknown: . "
            "Check: the cluster's events in the SageMaker console and the DescribeCluster call "
            "in CloudTrail."
        )


def test_a_throttle_without_message_retries_later() -> None:
    with pytest.raises(RetryLater, match=r"^DescribeCluster: ThrottlingException: $"):
        describe(_Raises({"Error": {"Code": "ThrottlingException"}}), CLUSTER)


def test_a_missing_cluster_names_where_to_look(client: Any, stub: Stubber) -> None:
    stub.add_client_error("describe_cluster", "ResourceNotFound", "no such cluster")
    with pytest.raises(HandlerError) as err:
        converge(client, CLUSTER, ENABLE_20)
    assert str(err.value) == (
        f"HyperPod cluster {CLUSTER!r} not found (DescribeCluster). Check: the cluster name in "
        "config, and that the stack deploys to the cluster's account and Region."
    )


def test_an_answer_without_status_waits(client: Any) -> None:
    desc = {k: v for k, v in answer(tiered={"Mode": "Disable"}).items() if k != "ClusterStatus"}
    step = converge(client, CLUSTER, ENABLE_20, desc=desc)
    assert step.done is False
    line_saying(step.reason, "Disable", "waiting")
