"""Deleting the stacks: a wave side by side, a DELETE_FAILED that names what failed and why, and the
bucket a late access log filled, emptied and retried once.

Doubles: moto (CloudFormation, S3) through ``World``; botocore event hooks play CloudFormation's
DELETE_FAILED on a bucket that is not empty; botocore's Stubber where a test needs exact answers
(each test says which)."""

from __future__ import annotations

import threading
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from scripts.lib.clients import Clients
from scripts.lib.environment import stack_waves
from scripts.lib.errors import OperationError
from scripts.lib.teardown.execute import execute_teardown
from scripts.lib.teardown.plan import plan_teardown
from scripts.lib.teardown.stacks import (
    DeleteFailed,
    _describe_event,
    _empty_late_buckets,
    _events_of_this_delete,
    _stack,
    delete_failure,
    empty_bucket,
    not_empty_buckets,
    stack_status,
)
from tests.support.logs import assert_lines_say, line_saying
from tests.support.teardown_world import FAST, PREFIX, REGION, World, stubbed_client


def test_the_stacks_of_one_wave_are_deleted_side_by_side(world: World) -> None:
    """Each stack of a wave waits inside DeleteStack for its siblings: one after the other,
    the first would wait alone and the barrier break."""
    waves = [wave for wave in stack_waves(world.cfg) if len(wave) > 1]
    assert waves  # the layout has waves of several stacks
    for wave in waves:
        barrier = threading.Barrier(len(wave))
        world.side_by_side.update(dict.fromkeys(wave, barrier))
    execute_teardown(world.clients, world.cfg, lambda _: None, FAST, show=False)
    assert all(not b.broken for b in world.side_by_side.values())
    assert not plan_teardown(world.clients, world.cfg).stacks


def _objects(bucket: str) -> int:
    listed = boto3.client("s3", region_name=REGION).list_object_versions(Bucket=bucket)
    return len(listed.get("Versions", [])) + len(listed.get("DeleteMarkers", []))


def test_a_late_access_log_delivery_is_emptied_and_the_stack_deleted_again(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "scripts.lib.teardown.stacks.S3_BATCH", 2
    )  # pages of two: several DeleteObjects
    s3 = boto3.client("s3", region_name=REGION)
    bucket = world.access_logs
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    for key in ("s3-access/a", "s3-access/b"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"1")
        s3.put_object(Bucket=bucket, Key=key, Body=b"2")
        s3.delete_object(Bucket=bucket, Key=key)  # a delete marker
    world.deliveries_at_delete = 1  # and one more lands as the delete starts
    steps: list[str] = []
    execute_teardown(world.clients, world.cfg, steps.append, FAST, show=False)

    t, hyperpod = world.timeline, f"DeleteStack:{PREFIX}-hyperpod"
    assert t.count(hyperpod) == 2
    first, retry = (i for i, step in enumerate(t) if step == hyperpod)
    emptied = [i for i, step in enumerate(t) if step == f"DeleteObjects:{bucket}"]
    assert len(emptied) == 4 and first < min(emptied) and max(emptied) < retry  # 7 versions
    assert retry < t.index(f"DeleteStack:{PREFIX}-eks")  # before the next wave
    # The stack, the state it failed in, the bucket it emptied (how much) and that it retries.
    line_saying(steps, f"{PREFIX}-hyperpod", "DELETE_FAILED", bucket, "7 object versions", "retry")
    line_saying(steps, f"{PREFIX}-hyperpod", "deleted")
    assert _objects(world.neighbour_bucket) == 1
    assert not plan_teardown(world.clients, world.cfg).stacks


def test_a_bucket_that_keeps_filling_fails_the_teardown_after_one_retry(world: World) -> None:
    world.deliveries_at_delete = 2
    with pytest.raises(OperationError) as failed:
        execute_teardown(world.clients, world.cfg, lambda _: None, FAST, show=False)
    message = str(failed.value)
    assert message.startswith(f"stack {PREFIX}-hyperpod: DELETE_FAILED; failed to delete")
    assert f"AWS::S3::Bucket {world.access_logs}): The bucket you tried to delete is not empty" in (
        message
    )
    assert world.timeline.count(f"DeleteStack:{PREFIX}-hyperpod") == 2
    assert world.timeline.count(f"DeleteObjects:{world.access_logs}") == 1
    assert f"DeleteStack:{PREFIX}-eks" not in world.timeline


