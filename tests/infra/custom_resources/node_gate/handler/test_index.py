"""Node readiness gate handler (infra/custom_resources/node_gate/handler).

Doubles, and why:
- botocore's Stubber on a real SageMaker client for the states in between: moto 5.2 creates every
  node Running at once and keeps CurrentCount == TargetCount, so it cannot show a group that is
  still filling up, a Pending or failed node, a failed cluster or throttling. The Stubber also
  checks each request against botocore's service model (MaxResults, NextToken).
- moto 5.2 (mock_aws) for the end-to-end happy path: it implements DescribeCluster and
  ListClusterNodes with moto's own response shapes. Its ListClusterNodes paging is broken (it
  answers every page with the first page and the same NextToken; a canary below pins that), so
  paging is tested with the Stubber, and against moto only one page is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from infra.custom_resources.node_gate.handler import index, nodes
from infra.custom_resources.node_gate.handler.nodes import GateError
from tests.support.logs import assert_lines_say

CLUSTER = "hp-test"
NOW = 1_800_000_000.0
REGION = "us-west-2"


def event(kind: str = "Create", started: float | None = NOW, **extra: Any) -> dict[str, Any]:
    e: dict[str, Any] = {
        "RequestType": kind,
        "LogicalResourceId": "NodesReadyGate",
        "ResourceProperties": {"ClusterName": CLUSTER, "Fingerprint": "abc"},
    }
    if started is not None:
        e[index.STARTED_AT] = started
    return {**e, **extra}


def describe(status: str = "InService", **groups: tuple[int, int]) -> dict[str, Any]:
    return {
        "ClusterArn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef123456",
        "ClusterName": CLUSTER,
        "ClusterStatus": status,
        "InstanceGroups": [
            {"InstanceGroupName": name, "CurrentCount": current, "TargetCount": target}
            for name, (current, target) in groups.items()
        ],
        "FailureMessage": "capacity error" if status == "Failed" else "",
    }


def node(group: str, i: int, status: str = "Running") -> dict[str, Any]:
    return {
        "InstanceGroupName": group,
        "InstanceId": f"i-{group}{i:015d}"[:19],
        "InstanceType": "ml.g6e.4xlarge",
        "LaunchTime": NOW,
        "InstanceStatus": {"Status": status, "Message": "lifecycle script running"},
    }


@pytest.fixture(scope="module")
def session() -> Any:
    return botocore.session.get_session()


@pytest.fixture
def stub(session: Any) -> Iterator[tuple[Any, Stubber]]:
    client = session.create_client(
        "sagemaker",
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def queue(stubber: Stubber, desc: dict[str, Any], *pages: list[dict[str, Any]]) -> None:
    stubber.add_response("describe_cluster", desc, {"ClusterName": CLUSTER})
    for i, page in enumerate(pages):
        params: dict[str, Any] = {"ClusterName": CLUSTER, "MaxResults": nodes.PAGE_SIZE}
        if i:
            params["NextToken"] = f"t{i}"
        response: dict[str, Any] = {"ClusterNodeSummaries": page}
        if i < len(pages) - 1:
            response["NextToken"] = f"t{i + 1}"
        stubber.add_response("list_cluster_nodes", response, params)


def test_on_event_create_makes_no_call_and_records_the_start(
    stub: tuple[Any, Stubber],
) -> None:
    client, _ = stub
    answer = index.on_event(event(started=None), None, client=client, now=NOW)
    assert answer == {"PhysicalResourceId": f"nodes-ready:{CLUSTER}", index.STARTED_AT: NOW}


def test_ready_when_every_group_is_at_target_and_running(stub: tuple[Any, Stubber]) -> None:
    client, stubber = stub
    queue(
        stubber,
        describe(gpu=(2, 2), system=(1, 1)),
        [node("gpu", 0), node("system", 0)],
        [node("gpu", 1)],  # second page: paging is followed
    )
    assert index.is_complete(event(), None, client=client, now=NOW + 60) == {"IsComplete": True}


@pytest.mark.parametrize(
    ("groups", "nodes_", "why"),
    [
        ({"gpu": (1, 2), "system": (1, 1)}, [node("gpu", 0), node("system", 0)], "count short"),
        (
            {"gpu": (2, 2), "system": (1, 1)},
            [node("gpu", 0), node("gpu", 1, "Pending"), node("system", 0)],
            "a node Pending",
        ),
        (
            {"gpu": (2, 2), "system": (1, 1)},
            [node("gpu", 0), node("gpu", 1), node("system", 0, "DeepHealthCheckInProgress")],
            "a node in deep health check",
        ),
        ({"gpu": (2, 2), "system": (1, 1)}, [node("gpu", 0), node("system", 0)], "node unlisted"),
    ],
)
def test_not_ready_until_counts_and_statuses(
    stub: tuple[Any, Stubber], groups: dict[str, tuple[int, int]], nodes_: Any, why: str
) -> None:
    client, stubber = stub
    queue(stubber, describe(**groups), nodes_)
    assert index.is_complete(event(), None, client=client, now=NOW + 60) == {"IsComplete": False}


def test_timeout_message_names_groups_counts_statuses_and_the_command(
    stub: tuple[Any, Stubber], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, stubber = stub
    monkeypatch.setenv(index.DEADLINE_ENV, "600")
    queue(
        stubber,
        describe(gpu=(1, 2), system=(1, 1)),
        [node("gpu", 0, "Pending"), node("system", 0)],
    )
    with pytest.raises(GateError) as raised:
        index.is_complete(event(), None, client=client, now=NOW + 601)
    message = str(raised.value)
    assert "Timed out after 10 minutes" in message
    assert "group 'gpu': 1/2 instances (Pending=1)" in message
    assert "group 'system': 1/1 instances (Running=1)" in message
    assert f"aws sagemaker list-cluster-nodes --cluster-name {CLUSTER}" in message
    assert "\n" not in message


def test_the_deadline_itself_times_out_and_a_transient_error_is_named(
    stub: tuple[Any, Stubber], monkeypatch: pytest.MonkeyPatch
) -> None:
    """At exactly the deadline the gate gives up, and when the last poll was throttled the line
    says so (the whole line CloudFormation shows)."""
    client, stubber = stub
    monkeypatch.setenv(index.DEADLINE_ENV, "2400")
    stubber.add_client_error("describe_cluster", "ThrottlingException", "slow down")
    with pytest.raises(GateError) as raised:
        index.is_complete(event(), None, client=client, now=NOW + 2400)
    assert str(raised.value) == (
        f"Timed out after 40 minutes waiting for the nodes of HyperPod cluster '{CLUSTER}' to be "
        "Running; last state: DescribeCluster: ThrottlingException (a transient error; retried on "
        f"every poll). Inspect: {nodes.inspect_command(CLUSTER)} (InstanceStatus.Message says why "
        "a node is not Running), then deploy again."
    )


def test_is_complete_uses_its_own_client_and_clock_as_the_provider_calls_it(
    stub: tuple[Any, Stubber], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, stubber = stub
    monkeypatch.setenv(index.DEADLINE_ENV, "60")
    monkeypatch.setattr(index, "sagemaker_client", lambda: client)
    monkeypatch.setattr(index.time, "time", lambda: NOW + 61)
    queue(stubber, describe(gpu=(0, 1)), [])
    with pytest.raises(GateError, match="Timed out after 1 minutes"):
        index.is_complete(event(), None)


def test_each_poll_logs_the_cluster_and_what_it_saw(
    stub: tuple[Any, Stubber], caplog: pytest.LogCaptureFixture
) -> None:
    """The function's log is how an operator follows the wait in CloudWatch."""
    client, stubber = stub
    caplog.set_level("INFO", logger=index.log.name)
    queue(stubber, describe(gpu=(1, 1)), [node("gpu", 0)])
    index.is_complete(event(), None, client=client, now=NOW + 60)
    stubber.add_client_error("describe_cluster", "ThrottlingException", "slow down")
    index.is_complete(event(), None, client=client, now=NOW + 120)
    index.on_event(event(), None, client=client, now=NOW)
    # Each poll: the cluster, each group's instances against its target and their states; a
    # failed read: the call, the service's code and that the next poll tries again; each request:
    # its kind and properties.
    assert_lines_say(
        [r.getMessage() for r in caplog.records],
        [CLUSTER, "gpu", "1/1", "Running=1"],
        [CLUSTER, "DescribeCluster", "ThrottlingException", "next poll"],
        ["Create", CLUSTER, "abc"],
    )


