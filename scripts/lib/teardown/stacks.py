"""Deleting the stacks: one at a time or a wave side by side, each wait showing its status and
latest event; a DELETE_FAILED names what failed, and one on a bucket that a late access log
filled is emptied and retried once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError

from scripts.lib.clients import Clients
from scripts.lib.errors import OperationError
from scripts.lib.progress import Show, wait_for
from scripts.lib.teardown.leftovers import stack_resources
from scripts.lib.teardown.model import Log, Timeouts

S3_BATCH = 1000  # the most keys one DeleteObjects takes


def stack_status(clients: Clients, name: str) -> str | None:
    try:
        stacks = clients.aws("cloudformation").describe_stacks(StackName=name)["Stacks"]
    except ClientError as exc:
        if "does not exist" in exc.response["Error"].get("Message", ""):
            return None
        raise
    status = stacks[0]["StackStatus"] if stacks else None
    return None if status == "DELETE_COMPLETE" else status


def _stack(cfn: Any, ref: str) -> dict[str, Any] | None:
    """The stack by name or id; None when it no longer exists."""
    try:
        stacks = cfn.describe_stacks(StackName=ref)["Stacks"]
    except ClientError as exc:
        if "does not exist" in exc.response["Error"].get("Message", ""):
            return None
        raise
    return stacks[0] if stacks else None


def _events_of_this_delete(cfn: Any, stack_id: str) -> list[dict[str, Any]]:
    """The stack's events (newest first) back to the start of the current deletion."""
    events = cfn.describe_stack_events(StackName=stack_id)["StackEvents"]
    found = []
    for event in events:
        found.append(event)
        is_stack = event.get("ResourceType") == "AWS::CloudFormation::Stack"
        if is_stack and event.get("ResourceStatus") == "DELETE_IN_PROGRESS":
            break
    return found


def _describe_event(event: dict[str, Any]) -> str:
    reason = event.get("ResourceStatusReason") or ""
    text = f"{event['LogicalResourceId']} {event.get('ResourceStatus', '')}"
    return f"{text}: {reason}" if reason else text


def delete_failure(name: str, stack: dict[str, Any], events: list[dict[str, Any]]) -> str:
    """Which resources failed to delete, and why, from the events of this deletion."""
    failed = [
        e
        for e in events
        if e.get("ResourceStatus") == "DELETE_FAILED"
        and e.get("ResourceType") != "AWS::CloudFormation::Stack"
    ]
    if not failed:
        reason = stack.get("StackStatusReason") or "no reason given"
        return f"stack {name}: {stack['StackStatus']} ({reason}); fix it and re-run teardown"
    parts = [
        f"{e['LogicalResourceId']} ({e.get('ResourceType', '?')} "
        f"{e.get('PhysicalResourceId') or '-'}): {e.get('ResourceStatusReason') or 'no reason'}"
        for e in failed
    ]
    return (
        f"stack {name}: DELETE_FAILED; failed to delete {'; '.join(parts)}. Remove what holds it "
        "(or delete it by hand) and re-run teardown"
    )


class DeleteFailed(OperationError):
    """A stack deletion that ended DELETE_FAILED; the message names what failed and why."""

    def __init__(self, name: str, stack: dict[str, Any], events: list[dict[str, Any]]) -> None:
        super().__init__(delete_failure(name, stack, events))
        self.stack = stack
        self.events = events  # of this deletion, newest first


def not_empty_buckets(events: list[dict[str, Any]]) -> list[str]:
    """The buckets a deletion failed on because they were not empty (S3 access logs arrive
    minutes late: one can land after the auto-delete custom resource emptied the bucket)."""
    found = []
    for e in events:
        reason = e.get("ResourceStatusReason") or ""
        if (
            e.get("ResourceStatus") == "DELETE_FAILED"
            and e.get("ResourceType") == "AWS::S3::Bucket"
            and ("not empty" in reason or "BucketNotEmpty" in reason)
            and e.get("PhysicalResourceId")
            and e["PhysicalResourceId"] not in found
        ):
            found.append(e["PhysicalResourceId"])
    return found


