"""What CloudFormation leaves and teardown sweeps: log groups named by the stacks' resources (also
after the stacks are gone), the VPC's GuardDuty endpoint and group, available and Lambda ENIs,
released volumes; what is gone or denied does not stop a re-run.

Doubles: moto (EC2, CloudFormation, Logs, Lambda) through ``World``; Lambda's ENIs get their type
and status on moto's model (``moto_eni``); botocore's Stubber plays a role that may not delete ENIs
and answers moto cannot give (each test says which)."""

from __future__ import annotations

import dataclasses
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from scripts.lib.clients import Clients
from scripts.lib.environment import stack_names
from scripts.lib.errors import OperationError
from scripts.lib.teardown.execute import execute_teardown
from scripts.lib.teardown.leftovers import (
    _release_lambda_enis,
    _sweep,
    lambda_enis,
    log_group_names,
    stack_ids,
    vpc_leftovers,
)
from scripts.lib.teardown.model import Item
from tests.support.logs import assert_lines_say
from tests.support.progress import FakeClock, plain
from tests.support.teardown_world import ENV, FAST, PREFIX, REGION, World, env_cfg, stubbed_client


def test_a_rerun_after_the_stacks_are_gone_reads_the_last_deleted_stack(world: World) -> None:
    """moto re-creates a deleted stack's resources (new physical ids) when they are listed, so
    this checks which stack ids teardown reads; AWS answers ListStackResources for a deleted
    stack by its id for 90 days."""
    cfn = boto3.client("cloudformation", region_name=REGION)
    live = {
        n: cfn.describe_stacks(StackName=n)["Stacks"][0]["StackId"] for n in stack_names(world.cfg)
    }
    for name in stack_names(world.cfg):
        cfn.delete_stack(StackName=name)
    assert sorted(stack_ids(world.clients, world.cfg)) == sorted(live.values())


def test_log_group_names_come_from_the_stack_resources() -> None:
    resources = [
        {"ResourceType": "AWS::Logs::LogGroup", "PhysicalResourceId": "/aws/vendedlogs/x"},
        {"ResourceType": "AWS::Lambda::Function", "PhysicalResourceId": "hyperpod-kvcache-test-F"},
        {"ResourceType": "AWS::EKS::Cluster", "PhysicalResourceId": "hyperpod-kvcache-test"},
        {
            "ResourceType": "AWS::SageMaker::Cluster",
            "PhysicalResourceId": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abc123",
        },
        {"ResourceType": "AWS::SNS::Topic", "PhysicalResourceId": "arn:aws:sns:x"},
        # Not created yet (no physical id): no group. A function named by its ARN: its name's
        # group. Another service's cluster ARN: no group.
        {"ResourceType": "AWS::Logs::LogGroup", "PhysicalResourceId": ""},
        {
            "ResourceType": "AWS::Lambda::Function",
            "PhysicalResourceId": "arn:aws:lambda:us-west-2:111122223333:function:hyperpod-G",
        },
        {
            "ResourceType": "AWS::ECS::Cluster",
            "PhysicalResourceId": "arn:aws:ecs:us-west-2:111122223333:cluster/other",
        },
    ]
    assert log_group_names(resources, "hp") == {
        "/aws/vendedlogs/x",
        "/aws/lambda/hyperpod-kvcache-test-F",
        "/aws/lambda/hyperpod-G",
        "/aws/eks/hyperpod-kvcache-test/cluster",
        "/aws/sagemaker/Clusters/hp/abc123",
    }


def test_a_denied_eni_delete_is_left_to_cloudformation() -> None:
    """Stubber: moto allows every call, so a role without ec2:DeleteNetworkInterface (the
    nightly role) cannot be played by it."""

    ec2 = boto3.client("ec2", region_name=REGION)
    steps: list[str] = []
    with Stubber(ec2) as stub:
        stub.add_client_error(
            "delete_network_interface",
            "UnauthorizedOperation",
            "not authorized",
            expected_params={"NetworkInterfaceId": "eni-1"},
        )
        stub.add_response("delete_volume", {}, {"VolumeId": "vol-1"})
        clients = Clients(REGION, aws_factory=lambda service: ec2)
        items = [Item("available ENI", "eni-1"), Item("EBS volume", "vol-1")]
        _sweep(clients, items, FAST, steps.append, False)
        stub.assert_no_pending_responses()
    assert_lines_say(
        steps,
        ["available ENI", "eni-1", "UnauthorizedOperation", "left to CloudFormation"],
        ["deleted", "EBS volume", "vol-1"],
    )
    with Stubber(ec2) as stub, pytest.raises(Exception, match="UnauthorizedOperation"):
        stub.add_client_error("delete_volume", "UnauthorizedOperation", "not authorized")
        _sweep(clients, [Item("EBS volume", "vol-1")], FAST, steps.append, False)