def test_a_poll_needs_the_cluster_name(stub: tuple[Any, Stubber]) -> None:
    client, _ = stub
    with pytest.raises(GateError) as raised:
        index.is_complete({**event(), "ResourceProperties": {}}, None, client=client, now=NOW)
    assert str(raised.value) == (
        "ClusterName is empty: the node gate needs the HyperPod cluster's name"
    )


def test_failed_cluster_fails_at_once(stub: tuple[Any, Stubber]) -> None:
    client, stubber = stub
    stubber.add_response(
        "describe_cluster", describe("Failed", gpu=(0, 2)), {"ClusterName": CLUSTER}
    )
    with pytest.raises(GateError, match="is Failed \\(capacity error\\)"):
        index.is_complete(event(), None, client=client, now=NOW + 60)


def test_throttling_is_tried_again_on_the_next_poll(stub: tuple[Any, Stubber]) -> None:
    client, stubber = stub
    stubber.add_client_error("describe_cluster", "ThrottlingException", "slow down")
    assert index.is_complete(event(), None, client=client, now=NOW + 60) == {"IsComplete": False}


def test_access_denied_names_the_permission(stub: tuple[Any, Stubber]) -> None:
    client, stubber = stub
    stubber.add_response("describe_cluster", describe(gpu=(1, 1)), {"ClusterName": CLUSTER})
    stubber.add_client_error("list_cluster_nodes", "AccessDeniedException", "not authorized")
    with pytest.raises(GateError) as raised:
        index.is_complete(event(), None, client=client, now=NOW + 60)
    # The line CloudFormation shows names the call that failed and the cluster it asked about.
    assert str(raised.value) == (
        f"ListClusterNodes on HyperPod cluster '{CLUSTER}' failed: AccessDeniedException: not "
        "authorized. Check: the gate's role allows sagemaker:DescribeCluster and "
        "sagemaker:ListClusterNodes on this cluster's ARN."
    )


