"""The stack deletion poll of teardown shows its progress: the status and latest event, a
DELETE_FAILED naming the resource and its reason, a stack already gone skipped.

Doubles: a fake clock (nothing sleeps) and captured streams; botocore's Stubber for
CloudFormation, because a deletion that stays DELETE_IN_PROGRESS over several polls and then ends
DELETE_FAILED with per-resource reasons cannot be produced by moto (its deletes finish at once)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from scripts.lib.clients import Clients
from scripts.lib.errors import OperationError
from scripts.lib.teardown.model import Timeouts
from scripts.lib.teardown.stacks import _delete_stack
from tests.support.logs import assert_lines_say, line_saying
from tests.support.progress import FakeClock, plain

STACK = "hyperpod-kvcache-test-hyperpod"
STACK_ID = f"arn:aws:cloudformation:us-west-2:111122223333:stack/{STACK}/abc"
T0 = datetime(2027, 1, 15, 8, 0, tzinfo=UTC)


def _stack(status: str, reason: str = "") -> dict[str, Any]:
    stack = {
        "StackName": STACK,
        "StackId": STACK_ID,
        "StackStatus": status,
        "CreationTime": T0 - timedelta(days=1),
    }
    if reason:
        stack["StackStatusReason"] = reason
    return {"Stacks": [stack]}


def _event(
    logical: str, status: str, minute: int, reason: str = "", kind: str = "AWS::EC2::Subnet"
) -> dict[str, Any]:
    event = {
        "StackId": STACK_ID,
        "EventId": f"{logical}-{status}-{minute}",
        "StackName": STACK,
        "LogicalResourceId": logical,
        "PhysicalResourceId": f"{logical.lower()}-0123",
        "ResourceType": kind,
        "Timestamp": T0 + timedelta(minutes=minute),
        "ResourceStatus": status,
    }
    if reason:
        event["ResourceStatusReason"] = reason
    return event


def _stack_event(status: str, minute: int) -> dict[str, Any]:
    return {
        **_event(STACK, status, minute, kind="AWS::CloudFormation::Stack"),
        "PhysicalResourceId": STACK_ID,
    }


@pytest.fixture
def cfn() -> Any:
    client = boto3.client("cloudformation", region_name="us-west-2")
    with Stubber(client) as stub:
        client.stub = stub
        yield client
        stub.assert_no_pending_responses()


def _clients(cfn: Any) -> Clients:
    return Clients("us-west-2", aws_factory=lambda service: cfn)


def test_stack_deletion_shows_status_and_latest_event(cfn: Any) -> None:
    stub = cfn.stub
    stub.add_response("describe_stacks", _stack("CREATE_COMPLETE"), {"StackName": STACK})
    stub.add_response("delete_stack", {}, {"StackName": STACK})
    stub.add_response("describe_stacks", _stack("DELETE_IN_PROGRESS"), {"StackName": STACK_ID})
    events = [
        _event("Cluster", "DELETE_IN_PROGRESS", 2, kind="AWS::SageMaker::Cluster"),
        _stack_event("DELETE_IN_PROGRESS", 1),
    ]
    stub.add_response("describe_stack_events", {"StackEvents": events}, {"StackName": STACK_ID})
    stub.add_response("describe_stacks", _stack("DELETE_COMPLETE"), {"StackName": STACK_ID})
    fake = FakeClock()
    rep, stream = plain(fake)
    steps: list[str] = []
    _delete_stack(_clients(cfn), STACK, Timeouts(stack_s=5400, interval_s=15), steps.append, rep)
    # While it waits: the stack, its status and its latest event; then how long it took.
    text = stream.getvalue()
    line_saying(text, STACK, "DELETE_IN_PROGRESS", "latest", "Cluster")
    line_saying(text, STACK, "done", "15s")
    assert_lines_say(steps, [STACK, "delete requested", "CREATE_COMPLETE"], [STACK, "deleted"])


def test_delete_failed_names_the_resource_and_its_reason(cfn: Any) -> None:
    stub = cfn.stub
    stub.add_response("describe_stacks", _stack("DELETE_FAILED"), {"StackName": STACK})
    stub.add_response("delete_stack", {}, {"StackName": STACK})
    reason = "The subnet 'subnet-0123' has dependencies and cannot be deleted."
    failed = _stack("DELETE_FAILED", "The following resource(s) failed to delete: [Subnet1].")
    stub.add_response("describe_stacks", failed, {"StackName": STACK_ID})
    events = [
        _stack_event("DELETE_FAILED", 40),
        _event("Subnet1", "DELETE_FAILED", 39, reason),
        _event("Subnet1", "DELETE_IN_PROGRESS", 20),
        _stack_event("DELETE_IN_PROGRESS", 10),  # this deletion started here
        _event("OldQueue", "DELETE_FAILED", 5, "from an earlier attempt", "AWS::SQS::Queue"),
    ]
    stub.add_response("describe_stack_events", {"StackEvents": events}, {"StackName": STACK_ID})
    fake = FakeClock()
    rep, _ = plain(fake)
    with pytest.raises(OperationError) as caught:
        _delete_stack(_clients(cfn), STACK, Timeouts(interval_s=15), lambda _: None, rep)
    message = str(caught.value)
    assert message == (
        f"stack {STACK}: DELETE_FAILED; failed to delete Subnet1 (AWS::EC2::Subnet "
        f"subnet1-0123): {reason}. Remove what holds it (or delete it by hand) and re-run teardown"
    )
    assert "OldQueue" not in message


def test_a_stack_already_gone_is_skipped(cfn: Any) -> None:
    cfn.stub.add_client_error(
        "describe_stacks",
        "ValidationError",
        f"Stack with id {STACK} does not exist",
        expected_params={"StackName": STACK},
    )
    steps: list[str] = []
    _delete_stack(_clients(cfn), STACK, Timeouts(), steps.append, False)
    assert_lines_say(steps, [STACK, "not found", "skipped"])