def test_a_failure_naming_a_bucket_outside_this_environment_empties_nothing(
    world: World,
) -> None:
    world.deliveries_at_delete = 1
    world.blame = world.neighbour_bucket  # an event naming a bucket no stack of ours holds
    with pytest.raises(OperationError, match="is not a resource of stack") as failed:
        execute_teardown(world.clients, world.cfg, lambda _: None, FAST, show=False)
    assert f"bucket {world.neighbour_bucket} is not a resource" in str(failed.value)
    assert not any(step.startswith("DeleteObjects:") for step in world.timeline)
    assert world.timeline.count(f"DeleteStack:{PREFIX}-hyperpod") == 1
    assert _objects(world.neighbour_bucket) == 1 and _objects(world.access_logs) == 1


def test_a_role_that_may_not_empty_the_bucket_gets_the_stack_failure_and_the_bucket(
    world: World,
) -> None:
    """The nightly role has no S3 permissions (bucket names are generated, so no pattern could
    keep them to this environment): the failure says which bucket to empty by hand."""
    world.deliveries_at_delete = 1
    world.denied = {"DeleteObjects"}
    with pytest.raises(OperationError) as failed:
        execute_teardown(world.clients, world.cfg, lambda _: None, FAST, show=False)
    message = str(failed.value)
    assert message.startswith(f"stack {PREFIX}-hyperpod: DELETE_FAILED; failed to delete")
    assert message.endswith(f"; could not empty bucket {world.access_logs}: AccessDenied")
    assert world.timeline.count(f"DeleteStack:{PREFIX}-hyperpod") == 1


@pytest.mark.parametrize(
    ("event", "shown"),
    [
        (
            {
                "LogicalResourceId": "Cluster",
                "ResourceStatus": "DELETE_IN_PROGRESS",
                "ResourceStatusReason": "Waiting for nodes",
            },
            "Cluster DELETE_IN_PROGRESS: Waiting for nodes",
        ),
        (
            {"LogicalResourceId": "Cluster", "ResourceStatus": "DELETE_IN_PROGRESS"},
            "Cluster DELETE_IN_PROGRESS",
        ),
        ({"LogicalResourceId": "Cluster", "ResourceStatusReason": ""}, "Cluster "),
    ],
)
def test_the_progress_line_shows_the_latest_event_and_its_reason_if_any(
    event: dict[str, str], shown: str
) -> None:
    """What `teardown` prints while a stack deletes: `<status>; latest: <this>`."""
    assert _describe_event(event) == shown


def _event(n: int, logical: str, kind: str, status: str, reason: str = "") -> dict[str, Any]:
    return {
        "StackId": "arn:aws:cloudformation:us-west-2:123456789012:stack/s/1",
        "EventId": f"e{n}",
        "StackName": "s",
        "LogicalResourceId": logical,
        "ResourceType": kind,
        "ResourceStatus": status,
        "ResourceStatusReason": reason,
        "Timestamp": f"2026-12-01T10:{59 - n:02d}:00Z",
    }


def test_a_delete_failure_names_only_what_failed_in_this_attempt() -> None:
    """Events come newest first; those before this deletion's DELETE_IN_PROGRESS of the stack
    (an earlier attempt's failures) are not this attempt's and stay out of the message."""
    stack_type, bucket = "AWS::CloudFormation::Stack", "AWS::S3::Bucket"
    events = [
        _event(0, "s", stack_type, "DELETE_FAILED", "resources failed"),
        _event(1, "Logs", bucket, "DELETE_FAILED", "bucket not empty"),
        _event(2, "Logs", bucket, "DELETE_IN_PROGRESS"),  # a resource's: not where it began
        _event(3, "Role", "AWS::IAM::Role", "DELETE_COMPLETE"),
        _event(4, "s", stack_type, "DELETE_IN_PROGRESS", "User Initiated"),
        _event(5, "s", stack_type, "DELETE_FAILED"),
        _event(6, "Old", bucket, "DELETE_FAILED", "an earlier attempt"),
        _event(7, "s", stack_type, "DELETE_IN_PROGRESS", "User Initiated"),
    ]
    cfn = stubbed_client("cloudformation")
    stack_id = events[0]["StackId"]
    with Stubber(cfn) as stub:
        stub.add_response("describe_stack_events", {"StackEvents": events}, {"StackName": stack_id})
        found = _events_of_this_delete(cfn, stack_id)
    assert [e["EventId"] for e in found] == ["e0", "e1", "e2", "e3", "e4"]
    message = delete_failure("s", {"StackStatus": "DELETE_FAILED"}, found)
    assert message == (  # the resource that failed, not the stack's own summary event
        "stack s: DELETE_FAILED; failed to delete Logs (AWS::S3::Bucket -): bucket not empty. "
        "Remove what holds it (or delete it by hand) and re-run teardown"
    )


