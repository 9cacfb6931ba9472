"""The Tiered Storage handler's time budget, and what CloudFormation is told when a wait or a
restore fails.

Double: botocore Stubber on a real SageMaker client. Why: moto 5.2 has no UpdateCluster and drops
NodeRecovery/TieredStorageConfig (see test_index_moto.py), while the Stubber checks every
request against botocore's service model and pins the exact parameters (NodeRecovery always
sent, nothing else), and fails on any call that was not queued (so "no call" is asserted).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from botocore.stub import Stubber

from infra.custom_resources.tiered_storage.handler import index
from infra.custom_resources.tiered_storage.handler.errors import HandlerError
from tests.doubles.tiered_storage_events import (
    CLUSTER,
    LOGICAL_ID,
    describe,
    event,
    properties,
)
from tests.support.logs import assert_lines_say
from tests.support.tiered_storage import (
    KEEP_ID,
    NOW,
    expect_describe,
    is_complete,
    on_event,
    started,
)

ENABLED_20 = {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}


def test_timeout_fails_clearly_with_the_last_state(client: Any, stub: Stubber) -> None:
    running = started(
        event("Create", properties()), {"PhysicalResourceId": KEEP_ID, index.STARTED_AT: NOW}
    )
    late = NOW + index.DEFAULT_DEADLINE_SECONDS + 1
    expect_describe(stub, describe(status="Updating", tiered=None))
    with pytest.raises(HandlerError) as raised:
        is_complete(client, running, now=late)
    message = str(raised.value)
    assert message.startswith("Timed out after 50 minutes waiting for Tiered Storage Enable (20%")
    assert "cluster is Updating" in message
    assert f"describe-cluster --cluster-name {CLUSTER}" in message


def test_success_at_the_deadline_still_counts(client: Any, stub: Stubber) -> None:
    running = started(
        event("Create", properties()), {"PhysicalResourceId": KEEP_ID, index.STARTED_AT: NOW}
    )
    expect_describe(stub, describe(tiered=ENABLED_20))
    assert is_complete(client, running, now=NOW + 10 * index.DEFAULT_DEADLINE_SECONDS)


def test_deadline_comes_from_the_environment(
    client: Any, stub: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(index.DEADLINE_ENV, "120")
    running = started(
        event("Create", properties()), {"PhysicalResourceId": KEEP_ID, index.STARTED_AT: NOW}
    )
    expect_describe(stub, describe(status="Updating", tiered=None))
    assert not is_complete(client, running, now=NOW + 119)
    expect_describe(stub, describe(status="Updating", tiered=None))
    with pytest.raises(HandlerError, match="Timed out after 2 minutes"):
        is_complete(client, running, now=NOW + 121)


def test_delete_timeout_names_the_way_out(client: Any, stub: Stubber) -> None:
    delete = event("Delete", properties(), f"tiered-storage:{CLUSTER}:restore:Disable")
    running = {**delete, index.STARTED_AT: NOW}
    expect_describe(stub, describe(status="Updating", tiered=ENABLED_20))
    with pytest.raises(HandlerError, match=f"Timed out.*--retain-resources {LOGICAL_ID}"):
        is_complete(client, running, now=NOW + index.DEFAULT_DEADLINE_SECONDS)


# --- what CloudFormation is told when a wait or a restore fails ---------------------------------


def test_is_complete_as_lambda_calls_it_uses_its_own_client_and_clock(
    client: Any, stub: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Provider calls ``is_complete(event, context)``: no client, no time given."""
    monkeypatch.setattr(index, "sagemaker_client", lambda: client)
    begun = time.time()
    fresh = started(
        event("Create", properties()), {"PhysicalResourceId": KEEP_ID, index.STARTED_AT: begun}
    )
    expect_describe(stub, describe(status="Updating", tiered=None))
    assert index.is_complete(fresh, None) == {"IsComplete": False}
    stale = {**fresh, index.STARTED_AT: begun - index.DEFAULT_DEADLINE_SECONDS}
    expect_describe(stub, describe(status="Updating", tiered=None))
    with pytest.raises(HandlerError, match=r"^Timed out after 50 minutes waiting"):
        index.is_complete(stale, None)


def test_timeout_message_in_full(client: Any, stub: Stubber) -> None:
    running = started(
        event("Create", properties()), {"PhysicalResourceId": KEEP_ID, index.STARTED_AT: NOW}
    )
    expect_describe(stub, describe(status="Updating", tiered=None))
    with pytest.raises(HandlerError) as raised:
        is_complete(client, running, now=NOW + index.DEFAULT_DEADLINE_SECONDS)
    assert str(raised.value) == (
        "Timed out after 50 minutes waiting for Tiered Storage Enable (20% of instance memory) "
        "on HyperPod cluster 'hp-test'; last state: cluster is Updating (current Tiered "
        "Storage: None); waiting. "
        "Check: `aws sagemaker describe-cluster --cluster-name hp-test --query "
        "'[ClusterStatus,TieredStorageConfig,FailureMessage]'`, then deploy again once it is "
        "InService."
    )