def test_a_lambda_eni_never_freed_stops_teardown_before_the_network_stack(
    world: World,
) -> None:
    world.lambda_frees_after = 10**6
    quick = dataclasses.replace(FAST, lambda_eni_s=0.3)
    with pytest.raises(OperationError, match="Lambda network interfaces to be freed") as failed:
        execute_teardown(world.clients, world.cfg, lambda _: None, quick, show=False)
    assert f"1 in use: {world.lambda_busy}" in str(failed.value)
    assert f"DeleteStack:{PREFIX}-eks" in world.timeline
    assert f"DeleteStack:{PREFIX}-network" not in world.timeline
    assert f"DeleteNetworkInterface:{world.lambda_busy}" not in world.timeline


def test_a_denied_lambda_eni_delete_waits_only_for_those_in_use() -> None:
    """Stubber: moto allows every call, so the nightly role (no ec2:DeleteNetworkInterface)
    cannot be played by it; Lambda deleting the in-use ENI itself is the second listing."""

    ec2 = boto3.client("ec2", region_name=REGION)
    vpcs = {"Vpcs": [{"VpcId": "vpc-1"}]}

    def enis(*states: tuple[str, str]) -> dict[str, Any]:
        return {
            "NetworkInterfaces": [
                {"NetworkInterfaceId": i, "Status": st, "InterfaceType": "lambda"}
                for i, st in states
            ]
        }

    steps: list[str] = []
    with Stubber(ec2) as stub:
        stub.add_response("describe_vpcs", vpcs)
        stub.add_response(
            "describe_network_interfaces", enis(("eni-1", "available"), ("eni-2", "in-use"))
        )
        stub.add_client_error(
            "delete_network_interface",
            "UnauthorizedOperation",
            "not authorized",
            expected_params={"NetworkInterfaceId": "eni-1"},
        )
        stub.add_response("describe_vpcs", vpcs)
        stub.add_response("describe_network_interfaces", enis(("eni-1", "available")))
        clients = Clients(REGION, aws_factory=lambda service: ec2)
        _release_lambda_enis(clients, env_cfg(), FAST, steps.append, False)
        stub.assert_no_pending_responses()
    assert_lines_say(
        steps,
        ["Lambda ENI", "eni-1", "UnauthorizedOperation", "left to CloudFormation"],
        ["Lambda ENIs", f"{PREFIX}-network", "1 in use", "eni-2", "waiting"],
    )


def test_a_leftover_that_is_already_gone_does_not_stop_a_rerun() -> None:
    """Stubber: a re-run, or CloudFormation's own cleanup, may have removed a leftover between
    the plan and its deletion; each service's not-found code is "already gone", not a failure.
    A security group still held by an endpoint's ENIs is retried until it is free."""

    ec2, logs = boto3.client("ec2", region_name=REGION), boto3.client("logs", region_name=REGION)
    gone = [
        (
            "GuardDuty VPC endpoint",
            "vpce-1",
            "delete_vpc_endpoints",
            "InvalidVpcEndpointId.NotFound",
            {"VpcEndpointIds": ["vpce-1"]},
        ),
        (
            "available ENI",
            "eni-1",
            "delete_network_interface",
            "InvalidNetworkInterfaceID.NotFound",
            {"NetworkInterfaceId": "eni-1"},
        ),
        (
            "GuardDuty security group",
            "sg-1",
            "delete_security_group",
            "InvalidGroup.NotFound",
            {"GroupId": "sg-1"},
        ),
        ("EBS volume", "vol-1", "delete_volume", "InvalidVolume.NotFound", {"VolumeId": "vol-1"}),
    ]
    steps: list[str] = []
    with Stubber(ec2) as ec2_stub, Stubber(logs) as logs_stub:
        for _kind, _id, operation, code, params in gone:
            ec2_stub.add_client_error(operation, code, "gone", expected_params=params)
        logs_stub.add_client_error(
            "delete_log_group",
            "ResourceNotFoundException",
            "gone",
            expected_params={"logGroupName": "/aws/x"},
        )
        clients = Clients(REGION, aws_factory=lambda s: {"ec2": ec2, "logs": logs}[s])
        items = [Item(kind, id_) for kind, id_, *_ in gone] + [Item("log group", "/aws/x")]
        _sweep(clients, items, FAST, steps.append, False)
        ec2_stub.assert_no_pending_responses()
    assert_lines_say(
        steps,
        *[[kind, id_, "already gone"] for kind, id_, *_ in gone[:3]],
        ["log group", "/aws/x", "already gone"],
        ["EBS volume", "vol-1", "already gone"],
    )

    steps.clear()
    with Stubber(ec2) as stub:
        for _ in range(2):
            stub.add_client_error(
                "delete_security_group",
                "DependencyViolation",
                "in use",
                expected_params={"GroupId": "sg-1"},
            )
        stub.add_response("delete_security_group", {}, {"GroupId": "sg-1"})
        _sweep(clients, [Item("GuardDuty security group", "sg-1")], FAST, steps.append, False)
        stub.assert_no_pending_responses()
    assert_lines_say(steps, ["deleted", "GuardDuty security group", "sg-1"])


