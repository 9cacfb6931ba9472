"""The Tiered Storage handler on Delete: existing-cluster mode puts back the config recorded at
Create; a created cluster's Delete makes no call.

Double: botocore Stubber on a real SageMaker client. Why: moto 5.2 has no UpdateCluster and drops
NodeRecovery/TieredStorageConfig (see test_index_moto.py), while the Stubber checks every
request against botocore's service model and pins the exact parameters (NodeRecovery always
sent, nothing else), and fails on any call that was not queued (so "no call" is asserted).
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber

from infra.custom_resources.tiered_storage.handler.errors import HandlerError
from infra.custom_resources.tiered_storage.handler.physical_id import CREATE_FAILED_MARKER
from tests.doubles.tiered_storage_events import (
    CLUSTER,
    LOGICAL_ID,
    describe,
    event,
    properties,
)
from tests.support.tiered_storage import (
    KEEP_ID,
    expect_describe,
    expect_update,
    is_complete,
    on_event,
    started,
)

ENABLED_20 = {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}


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
    update = event(
        "Update",
        properties(restore_on_delete="true", groups_hash="h2"),
        physical_id,
        old_props=properties(restore_on_delete="true"),
    )
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
    update = event(
        "Update",
        properties(cluster="hp-other", restore_on_delete="true"),
        old_id,
        old_props=properties(restore_on_delete="true"),
    )
    expect_describe(stub, describe(cluster="hp-other", tiered=ENABLED_20), cluster="hp-other")
    assert on_event(client, update)["PhysicalResourceId"] == (
        "tiered-storage:hp-other:restore:Enable@20"
    )
