"""The Tiered Storage handler (index.on_event/is_complete) on Create and Update: what it sends,
what it waits for, what it refuses.

Double: botocore Stubber on a real SageMaker client. Why: moto 5.2 has no UpdateCluster and drops
NodeRecovery/TieredStorageConfig (see test_index_moto.py), while the Stubber checks every
request against botocore's service model and pins the exact parameters (NodeRecovery always
sent, nothing else), and fails on any call that was not queued (so "no call" is asserted).
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber

from infra.custom_resources.tiered_storage.handler import index
from infra.custom_resources.tiered_storage.handler.errors import HandlerError
from tests.doubles.tiered_storage_events import (
    CLUSTER,
    describe,
    event,
    properties,
)
from tests.support.tiered_storage import (
    KEEP_ID,
    NOW,
    expect_describe,
    expect_update,
    is_complete,
    on_event,
    started,
)

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
    running = started(
        event("Create", properties()), {"PhysicalResourceId": KEEP_ID, index.STARTED_AT: NOW}
    )
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
    running = started(
        event("Create", properties()), {"PhysicalResourceId": KEEP_ID, index.STARTED_AT: NOW}
    )
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