def test_delete_timeout_message_in_full(client: Any, stub: Stubber) -> None:
    delete = event("Delete", properties(), f"tiered-storage:{CLUSTER}:restore:Enable@35")
    running = {**delete, index.STARTED_AT: NOW}
    expect_describe(stub, describe(status="Updating", tiered=ENABLED_20))
    with pytest.raises(HandlerError) as raised:
        is_complete(client, running, now=NOW + index.DEFAULT_DEADLINE_SECONDS)
    assert str(raised.value) == (
        "Timed out after 50 minutes waiting for Tiered Storage Enable (35% of instance memory) "
        "on HyperPod cluster 'hp-test'; last state: cluster is Updating (current Tiered "
        "Storage: {'Mode': 'Enable', 'InstanceMemoryAllocationPercentage': 20}); waiting. "
        "Check: `aws sagemaker describe-cluster --cluster-name hp-test --query "
        "'[ClusterStatus,TieredStorageConfig,FailureMessage]'`, then deploy again once it is "
        "InService. "
        "Tiered Storage was not restored to Enable (35% of instance memory). "
        "To finish the delete without restoring, retry it with `--retain-resources "
        "TieredStorage8649EEDD` and set the config by hand (README.md, Tiered Storage: recovery)."
    )


def test_delete_restore_failing_while_polled_names_the_way_out(client: Any, stub: Stubber) -> None:
    delete = event("Delete", properties(), f"tiered-storage:{CLUSTER}:restore:Disable")
    expect_describe(stub, describe(tiered=ENABLED_20))
    stub.add_client_error("update_cluster", "ValidationException", "Nope", 400)
    with pytest.raises(HandlerError) as raised:
        is_complete(client, {**delete, index.STARTED_AT: NOW})
    assert str(raised.value) == (
        "SageMaker UpdateCluster on HyperPod cluster 'hp-test' failed: ValidationException: "
        "Nope. Check: that Tiered Storage is available for this cluster's Region and instance "
        "types, and that the same `aws sagemaker update-cluster` works by hand (README.md, "
        "Tiered Storage). Tiered Storage was not restored to Disable. "
        "To finish the delete without restoring, retry it with `--retain-resources "
        "TieredStorage8649EEDD` and set the config by hand (README.md, Tiered Storage: recovery)."
    )


def test_on_event_as_lambda_calls_it_uses_its_own_client_and_clock(
    client: Any, stub: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Provider calls ``on_event(event, context)``: no client, no time given; the start
    it records is now, for is_complete's deadline."""
    monkeypatch.setattr(index, "sagemaker_client", lambda: client)
    expect_describe(stub, describe(tiered=ENABLED_20))
    begun = time.time()
    result = index.on_event(event("Create", properties()), None)
    assert begun <= result[index.STARTED_AT] <= time.time()


def test_each_request_and_each_step_is_logged(
    client: Any, stub: Stubber, caplog: pytest.LogCaptureFixture
) -> None:
    """What the handler's CloudWatch log shows: the request with the fields that identify it,
    then the cluster and where its Tiered Storage stands after each step."""

    caplog.set_level(logging.INFO, logger=index.log.name)
    update = event("Update", properties(), KEEP_ID)
    expect_describe(stub, describe(tiered={"Mode": "Disable"}))
    stub.add_client_error("update_cluster", "ConflictException", "Cluster is being updated", 400)
    result = on_event(client, update)
    stub.add_client_error("describe_cluster", "ThrottlingException", "Rate exceeded", 400)
    is_complete(client, started(update, result))
    delete = event("Delete", properties(), "made-up")
    on_event(client, delete)
    # Each request with the fields that identify it, then each step: the cluster, the call, the
    # service's code and message, and what happens next.
    assert_lines_say(
        [r.getMessage() for r in caplog.records],
        ["Update", update["LogicalResourceId"], KEEP_ID, CLUSTER],
        [CLUSTER, "UpdateCluster", "ConflictException", "Cluster is being updated"],
        [CLUSTER, "DescribeCluster", "ThrottlingException", "Rate exceeded", "next poll"],
        ["Delete", delete["LogicalResourceId"], "made-up"],
        ["Delete", "nothing to restore", "made-up"],
    )


def test_a_throttled_describe_on_create_fails_saying_nothing_changed(
    client: Any, stub: Stubber
) -> None:
    stub.add_client_error("describe_cluster", "ThrottlingException", "Rate exceeded", 400)
    with pytest.raises(HandlerError) as failed:
        on_event(client, event("Create", properties()))
    assert str(failed.value) == (
        "DescribeCluster: ThrottlingException: Rate exceeded (after retries with backoff); "
        "nothing was changed"
    )