def test_an_endpoint_deletion_is_read_from_its_answer_not_only_its_errors() -> None:
    """Stubber (moto's DeleteVpcEndpoints never lists an unsuccessful endpoint): EC2 answers 200
    and lists each endpoint it did not delete. Not found there is "already gone"; any other
    error stops the sweep with EC2's code and message instead of reporting it deleted."""

    ec2 = boto3.client("ec2", region_name=REGION)
    clients = Clients(REGION, aws_factory=lambda service: ec2)
    params = {"VpcEndpointIds": ["vpce-1"]}

    def unsuccessful(code: str, message: str) -> dict[str, Any]:
        error = {"Code": code, "Message": message}
        return {"Unsuccessful": [{"Error": error, "ResourceId": "vpce-1"}]}

    steps: list[str] = []
    endpoint = [Item("GuardDuty VPC endpoint", "vpce-1")]
    with Stubber(ec2) as stub:
        for answer in (
            {"Unsuccessful": []},
            unsuccessful("InvalidVpcEndpoint.NotFound", "does not exist"),
            unsuccessful("OperationNotPermitted", "owned by GuardDuty"),
        ):
            stub.add_response("delete_vpc_endpoints", answer, params)
        _sweep(clients, endpoint, FAST, steps.append, False)
        _sweep(clients, endpoint, FAST, steps.append, False)
        with pytest.raises(ClientError) as refused:
            _sweep(clients, endpoint, FAST, steps.append, False)
        stub.assert_no_pending_responses()
    assert_lines_say(
        steps,
        ["deleted", "GuardDuty VPC endpoint", "vpce-1"],
        ["GuardDuty VPC endpoint", "vpce-1", "already gone"],
    )
    assert str(refused.value) == (
        "An error occurred (OperationNotPermitted) when calling the DeleteVpcEndpoints operation: "
        "owned by GuardDuty"
    )


def test_lambda_enis_are_found_in_every_vpc_of_the_environment() -> None:
    """Stubber: two VPCs carry this environment's tags (one left by an earlier deploy);
    Lambda's ENIs in both count, found by type or by description, nothing else."""

    ec2 = stubbed_client("ec2")
    by_type = {"NetworkInterfaceId": "eni-1", "InterfaceType": "lambda", "Status": "in-use"}
    by_description = {
        "NetworkInterfaceId": "eni-2",
        "Status": "available",
        "Description": "AWS Lambda VPC ENI-kvcache-Provider",
    }
    other = {"NetworkInterfaceId": "eni-3", "Status": "available", "Description": "a Pod's"}
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_vpcs",
            {"Vpcs": [{"VpcId": "vpc-1"}, {"VpcId": "vpc-2"}]},
            {
                "Filters": [
                    {"Name": "tag:project", "Values": ["hyperpod-kvcache"]},
                    {"Name": "tag:environment", "Values": [ENV]},
                ]
            },
        )
        for vpc, enis in (("vpc-1", [by_type, other]), ("vpc-2", [by_description])):
            stub.add_response(
                "describe_network_interfaces",
                {"NetworkInterfaces": enis},
                {"Filters": [{"Name": "vpc-id", "Values": [vpc]}]},
            )
        found = lambda_enis(Clients(REGION, aws_factory=lambda s: ec2), env_cfg())
        stub.assert_no_pending_responses()
    assert [e["NetworkInterfaceId"] for e in found] == ["eni-1", "eni-2"]