def test_delete_is_a_no_op_and_makes_no_call(stub: tuple[Any, Stubber]) -> None:
    client, _ = stub
    delete = event("Delete", PhysicalResourceId=f"nodes-ready:{CLUSTER}")
    assert index.on_event(delete, None, client=client, now=NOW)["PhysicalResourceId"] == (
        f"nodes-ready:{CLUSTER}"
    )
    assert index.is_complete(delete, None, client=client, now=NOW) == {"IsComplete": True}
    # Even with a cluster that is gone and an id that is not ours.
    odd = event(
        "Delete", PhysicalResourceId="AWSCDK::CustomResourceProviderFramework::CREATE_FAILED"
    )
    assert index.is_complete(odd, None, client=client, now=NOW) == {"IsComplete": True}
    # Delete answers with the id it was given, even one that is not ours and without a cluster
    # name (a Create that failed before the name was known), and never reads the cluster.
    bare = {**odd, "ResourceProperties": {}}
    assert index.on_event(bare, None, client=client, now=NOW) == {
        "PhysicalResourceId": "AWSCDK::CustomResourceProviderFramework::CREATE_FAILED",
        index.STARTED_AT: NOW,
    }


def test_create_and_update_need_the_cluster_name(stub: tuple[Any, Stubber]) -> None:
    client, _ = stub
    for kind in ("Create", "Update"):
        for props in ({}, {"ClusterName": ""}):
            with pytest.raises(GateError, match="ClusterName is empty"):
                index.on_event({**event(kind), "ResourceProperties": props}, None, client=client)