def empty_bucket(s3: Any, bucket: str) -> int:
    """Delete every object version and delete marker, a page of at most S3_BATCH at a time
    (the most DeleteObjects takes), until a listing comes back empty; the count deleted."""
    deleted = 0
    while True:
        page = s3.list_object_versions(Bucket=bucket, MaxKeys=S3_BATCH)
        keys = [
            {"Key": v["Key"], "VersionId": v["VersionId"]}
            for v in page.get("Versions", []) + page.get("DeleteMarkers", [])
        ]
        if not keys:
            return deleted
        errors = s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True}).get(
            "Errors"
        )
        if errors:
            first = errors[0]
            raise OperationError(
                f"emptying bucket {bucket}: {len(errors)} objects not deleted, e.g. "
                f"{first.get('Key')}: {first.get('Code')} {first.get('Message', '')}".rstrip()
            )
        deleted += len(keys)


def _empty_late_buckets(clients: Clients, name: str, failed: DeleteFailed, log: Log) -> bool:
    """Empty the not-empty buckets the failed deletion names, when each is a resource of this
    stack (one of this environment's, by exact name); True when there was one to empty."""
    stack_id = failed.stack["StackId"]
    named = not_empty_buckets(failed.events)
    if not named:
        return False
    ours = {
        r.get("PhysicalResourceId")
        for r in stack_resources(clients, stack_id)
        if r["ResourceType"] == "AWS::S3::Bucket"
    }
    foreign = [b for b in named if b not in ours]
    if foreign:
        raise OperationError(
            f"{failed}; bucket {', '.join(foreign)} is not a resource of stack {name}: left alone"
        )
    s3 = clients.aws("s3")
    emptied = []
    for bucket in named:
        try:
            emptied.append(f"{bucket} ({empty_bucket(s3, bucket)} object versions)")
        except ClientError as exc:
            raise OperationError(
                f"{failed}; could not empty bucket {bucket}: {exc.response['Error']['Code']}"
            ) from None
    log(
        f"stack {name}: DELETE_FAILED on a bucket that was not empty (late access-log "
        f"deliveries); emptied {', '.join(emptied)}; retrying the delete once"
    )
    return True


def _delete_stack(
    clients: Clients,
    name: str,
    t: Timeouts,
    log: Log,
    show: Show,
) -> None:
    """DeleteStack, then poll until it is gone, showing the status and the latest event. A
    deletion that fails on a bucket that is not empty (a late access-log delivery) empties that
    bucket (only a resource of this stack) and is retried once."""
    cfn = clients.aws("cloudformation")
    stack = _stack(cfn, name)
    if stack is None:  # by name, a deleted stack "does not exist"
        log(f"stack {name}: not found, skipped")
        return
    stack_id = stack["StackId"]  # by id, the stack still answers once it is deleted

    def gone() -> tuple[bool, str]:
        now = _stack(cfn, stack_id)
        if now is None or now["StackStatus"] == "DELETE_COMPLETE":
            return True, "DELETE_COMPLETE"
        if now["StackStatus"] == "DELETE_FAILED":
            raise DeleteFailed(name, now, _events_of_this_delete(cfn, stack_id))
        events = _events_of_this_delete(cfn, stack_id)
        latest = next(
            (e for e in events if e.get("ResourceType") != "AWS::CloudFormation::Stack"), None
        )
        return False, now["StackStatus"] + (
            f"; latest: {_describe_event(latest)}" if latest else ""
        )

    for attempt in (1, 2):
        cfn.delete_stack(StackName=name)
        log(f"stack {name}: delete requested (was {stack['StackStatus']})")
        try:
            wait_for(f"stack {name} to delete", gone, t.stack_s, t.interval_s, show)
            break
        except DeleteFailed as failed:
            if attempt == 2 or not _empty_late_buckets(clients, name, failed, log):
                raise
            stack = failed.stack
    log(f"stack {name}: deleted")


def _delete_wave(clients: Clients, names: list[str], t: Timeouts, log: Log, show: Show) -> None:
    """The stacks of one wave in parallel (none depends on another); errors surface after all
    have finished, so a re-run finds the wave as far as it got."""
    if len(names) == 1:
        _delete_stack(clients, names[0], t, log, show)
        return
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        futures = [pool.submit(_delete_stack, clients, name, t, log, show) for name in names]
    for future in futures:
        future.result()