def test_a_delete_failure_reads_whatever_cloudformation_gave() -> None:
    """Two failures are both named; a field CloudFormation left out reads as such; with no
    failed resource, the stack's own status and reason are the message."""
    failed = [
        {
            "LogicalResourceId": "A",
            "ResourceType": "AWS::EC2::Subnet",
            "PhysicalResourceId": "s-1",
            "ResourceStatus": "DELETE_FAILED",
            "ResourceStatusReason": "has dependencies",
        },
        {"LogicalResourceId": "B", "ResourceStatus": "DELETE_FAILED"},
    ]
    stack = {"StackStatus": "DELETE_FAILED"}
    assert str(DeleteFailed("s", stack, failed)) == (
        "stack s: DELETE_FAILED; failed to delete A (AWS::EC2::Subnet s-1): has dependencies; "
        "B (? -): no reason. Remove what holds it (or delete it by hand) and re-run teardown"
    )
    reason = {"StackStatus": "DELETE_FAILED", "StackStatusReason": "Role is in use"}
    assert str(DeleteFailed("s", reason, [])) == (
        "stack s: DELETE_FAILED (Role is in use); fix it and re-run teardown"
    )
    assert delete_failure("s", stack, []) == (
        "stack s: DELETE_FAILED (no reason given); fix it and re-run teardown"
    )


def test_a_bucket_that_refuses_some_deletions_stops_teardown_naming_one() -> None:
    """DeleteObjects answers 200 with per-key Errors (no exception): emptying must not report
    the bucket empty, but say how many objects stayed and why, with one example."""
    s3 = stubbed_client("s3")
    versions = {"Versions": [{"Key": "k1", "VersionId": "v1"}, {"Key": "k2", "VersionId": "v2"}]}
    keys = [{"Key": "k1", "VersionId": "v1"}, {"Key": "k2", "VersionId": "v2"}]
    errors = [
        {"Key": "k2", "VersionId": "v2", "Code": "AccessDenied", "Message": "Access Denied"},
        {"Key": "k1", "VersionId": "v1", "Code": "InternalError", "Message": "retry"},
    ]
    with Stubber(s3) as stub:
        stub.add_response("list_object_versions", versions, {"Bucket": "b", "MaxKeys": 1000})
        stub.add_response(
            "delete_objects",
            {"Errors": errors},
            {"Bucket": "b", "Delete": {"Objects": keys, "Quiet": True}},
        )
        with pytest.raises(OperationError) as failed:
            empty_bucket(s3, "b")
    assert str(failed.value) == (
        "emptying bucket b: 2 objects not deleted, e.g. k2: AccessDenied Access Denied"
    )
    with Stubber(s3) as stub:  # an error without a message: no trailing space, no "None"
        stub.add_response("list_object_versions", versions, {"Bucket": "b", "MaxKeys": 1000})
        stub.add_response(
            "delete_objects",
            {"Errors": [{"Key": "k1", "Code": "InternalError"}]},
            {"Bucket": "b", "Delete": {"Objects": keys, "Quiet": True}},
        )
        with pytest.raises(OperationError) as failed:
            empty_bucket(s3, "b")
    assert str(failed.value) == "emptying bucket b: 1 objects not deleted, e.g. k1: InternalError"


def test_a_stack_that_is_gone_reads_as_none_and_other_errors_surface() -> None:
    """DescribeStacks on a deleted stack's name fails with ValidationError "does not exist";
    by its id it answers DELETE_COMPLETE. Both mean gone; any other error is not."""

    cfn = boto3.client("cloudformation", region_name=REGION)
    clients = Clients(REGION, aws_factory=lambda service: cfn)
    with Stubber(cfn) as stub:
        stub.add_client_error(
            "describe_stacks", "ValidationError", "Stack with id s does not exist"
        )
        assert stack_status(clients, "s") is None
        for status in ("DELETE_COMPLETE", "DELETE_FAILED"):
            stub.add_response(
                "describe_stacks",
                {
                    "Stacks": [
                        {
                            "StackName": "s",
                            "StackStatus": status,
                            "CreationTime": "2026-12-01T10:00:00Z",
                        }
                    ]
                },
            )
        assert stack_status(clients, "s") is None
        assert stack_status(clients, "s") == "DELETE_FAILED"
        stub.add_client_error("describe_stacks", "AccessDenied", "not authorized")
        with pytest.raises(ClientError, match="AccessDenied"):
            stack_status(clients, "s")


