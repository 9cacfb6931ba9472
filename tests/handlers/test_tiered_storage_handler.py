"""Tiered Storage handler against botocore's Stubber.

Double: botocore Stubber on a real SageMaker client. Why: moto 5.2 has no UpdateCluster and drops
NodeRecovery/TieredStorageConfig (see test_tiered_storage_moto.py), while the Stubber checks every
request against botocore's service model and pins the exact parameters (NodeRecovery always
sent, nothing else), and fails on any call that was not queued (so "no call" is asserted).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import botocore.session
import pytest
from botocore.stub import Stubber

from infra.handlers.tiered_storage import index
from infra.handlers.tiered_storage.errors import HandlerError
from infra.handlers.tiered_storage.physical_id import CREATE_FAILED_MARKER
from tests.handlers.tiered_storage_events import (
    CLUSTER,
    CLUSTER_ARN,
    LOGICAL_ID,
    describe,
    event,
    properties,
)

NOW = 1_800_000_000.0
KEEP_ID = f"tiered-storage:{CLUSTER}:keep"


@pytest.fixture(scope="module")
def session() -> Any:
    # One session per module: it caches the parsed service model (creating it takes ~0.4 s).
    return botocore.session.get_session()


@pytest.fixture
def client(session: Any) -> Any:
    return session.create_client(
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


def expect_describe(stub: Stubber, answer: dict[str, Any], cluster: str = CLUSTER) -> None:
    stub.add_response("describe_cluster", answer, {"ClusterName": cluster})


def expect_update(stub: Stubber, tiered: dict[str, Any], node_recovery: str = "Automatic") -> None:
    stub.add_response(
        "update_cluster",
        {"ClusterArn": CLUSTER_ARN},
        {"ClusterName": CLUSTER, "TieredStorageConfig": tiered, "NodeRecovery": node_recovery},
    )


def on_event(client: Any, e: dict[str, Any], now: float = NOW) -> dict[str, Any]:
    return index.on_event(e, None, client=client, now=now)


def is_complete(client: Any, e: dict[str, Any], now: float = NOW + 60) -> bool:
    answer = index.is_complete(e, None, client=client, now=now)
    assert set(answer) == {"IsComplete"}  # Data is not allowed while IsComplete is False
    return bool(answer["IsComplete"])


def started(e: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """The event is_complete receives: the request merged with on_event's answer."""
    return {**e, **result}


ENABLED_20 = {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}


def test_already_enabled_makes_no_update_call(client: Any, stub: Stubber) -> None:
    create = event("Create", properties())
    expect_describe(stub, describe(tiered=ENABLED_20))
    result = on_event(client, create)
    assert result["PhysicalResourceId"] == KEEP_ID
    expect_describe(stub, describe(tiered=ENABLED_20))
    assert is_complete(client, started(create, result))


def test_enable_from_disabled_sends_node_recovery_and_waits_for_in_service(
    client: Any, stub: Stubber
) -> None:
    create = event("Create", properties(percentage="20"))
    expect_describe(stub, describe(tiered={"Mode": "Disable"}, node_recovery="Automatic"))
    expect_update(stub, ENABLED_20, node_recovery="Automatic")
    result = on_event(client, create)
    expect_describe(stub, describe(status="Updating", tiered=ENABLED_20))
    assert not is_complete(client, started(create, result))
    expect_describe(stub, describe(status="InService", tiered=ENABLED_20))
    assert is_complete(client, started(create, result))


def test_node_recovery_is_echoed_from_describe_cluster(client: Any, stub: Stubber) -> None:
    # A cluster that never had a TieredStorageConfig, with manual node recovery.
    expect_describe(stub, describe(tiered=None, node_recovery="None"))
    expect_update(stub, ENABLED_20, node_recovery="None")
    on_event(client, event("Create", properties()))


def test_percentage_change_on_update_keeps_the_physical_id(client: Any, stub: Stubber) -> None:
    update = event("Update", properties(percentage="40"), KEEP_ID, old_props=properties())
    expect_describe(stub, describe(tiered=ENABLED_20))
    expect_update(stub, {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 40})
    result = on_event(client, update)
    assert result["PhysicalResourceId"] == KEEP_ID


def test_instance_groups_change_re_asserts_without_a_call_when_still_enabled(
    client: Any, stub: Stubber
) -> None:
    update = event("Update", properties(groups_hash="h2"), KEEP_ID, old_props=properties())
    expect_describe(stub, describe(tiered=ENABLED_20))
    assert on_event(client, update)["PhysicalResourceId"] == KEEP_ID