def test_the_start_is_the_clock_when_no_time_is_given(
    stub: tuple[Any, Stubber], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, _ = stub
    monkeypatch.setattr(index.time, "time", lambda: NOW + 5)
    assert index.on_event(event(), None, client=client)[index.STARTED_AT] == NOW + 5
    assert index.on_event(event(), None, client=client, now=NOW)[index.STARTED_AT] == NOW


def test_the_client_retries_and_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    client = index.sagemaker_client()
    assert client.meta.service_model.service_name == "sagemaker"
    config = client.meta.config
    # botocore stores max_attempts (retries) as total_max_attempts (the first try + retries).
    assert config.retries == {"mode": "standard", "total_max_attempts": 9}
    assert (config.connect_timeout, config.read_timeout) == (10, 30)


def test_a_repeated_page_token_is_not_followed_forever(
    stub: tuple[Any, Stubber], caplog: pytest.LogCaptureFixture
) -> None:
    client, stubber = stub
    caplog.set_level("INFO", logger=index.log.name)
    stubber.add_response("describe_cluster", describe(gpu=(1, 1)), {"ClusterName": CLUSTER})
    first = {"ClusterName": CLUSTER, "MaxResults": nodes.PAGE_SIZE}
    again = {**first, "NextToken": "same"}
    page = {"ClusterNodeSummaries": [node("gpu", 0)], "NextToken": "same"}
    stubber.add_response("list_cluster_nodes", page, first)
    stubber.add_response("list_cluster_nodes", page, again)
    assert index.is_complete(event(), None, client=client, now=NOW + 60) == {"IsComplete": False}
    # The operator following the wait in CloudWatch sees why this poll read no state.
    assert_lines_say(
        [r.getMessage() for r in caplog.records],
        [CLUSTER, "ListClusterNodes", "NextToken", "next poll"],
    )


@pytest.fixture
def moto_sagemaker(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        client = boto3.client("sagemaker", region_name=REGION)
        client.create_cluster(
            ClusterName=CLUSTER,
            InstanceGroups=[
                {
                    "InstanceGroupName": name,
                    "InstanceType": "ml.g5.4xlarge",  # moto rejects ml.g6e.*
                    "InstanceCount": count,
                    "LifeCycleConfig": {"SourceS3Uri": "s3://sagemaker-lc/", "OnCreate": "x.sh"},
                    "ExecutionRole": "arn:aws:iam::123456789012:role/hyperpod-nodes",
                    "ThreadsPerCore": 1,
                }
                for name, count in (("gpu", 3), ("system", 1))
            ],
            VpcConfig={"SecurityGroupIds": ["sg-0123456789abcdef0"], "Subnets": ["subnet-0123"]},
        )
        yield client


def test_against_moto(moto_sagemaker: Any) -> None:
    state = nodes.read_state(moto_sagemaker, CLUSTER)
    assert [(g.name, g.current, g.target, g.running) for g in state.groups] == [
        ("gpu", 3, 3, 3),
        ("system", 1, 1, 1),
    ]
    assert index.is_complete(event(), None, client=moto_sagemaker, now=NOW) == {"IsComplete": True}


def test_canary_moto_list_cluster_nodes_paging_repeats_its_first_page(moto_sagemaker: Any) -> None:
    # When this fails, moto's paging works: test read_state's paging against moto as well.
    first = moto_sagemaker.list_cluster_nodes(ClusterName=CLUSTER, MaxResults=2)
    second = moto_sagemaker.list_cluster_nodes(
        ClusterName=CLUSTER, MaxResults=2, NextToken=first["NextToken"]
    )
    ids = [[n["InstanceId"] for n in p["ClusterNodeSummaries"]] for p in (first, second)]
    assert ids[0] == ids[1] and second["NextToken"] == first["NextToken"]