def test_only_buckets_that_failed_for_being_not_empty_are_emptied() -> None:
    """CloudFormation words it "The bucket you tried to delete is not empty" (S3's
    BucketNotEmpty); a bucket that failed for another reason, or another resource, is not
    emptied, and a bucket named twice is emptied once."""

    def failed(logical: str, kind: str, physical: str, reason: str) -> dict[str, Any]:
        return {
            "LogicalResourceId": logical,
            "ResourceType": kind,
            "PhysicalResourceId": physical,
            "ResourceStatus": "DELETE_FAILED",
            "ResourceStatusReason": reason,
        }

    events = [
        failed("Logs", "AWS::S3::Bucket", "logs-b", "The bucket you tried to delete is not empty"),
        failed("Logs", "AWS::S3::Bucket", "logs-b", "The bucket you tried to delete is not empty"),
        failed("Data", "AWS::S3::Bucket", "data-b", "BucketNotEmpty (Service: S3, Status: 409)"),
        failed("Denied", "AWS::S3::Bucket", "denied-b", "Access Denied"),
        failed("Queue", "AWS::SQS::Queue", "q", "queue is not empty"),
        {
            **failed("Gone", "AWS::S3::Bucket", "gone-b", "not empty"),
            "ResourceStatus": "DELETE_COMPLETE",
        },
        {**failed("NoReason", "AWS::S3::Bucket", "none-b", ""), "ResourceStatusReason": None},
    ]
    assert not_empty_buckets(events) == ["logs-b", "data-b"]


def test_late_buckets_are_emptied_only_when_named_and_all_ours() -> None:
    """Stubber: a failure naming no bucket is not retried; every bucket it names is emptied
    when each is a resource of the stack, and none when any is not; the messages name all."""

    cfn, s3 = stubbed_client("cloudformation"), stubbed_client("s3")
    clients = Clients(
        REGION, aws_factory=lambda service: {"cloudformation": cfn, "s3": s3}[service]
    )
    stack = {
        "StackId": "arn:aws:cloudformation:us-west-2:111122223333:stack/s/1",
        "StackStatus": "DELETE_FAILED",
    }

    def not_empty(bucket: str) -> dict[str, Any]:
        return {
            "LogicalResourceId": bucket,
            "ResourceType": "AWS::S3::Bucket",
            "PhysicalResourceId": bucket,
            "ResourceStatus": "DELETE_FAILED",
            "ResourceStatusReason": "The bucket you tried to delete is not empty",
        }

    def resources(*buckets: str) -> dict[str, Any]:
        return {
            "StackResourceSummaries": [
                {
                    "LogicalResourceId": b,
                    "PhysicalResourceId": b,
                    "ResourceType": "AWS::S3::Bucket",
                    "ResourceStatus": "DELETE_FAILED",
                    "LastUpdatedTimestamp": "2026-12-01T10:00:00Z",
                }
                for b in buckets
            ]
        }

    steps: list[str] = []
    other = {**not_empty("x"), "ResourceType": "AWS::SQS::Queue"}
    assert not _empty_late_buckets(clients, "s", DeleteFailed("s", stack, [other]), steps.append)

    both = DeleteFailed("s", stack, [not_empty("b1"), not_empty("b2")])
    with Stubber(cfn) as cfn_stub, Stubber(s3) as s3_stub:
        cfn_stub.add_response(
            "list_stack_resources", resources("b1", "b2"), {"StackName": stack["StackId"]}
        )
        for bucket in ("b1", "b2"):
            s3_stub.add_response("list_object_versions", {}, {"Bucket": bucket, "MaxKeys": 1000})
        assert _empty_late_buckets(clients, "s", both, steps.append)
        cfn_stub.add_response("list_stack_resources", resources())
        with pytest.raises(OperationError) as foreign:
            _empty_late_buckets(clients, "s", both, steps.append)
    assert_lines_say(steps, ["stack s", "DELETE_FAILED", "b1", "b2", "retry"])
    assert str(foreign.value).endswith("; bucket b1, b2 is not a resource of stack s: left alone")


def test_a_stack_read_fails_with_the_error_even_without_a_message() -> None:
    """A client error CloudFormation sent without a Message is raised as it is (not a
    TypeError from reading it); an empty answer reads as no stack."""

    class Throttled:
        def describe_stacks(self, StackName: str) -> Any:
            raise ClientError({"Error": {"Code": "Throttling"}}, "DescribeStacks")

    with pytest.raises(ClientError, match="Throttling"):
        stack_status(Clients(REGION, aws_factory=lambda service: Throttled()), "s")
    with pytest.raises(ClientError, match="Throttling"):
        _stack(Throttled(), "s")
    cfn = stubbed_client("cloudformation")
    with Stubber(cfn) as stub:
        stub.add_response("describe_stacks", {"Stacks": []})
        stub.add_response("describe_stacks", {"Stacks": []})
        assert stack_status(Clients(REGION, aws_factory=lambda service: cfn), "s") is None
        assert _stack(cfn, "s") is None