def test_instance_groups_change_re_enables_when_the_cluster_update_dropped_it(
    client: Any, stub: Stubber
) -> None:
    update = event("Update", properties(groups_hash="h2"), KEEP_ID, old_props=properties())
    expect_describe(stub, describe(tiered=None))
    expect_update(stub, ENABLED_20)
    on_event(client, update)


def test_disable_sends_mode_only(client: Any, stub: Stubber) -> None:
    update = event("Update", properties(mode="Disable"), KEEP_ID, old_props=properties())
    expect_describe(stub, describe(tiered=ENABLED_20))
    expect_update(stub, {"Mode": "Disable"})
    result = on_event(client, update)
    expect_describe(stub, describe(tiered={"Mode": "Disable"}))
    assert is_complete(client, started(update, result))


def test_disable_on_a_cluster_without_config_is_a_no_op(client: Any, stub: Stubber) -> None:
    create = event("Create", properties(mode="Disable"))
    expect_describe(stub, describe(tiered=None))
    result = on_event(client, create)
    expect_describe(stub, describe(tiered=None))
    assert is_complete(client, started(create, result))


def test_conflict_is_retried_on_the_next_poll(client: Any, stub: Stubber) -> None:
    create = event("Create", properties())
    expect_describe(stub, describe(tiered={"Mode": "Disable"}))
    stub.add_client_error("update_cluster", "ConflictException", "Cluster is being updated", 400)
    result = on_event(client, create)  # no exception: the update is pending
    running = started(create, result)
    expect_describe(stub, describe(tiered={"Mode": "Disable"}))
    stub.add_client_error("update_cluster", "ConflictException", "Cluster is busy", 400)
    assert not is_complete(client, running)
    expect_describe(stub, describe(tiered={"Mode": "Disable"}))
    expect_update(stub, ENABLED_20)
    assert not is_complete(client, running)
    expect_describe(stub, describe(tiered=ENABLED_20))
    assert is_complete(client, running)


def test_a_cluster_that_is_updating_is_not_sent_an_update(client: Any, stub: Stubber) -> None:
    create = event("Create", properties())
    expect_describe(stub, describe(status="Updating", tiered=None))
    result = on_event(client, create)
    expect_describe(stub, describe(status="SystemUpdating", tiered=None))
    assert not is_complete(client, started(create, result))


def test_throttled_describe_during_polling_is_not_a_failure(client: Any, stub: Stubber) -> None:
    running = started(event("Create", properties()), {"PhysicalResourceId": KEEP_ID,
                                                       index.STARTED_AT: NOW})  # fmt: skip
    stub.add_client_error("describe_cluster", "ThrottlingException", "Rate exceeded", 400)
    assert not is_complete(client, running)


def test_missing_cluster_on_create_fails_clearly(client: Any, stub: Stubber) -> None:
    stub.add_client_error(
        "describe_cluster", "ResourceNotFound", f"Cluster {CLUSTER} not found", 400
    )
    with pytest.raises(HandlerError, match=f"cluster '{CLUSTER}' not found.*account and Region"):
        on_event(client, event("Create", properties()))


def test_failed_cluster_fails_at_once_with_its_failure_message(client: Any, stub: Stubber) -> None:
    expect_describe(stub, describe(status="Failed", failure="Insufficient capacity for g6e"))
    with pytest.raises(HandlerError, match="is Failed: Insufficient capacity for g6e"):
        on_event(client, event("Create", properties()))


def test_cluster_failing_while_polled_stops_the_wait(client: Any, stub: Stubber) -> None:
    running = started(event("Create", properties()), {"PhysicalResourceId": KEEP_ID,
                                                       index.STARTED_AT: NOW})  # fmt: skip
    expect_describe(stub, describe(status="Failed", failure="Lifecycle script failed"))
    with pytest.raises(HandlerError, match="Lifecycle script failed"):
        is_complete(client, running)


@pytest.mark.parametrize(
    ("code", "check"),
    [
        ("ValidationException", "Tiered Storage is available"),
        ("AccessDeniedException", "sagemaker:UpdateCluster on this cluster's ARN"),
        ("ResourceLimitExceeded", "quotas"),
        ("InternalServerError", "CloudTrail"),
    ],
)
def test_other_aws_errors_fail_with_the_message_verbatim(
    client: Any, stub: Stubber, code: str, check: str
) -> None:
    expect_describe(stub, describe(tiered=None))
    stub.add_client_error("update_cluster", code, "The service said: exactly this.", 400)
    with pytest.raises(HandlerError) as raised:
        on_event(client, event("Create", properties()))
    assert f"UpdateCluster on HyperPod cluster '{CLUSTER}' failed: {code}: " in str(raised.value)
    assert "The service said: exactly this." in str(raised.value)
    assert check in str(raised.value)


