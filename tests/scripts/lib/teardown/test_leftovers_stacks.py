"""The stacks and account-wide leftovers teardown reads: the live stacks' ids (each naming its
last deletion), a nested stack's resources listed with its parent's, and the log group and
volumes HyperPod leaves in the account, each named once.

Doubles: moto (EC2, CloudFormation, Logs) through ``World``; botocore's Stubber for answers moto
cannot give (each test says which)."""

from typing import Any

from botocore.stub import Stubber

from scripts.lib.clients import Clients
from scripts.lib.teardown.leftovers import (
    account_leftovers,
    stack_ids,
    stack_resources,
)
from scripts.lib.teardown.model import Item
from tests.support.config import make_cfg
from tests.support.teardown_world import ENV, PREFIX, REGION, env_cfg, stubbed_client


def test_the_stack_ids_are_the_live_ones_and_each_names_last_deletion() -> None:
    """Stubber: ListStacks keeps deleted stacks; per name, the one deleted last (by
    DeletionTime, else CreationTime; the first of a tie) is the one whose log groups count."""

    cfn = stubbed_client("cloudformation")
    a, b, live = (f"{PREFIX}-{suffix}" for suffix in ("kvcache", "addons", "network"))

    def summary(name: str, id_: str, status: str, created: str, deleted: str = "") -> Any:
        found = {
            "StackName": name,
            "StackId": id_,
            "StackStatus": status,
            "CreationTime": f"2026-12-01T{created}:00Z",
        }
        return {**found, "DeletionTime": f"2026-12-01T{deleted}:00Z"} if deleted else found

    done = "DELETE_COMPLETE"
    summaries = [
        summary("someone-elses", "x", "CREATE_COMPLETE", "09:00"),
        summary(live, "live", "UPDATE_COMPLETE", "09:00"),
        summary(a, "a1", done, "09:00", "10:00"),
        summary(a, "a2", done, "09:00", "12:00"),
        summary(a, "a3", done, "09:00", "11:00"),
        summary(a, "a4", done, "09:00", "12:00"),
        summary(b, "b1", done, "10:00"),
        summary(b, "b2", done, "11:00"),
    ]
    with Stubber(cfn) as stub:
        stub.add_response("list_stacks", {"StackSummaries": summaries}, {})
        found = stack_ids(Clients(REGION, aws_factory=lambda service: cfn), env_cfg())
    assert found == ["live", "a2", "b2"]


def test_a_nested_stacks_resources_are_listed_with_its_parents() -> None:

    cfn = stubbed_client("cloudformation")
    child = "arn:aws:cloudformation:us-west-2:111122223333:stack/child/1"

    def resource(logical: str, kind: str, physical: str = "") -> dict[str, Any]:
        found = {
            "LogicalResourceId": logical,
            "ResourceType": kind,
            "ResourceStatus": "CREATE_COMPLETE",
            "LastUpdatedTimestamp": "2026-12-01T10:00:00Z",
        }
        return {**found, "PhysicalResourceId": physical} if physical else found

    nested = "AWS::CloudFormation::Stack"
    parent = [
        resource("Fn", "AWS::Lambda::Function", "fn"),
        resource("Child", nested, child),
        resource("NotYet", nested),
        resource("Logs", "AWS::Logs::LogGroup", "/logs"),
    ]
    inner = [resource("Inner", "AWS::Lambda::Function", "inner")]
    with Stubber(cfn) as stub:
        stub.add_response(
            "list_stack_resources", {"StackResourceSummaries": parent}, {"StackName": "parent"}
        )
        stub.add_response(
            "list_stack_resources", {"StackResourceSummaries": inner}, {"StackName": child}
        )
        found = stack_resources(Clients(REGION, aws_factory=lambda service: cfn), "parent")
        stub.assert_no_pending_responses()
    assert [r["LogicalResourceId"] for r in found] == ["Fn", "Child", "Inner", "NotYet", "Logs"]


def test_account_leftovers_name_hyperpods_log_group_and_each_volume_once() -> None:
    """Stubber (exact requests): the HyperPod log group is under the configured cluster name;
    a volume both tagged for us and by the EBS CSI driver is listed once, with its size."""

    cfg = make_cfg(
        environment=ENV, eks={"cluster_name": "kv-eks"}, hyperpod={"cluster_name": "kv-hp"}
    )
    cfn, logs, ec2 = stubbed_client("cloudformation"), stubbed_client("logs"), stubbed_client("ec2")
    clients = Clients(
        REGION, aws_factory=lambda s: {"cloudformation": cfn, "logs": logs, "ec2": ec2}[s]
    )
    hyperpod = "arn:aws:sagemaker:us-west-2:111122223333:cluster/abc123"
    with Stubber(cfn) as cfn_stub, Stubber(logs) as logs_stub, Stubber(ec2) as ec2_stub:
        cfn_stub.add_response(
            "list_stacks",
            {
                "StackSummaries": [
                    {
                        "StackName": f"{PREFIX}-hyperpod",
                        "StackId": "hp",
                        "StackStatus": "CREATE_COMPLETE",
                        "CreationTime": "2026-12-01T09:00:00Z",
                    }
                ]
            },
        )
        cfn_stub.add_response(
            "list_stack_resources",
            {
                "StackResourceSummaries": [
                    {
                        "LogicalResourceId": "Cluster",
                        "ResourceType": "AWS::SageMaker::Cluster",
                        "PhysicalResourceId": hyperpod,
                        "ResourceStatus": "CREATE_COMPLETE",
                        "LastUpdatedTimestamp": "2026-12-01T10:00:00Z",
                    }
                ]
            },
        )
        for group in ("/aws/eks/kv-eks/cluster", "/aws/sagemaker/Clusters/kv-hp/abc123"):
            found = [{"logGroupName": group}] if "sagemaker" in group else []
            logs_stub.add_response(
                "describe_log_groups", {"logGroups": found}, {"logGroupNamePrefix": group}
            )
        available = {"Name": "status", "Values": ["available"]}
        ours = [
            {"Name": "tag:project", "Values": [cfg.project]},
            {"Name": "tag:environment", "Values": [ENV]},
        ]
        csi = {"Name": "tag-key", "Values": ["kubernetes.io/cluster/kv-eks"]}
        ec2_stub.add_response(
            "describe_volumes",
            {"Volumes": [{"VolumeId": "vol-1", "Size": 50}]},
            {"Filters": [available, *ours]},
        )
        ec2_stub.add_response(
            "describe_volumes",
            {"Volumes": [{"VolumeId": "vol-1", "Size": 50}, {"VolumeId": "vol-2", "Size": 20}]},
            {"Filters": [available, csi]},
        )
        items = account_leftovers(clients, cfg)
    assert items == [
        Item("log group", "/aws/sagemaker/Clusters/kv-hp/abc123"),
        Item("EBS volume", "vol-1", "50 GiB, available"),
        Item("EBS volume", "vol-2", "20 GiB, available"),
    ]
