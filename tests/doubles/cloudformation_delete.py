"""A thin double of CloudFormation's DELETE_FAILED on a bucket that is not empty: moto's
DeleteStack raises on such a bucket and drops the stack instead of keeping it DELETE_FAILED with
an event naming the bucket. The buckets and their objects stay moto's.

Also the DELETE_IN_PROGRESS moto never shows (it deletes at once): a stack named in
``deleting`` answers DescribeStacks with DELETE_IN_PROGRESS that many times, with a resource
event to show meanwhile. Mixed into the teardown tests' World
(tests/support/teardown_world.py), whose botocore event hooks call these handlers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError


class DeleteFailedStacks:
    """The handlers; the state they read and write is the World's (set in its ``__init__``)."""

    deliveries_at_delete: int  # DeleteStacks at which a late access log lands first
    blame: str | None  # the bucket the DELETE_FAILED event names, if not that one
    failed: dict[str, str]  # stack id -> bucket its deletion failed on
    deleting: dict[str, int]  # stack name -> DELETE_IN_PROGRESS answers still to give
    _in_progress: dict[str, int]  # stack id -> DELETE_IN_PROGRESS answers so far
    plain: Callable[[str], Any]  # a client of the test's own, by service

    def _delete_stack_call(self, context: dict[str, Any], **_: Any) -> Any:
        cfn = self.plain("cloudformation")  # not recorded
        s3 = self.plain("s3")
        try:
            stack = cfn.describe_stacks(StackName=context["stack_name"])["Stacks"][0]
        except ClientError:
            return None  # moto answers for a stack that does not exist
        stack_id = stack["StackId"]
        resources = cfn.list_stack_resources(StackName=stack_id)["StackResourceSummaries"]
        buckets = [r for r in resources if r["ResourceType"] == "AWS::S3::Bucket"]
        if buckets and self.deliveries_at_delete:
            self.deliveries_at_delete -= 1
            late = next(b for b in buckets if b["LogicalResourceId"] == "AccessLogs")
            s3.put_object(Bucket=late["PhysicalResourceId"], Key="s3-access/late", Body=b"log")
        full = [
            b["PhysicalResourceId"]
            for b in buckets
            if s3.list_object_versions(Bucket=b["PhysicalResourceId"]).get("Versions")
            or s3.list_object_versions(Bucket=b["PhysicalResourceId"]).get("DeleteMarkers")
        ]
        if not full:
            self.failed.pop(stack_id, None)
            return None  # moto deletes the stack and its (empty) buckets
        self.failed[stack_id] = self.blame or full[0]
        return AWSResponse("", 200, {}, None), {"ResponseMetadata": {"HTTPStatusCode": 200}}

    def _failed_status(self, parsed: dict[str, Any], **_: Any) -> None:
        for stack in parsed.get("Stacks", []):
            answered = self._in_progress.pop(stack["StackId"], 0)
            if stack["StackId"] in self.failed:
                stack["StackStatus"] = "DELETE_FAILED"
                stack["StackStatusReason"] = "The following resource(s) failed to delete: [...]"
            elif stack["StackStatus"] == "DELETE_COMPLETE" and self.deleting.get(
                stack["StackName"]
            ):
                self.deleting[stack["StackName"]] -= 1
                stack["StackStatus"] = "DELETE_IN_PROGRESS"
                self._in_progress[stack["StackId"]] = answered + 1

    def _failed_events(self, parsed: dict[str, Any], **_: Any) -> None:
        events = parsed.get("StackEvents") or []
        answered = events and self._in_progress.get(events[0]["StackId"])
        if answered:  # the stack's own event first; its resources' from the second answer on
            stack = {"StackId": events[0]["StackId"], "LogicalResourceId": "stack"}
            topic = {
                **stack,
                "LogicalResourceId": "Topic",
                "ResourceType": "AWS::SNS::Topic",
                "ResourceStatus": "DELETE_IN_PROGRESS",
            }
            parsed["StackEvents"] = [
                *([topic] if answered > 1 else []),
                {
                    **stack,
                    "ResourceType": "AWS::CloudFormation::Stack",
                    "ResourceStatus": "DELETE_IN_PROGRESS",
                    "ResourceStatusReason": "User Initiated",
                },
                *events,
            ]
            return
        if not events or events[0]["StackId"] not in self.failed:
            return
        stack_id, bucket = events[0]["StackId"], self.failed[events[0]["StackId"]]
        stack = {"StackId": stack_id, "ResourceType": "AWS::CloudFormation::Stack"}
        parsed["StackEvents"] = [
            {**stack, "LogicalResourceId": "stack", "ResourceStatus": "DELETE_FAILED"},
            {
                "StackId": stack_id,
                "LogicalResourceId": "AccessLogs",
                "PhysicalResourceId": bucket,
                "ResourceType": "AWS::S3::Bucket",
                "ResourceStatus": "DELETE_FAILED",
                "ResourceStatusReason": "The bucket you tried to delete is not empty (Service: "
                "S3, Status Code: 409, Error Code: BucketNotEmpty)",
            },
            {**stack, "LogicalResourceId": "stack", "ResourceStatus": "DELETE_IN_PROGRESS"},
            *events,
        ]