def test_missing_node_recovery_fails_instead_of_guessing(client: Any, stub: Stubber) -> None:
    expect_describe(stub, describe(tiered=None, node_recovery=None))
    with pytest.raises(HandlerError, match="returned no NodeRecovery"):
        on_event(client, event("Create", properties()))


@pytest.mark.parametrize("bad", ["19", "101", "abc", "20.0", "", "-20"])
def test_bad_percentage_is_rejected_before_any_call(client: Any, stub: Stubber, bad: str) -> None:
    with pytest.raises(HandlerError) as raised:
        on_event(client, event("Create", properties(percentage=bad)))
    message = str(raised.value)
    assert message.startswith(f"InstanceMemoryAllocationPercentage = {bad!r}")
    assert "an integer from 20 to 100" in message
    assert "tiered_storage.instance_memory_allocation_percentage" in message


def test_bad_mode_is_rejected(client: Any, stub: Stubber) -> None:
    with pytest.raises(HandlerError, match="Mode = 'enable': allowed: Enable or Disable"):
        on_event(client, event("Create", properties(mode="enable")))


def test_boundaries_are_accepted(client: Any, stub: Stubber) -> None:
    for pct in ("20", "100"):
        current = {"Mode": "Enable", "InstanceMemoryAllocationPercentage": int(pct)}
        expect_describe(stub, describe(tiered=current))
        on_event(client, event("Create", properties(percentage=pct)))


# --- existing-cluster mode: restore on Delete ---------------------------------------------------


def test_restore_on_delete_puts_back_the_config_recorded_at_create(
    client: Any, stub: Stubber
) -> None:
    create = event("Create", properties(restore_on_delete="true"))
    before = {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 35}
    expect_describe(stub, describe(tiered=before, node_recovery="None"))
    expect_update(stub, ENABLED_20, node_recovery="None")
    physical_id = on_event(client, create)["PhysicalResourceId"]
    assert physical_id == f"tiered-storage:{CLUSTER}:restore:Enable@35"

    # An Update never rewrites the record, even though the cluster now has 20%.
    update = event("Update", properties(restore_on_delete="true", groups_hash="h2"), physical_id,
                   old_props=properties(restore_on_delete="true"))  # fmt: skip
    expect_describe(stub, describe(tiered=ENABLED_20))
    assert on_event(client, update)["PhysicalResourceId"] == physical_id

    delete = event("Delete", properties(restore_on_delete="true"), physical_id)
    expect_describe(stub, describe(tiered=ENABLED_20, node_recovery="None"))
    expect_update(stub, before, node_recovery="None")
    result = on_event(client, delete)
    assert result["PhysicalResourceId"] == physical_id
    expect_describe(stub, describe(tiered=before))
    assert is_complete(client, started(delete, result))


def test_restore_of_a_cluster_that_had_no_config_disables(client: Any, stub: Stubber) -> None:
    expect_describe(stub, describe(tiered=None))
    expect_update(stub, ENABLED_20)
    physical_id = on_event(client, event("Create", properties(restore_on_delete="true")))[
        "PhysicalResourceId"
    ]
    assert physical_id.endswith(":restore:unset")
    expect_describe(stub, describe(tiered=ENABLED_20))
    expect_update(stub, {"Mode": "Disable"})
    on_event(client, event("Delete", properties(restore_on_delete="true"), physical_id))


def test_delete_of_a_missing_cluster_succeeds(client: Any, stub: Stubber) -> None:
    physical_id = f"tiered-storage:{CLUSTER}:restore:Disable"
    delete = event("Delete", properties(restore_on_delete="true"), physical_id)
    stub.add_client_error("describe_cluster", "ResourceNotFound", "Cluster not found", 400)
    result = on_event(client, delete)
    assert result["PhysicalResourceId"] == physical_id
    stub.add_client_error("describe_cluster", "ResourceNotFound", "Cluster not found", 400)
    assert is_complete(client, started(delete, result))


def test_delete_of_a_failed_cluster_succeeds_without_restoring(client: Any, stub: Stubber) -> None:
    delete = event("Delete", properties(), f"tiered-storage:{CLUSTER}:restore:Disable")
    expect_describe(stub, describe(status="Failed", failure="gone bad", tiered=ENABLED_20))
    on_event(client, delete)


@pytest.mark.parametrize("physical_id", [KEEP_ID, CREATE_FAILED_MARKER, "some-other-id"])
def test_delete_without_a_restore_record_makes_no_call(
    client: Any, stub: Stubber, physical_id: str
) -> None:
    delete = event("Delete", properties(), physical_id)
    result = on_event(client, delete)
    assert result["PhysicalResourceId"] == physical_id  # Delete never changes the id
    assert is_complete(client, started(delete, result))