def test_lambda_enis_are_released_past_one_in_use_or_already_gone() -> None:
    """Stubber: the available ENIs after an in-use one are still deleted, one Lambda deleted
    first (not found) is passed over, and the wait says which ENIs hold it, on the reporter."""

    ec2 = stubbed_client("ec2")
    vpcs = {"Vpcs": [{"VpcId": "vpc-1"}]}
    listed = [
        ("eni-1", "in-use"),
        ("eni-2", "in-use"),
        ("eni-3", "available"),
        ("eni-4", "available"),
    ]
    enis = {
        "NetworkInterfaces": [
            {"NetworkInterfaceId": i, "Status": st, "InterfaceType": "lambda"} for i, st in listed
        ]
    }
    reporter, out = plain(FakeClock())
    steps: list[str] = []
    with Stubber(ec2) as stub:
        stub.add_response("describe_vpcs", vpcs)
        stub.add_response("describe_network_interfaces", enis)
        stub.add_client_error(
            "delete_network_interface",
            "InvalidNetworkInterfaceID.NotFound",
            "gone",
            expected_params={"NetworkInterfaceId": "eni-3"},
        )
        stub.add_response("delete_network_interface", {}, {"NetworkInterfaceId": "eni-4"})
        stub.add_response("describe_vpcs", vpcs)
        stub.add_response("describe_network_interfaces", {"NetworkInterfaces": []})
        clients = Clients(REGION, aws_factory=lambda service: ec2)
        timeouts = dataclasses.replace(FAST, lambda_eni_s=7)
        _release_lambda_enis(clients, env_cfg(), timeouts, steps.append, reporter)
        stub.assert_no_pending_responses()
    assert_lines_say(
        steps,
        ["deleted", "Lambda ENI", "eni-4"],
        ["Lambda ENIs", f"{PREFIX}-network", "2 in use", "eni-1, eni-2", "waiting"],
    )
    # The wait on the reporter: what it waits for, with its own timeout, and when it ended.
    assert_lines_say(
        out.getvalue(),
        ["waiting", "Lambda network interfaces", "7s"],
        ["Lambda network interfaces", "done"],
    )


def test_a_security_group_in_use_is_waited_for_on_the_reporter() -> None:
    """Stubber: the sweep's wait for a GuardDuty security group reports on the caller's
    reporter, with the sweep's own timeout."""

    ec2 = stubbed_client("ec2")
    reporter, out = plain(FakeClock())
    with Stubber(ec2) as stub:
        stub.add_client_error(
            "delete_security_group",
            "DependencyViolation",
            "in use",
            expected_params={"GroupId": "sg-1"},
        )
        stub.add_response("delete_security_group", {}, {"GroupId": "sg-1"})
        clients = Clients(REGION, aws_factory=lambda service: ec2)
        timeouts = dataclasses.replace(FAST, sweep_s=7)
        _sweep(
            clients, [Item("GuardDuty security group", "sg-1")], timeouts, lambda _: None, reporter
        )
        stub.assert_no_pending_responses()
    assert_lines_say(
        out.getvalue(), ["waiting", "security group sg-1", "7s"], ["security group sg-1", "done"]
    )


def test_vpc_leftovers_are_asked_for_by_exact_filters() -> None:
    """Stubber (exact requests): EC2 rejects a filter name it does not know, which moto
    ignores; these are the filters that keep the sweep to this VPC's available ENIs and
    GuardDuty's security group."""

    ec2 = stubbed_client("ec2")
    in_vpc = {"Name": "vpc-id", "Values": ["vpc-1"]}
    with Stubber(ec2) as stub:
        stub.add_response("describe_vpcs", {"Vpcs": [{"VpcId": "vpc-1"}]})
        stub.add_response("describe_vpc_endpoints", {"VpcEndpoints": []}, {"Filters": [in_vpc]})
        available = {"Name": "status", "Values": ["available"]}
        enis = {"NetworkInterfaces": [{"NetworkInterfaceId": "eni-1"}]}
        stub.add_response("describe_network_interfaces", enis, {"Filters": [in_vpc, available]})
        group = {"Name": "group-name", "Values": ["GuardDutyManagedSecurityGroup*"]}
        groups = {"SecurityGroups": [{"GroupId": "sg-1"}]}
        stub.add_response("describe_security_groups", groups, {"Filters": [in_vpc, group]})
        found = vpc_leftovers(Clients(REGION, aws_factory=lambda s: ec2), env_cfg())
        stub.assert_no_pending_responses()
    assert found == [
        Item("available ENI", "eni-1", "vpc-1"),
        Item("GuardDuty security group", "sg-1", "vpc-1"),
    ]