def test_delete_restore_failure_names_the_way_out(client: Any, stub: Stubber) -> None:
    delete = event("Delete", properties(), f"tiered-storage:{CLUSTER}:restore:Disable")
    expect_describe(stub, describe(tiered=ENABLED_20))
    stub.add_client_error("update_cluster", "ValidationException", "Nope.", 400)
    with pytest.raises(HandlerError) as raised:
        on_event(client, delete)
    assert "ValidationException: Nope." in str(raised.value)
    assert f"--retain-resources {LOGICAL_ID}" in str(raised.value)


def test_a_new_cluster_name_gets_a_new_physical_id(client: Any, stub: Stubber) -> None:
    # CloudFormation then Deletes the old id: the old cluster gets its config back.
    old_id = f"tiered-storage:{CLUSTER}:restore:Disable"
    update = event("Update", properties(cluster="hp-other", restore_on_delete="true"), old_id,
                   old_props=properties(restore_on_delete="true"))  # fmt: skip
    expect_describe(stub, describe(cluster="hp-other", tiered=ENABLED_20), cluster="hp-other")
    assert on_event(client, update)["PhysicalResourceId"] == (
        "tiered-storage:hp-other:restore:Enable@20"
    )


# --- time budget ----------------------------------------------------------------------------------


def test_timeout_fails_clearly_with_the_last_state(client: Any, stub: Stubber) -> None:
    running = started(event("Create", properties()), {"PhysicalResourceId": KEEP_ID,
                                                       index.STARTED_AT: NOW})  # fmt: skip
    late = NOW + index.DEFAULT_DEADLINE_SECONDS + 1
    expect_describe(stub, describe(status="Updating", tiered=None))
    with pytest.raises(HandlerError) as raised:
        is_complete(client, running, now=late)
    message = str(raised.value)
    assert message.startswith("Timed out after 50 minutes waiting for Tiered Storage Enable (20%")
    assert "cluster is Updating" in message
    assert f"describe-cluster --cluster-name {CLUSTER}" in message


def test_success_at_the_deadline_still_counts(client: Any, stub: Stubber) -> None:
    running = started(event("Create", properties()), {"PhysicalResourceId": KEEP_ID,
                                                       index.STARTED_AT: NOW})  # fmt: skip
    expect_describe(stub, describe(tiered=ENABLED_20))
    assert is_complete(client, running, now=NOW + 10 * index.DEFAULT_DEADLINE_SECONDS)


def test_deadline_comes_from_the_environment(
    client: Any, stub: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(index.DEADLINE_ENV, "120")
    running = started(event("Create", properties()), {"PhysicalResourceId": KEEP_ID,
                                                       index.STARTED_AT: NOW})  # fmt: skip
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
    fresh = started(event("Create", properties()), {"PhysicalResourceId": KEEP_ID,
                                                     index.STARTED_AT: begun})  # fmt: skip
    expect_describe(stub, describe(status="Updating", tiered=None))
    assert index.is_complete(fresh, None) == {"IsComplete": False}
    stale = {**fresh, index.STARTED_AT: begun - index.DEFAULT_DEADLINE_SECONDS}
    expect_describe(stub, describe(status="Updating", tiered=None))
    with pytest.raises(HandlerError, match=r"^Timed out after 50 minutes waiting"):
        index.is_complete(stale, None)


def test_timeout_message_in_full(client: Any, stub: Stubber) -> None:
    running = started(event("Create", properties()), {"PhysicalResourceId": KEEP_ID,
                                                       index.STARTED_AT: NOW})  # fmt: skip
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
    import logging

    caplog.set_level(logging.INFO, logger=index.log.name)
    update = event("Update", properties(), KEEP_ID)
    expect_describe(stub, describe(tiered={"Mode": "Disable"}))
    stub.add_client_error("update_cluster", "ConflictException", "Cluster is being updated", 400)
    result = on_event(client, update)
    stub.add_client_error("describe_cluster", "ThrottlingException", "Rate exceeded", 400)
    is_complete(client, started(update, result))
    delete = event("Delete", properties(), "made-up")
    on_event(client, delete)
    summary = {k: update[k] for k in ("LogicalResourceId", "PhysicalResourceId",
                                      "ResourceProperties")}  # fmt: skip
    deleted = {k: delete[k] for k in summary}
    assert [r.getMessage() for r in caplog.records] == [
        f"Update {summary}",
        f"{CLUSTER}: UpdateCluster: ConflictException: Cluster is being updated",
        f"{CLUSTER}: DescribeCluster: ThrottlingException: Rate exceeded; trying again on the "
        "next poll",
        f"Delete {deleted}",
        "Delete: nothing to restore for 'made-up'",
    ]


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
