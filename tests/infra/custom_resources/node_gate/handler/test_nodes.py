"""The node gate's reading of a cluster, exactly: what it asks for page by page, how it folds the
nodes per group, what it says. Double: a recording fake client (the calls' shapes against the
real model are covered by test_index.py's Stubber and moto tests)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from botocore.exceptions import ClientError

from infra.custom_resources.node_gate.handler.nodes import (
    MAX_PAGES,
    ClusterState,
    GateError,
    GroupState,
    RetryLater,
    inspect_command,
    read_state,
)

CLUSTER = "hp-1"


class Fake:
    def __init__(self, desc: dict[str, Any], pages: list[dict[str, Any]]) -> None:
        self.desc, self.pages = desc, list(pages)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def describe_cluster(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("DescribeCluster", kwargs))
        return self.desc

    def list_cluster_nodes(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("ListClusterNodes", kwargs))
        return self.pages.pop(0) if len(self.pages) > 1 else self.pages[0]


def node(group: str | None, status: str | None) -> dict[str, Any]:
    n: dict[str, Any] = {"InstanceId": "i-1"}
    if group is not None:
        n["InstanceGroupName"] = group
    if status is not None:
        n["InstanceStatus"] = {"Status": status}
    return n


DESC = {
    "ClusterStatus": "InService",
    "InstanceGroups": [
        {"InstanceGroupName": "gpu", "CurrentCount": 2, "TargetCount": 2},
        {"InstanceGroupName": "system", "CurrentCount": 0, "TargetCount": 1},
        {},
    ],
}


def test_pages_are_followed_and_nodes_folded_per_group() -> None:
    fake = Fake(
        DESC,
        [
            {
                "ClusterNodeSummaries": [node("gpu", "Running"), node("gpu", "Pending")],
                "NextToken": "t1",
            },
            {"ClusterNodeSummaries": [node("system", None), node(None, "Running")]},
        ],
    )
    state = read_state(fake, CLUSTER)
    assert fake.calls == [
        ("DescribeCluster", {"ClusterName": CLUSTER}),
        ("ListClusterNodes", {"ClusterName": CLUSTER, "MaxResults": 100}),
        ("ListClusterNodes", {"ClusterName": CLUSTER, "MaxResults": 100, "NextToken": "t1"}),
    ]
    assert state == ClusterState(
        CLUSTER,
        "InService",
        (
            GroupState("gpu", 2, 2, Counter({"Running": 1, "Pending": 1})),
            GroupState("system", 0, 1, Counter({"Unknown": 1})),
            GroupState("?", 0, 0, Counter({"Running": 1})),
        ),
    )
    assert str(state) == (
        "cluster status InService; group 'gpu': 2/2 instances (Pending=1, Running=1); "
        "group 'system': 0/1 instances (Unknown=1); group '?': 0/0 instances (Running=1)"
    )
    assert not state.ready


def test_an_empty_cluster_says_so() -> None:
    state = read_state(Fake({}, [{}]), CLUSTER)
    assert state == ClusterState(CLUSTER, "Unknown", ())
    assert str(state) == "cluster status Unknown; no instance groups"
    assert str(GroupState("gpu", 0, 1)) == "group 'gpu': 0/1 instances (no nodes)"


@pytest.mark.parametrize(
    ("statuses", "current", "ready"),
    [
        (Counter({"Running": 2}), 2, True),
        (Counter({"Running": 3}), 2, True),
        (Counter({"Running": 1}), 2, False),
        (Counter({"Running": 2}), 1, False),
        (Counter({"Running": 2, "Pending": 1}), 2, False),
    ],
)
def test_a_group_is_ready_at_target_with_every_node_running(
    statuses: Counter[str], current: int, ready: bool
) -> None:
    assert GroupState("gpu", current, 2, statuses).ready is ready


@pytest.mark.parametrize("status", ["Failed", "RollingBack", "Deleting"])
def test_a_failed_cluster_fails_with_the_commands_to_inspect(status: str) -> None:
    with pytest.raises(GateError) as err:
        read_state(Fake({"ClusterStatus": status}, [{}]), CLUSTER)
    assert str(err.value) == (
        f"HyperPod cluster {CLUSTER!r} is {status} (no FailureMessage): its nodes will not "
        f"become ready. Inspect: `aws sagemaker describe-cluster --cluster-name {CLUSTER}` and "
        f"{inspect_command(CLUSTER)}."
    )
    assert inspect_command(CLUSTER) == (
        f"`aws sagemaker list-cluster-nodes --cluster-name {CLUSTER} --query "
        "'ClusterNodeSummaries[].[InstanceGroupName,InstanceId,InstanceStatus.Status,"
        "InstanceStatus.Message]' --output table`"
    )


def test_endless_pages_stop_at_the_bound() -> None:
    pages = [{"NextToken": f"t{i}"} for i in range(MAX_PAGES + 1)]
    fake = Fake(DESC, pages)
    with pytest.raises(
        RetryLater, match=rf"^ListClusterNodes returned more than {MAX_PAGES} pages$"
    ):
        read_state(fake, CLUSTER)
    assert len(fake.calls) == 1 + MAX_PAGES


class Failing(Fake):
    def __init__(self, response: dict[str, Any]) -> None:
        super().__init__({}, [{}])
        self.response = response

    def describe_cluster(self, **kwargs: Any) -> dict[str, Any]:
        raise ClientError(self.response, "DescribeCluster")


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (
            {"Code": "AccessDeniedException", "Message": "no"},
            "AccessDeniedException: no. Check: the gate's role allows sagemaker:DescribeCluster "
            "and sagemaker:ListClusterNodes on this cluster's ARN.",
        ),
        (
            {"Code": "ValidationException", "Message": "bad"},
            f"ValidationException: bad. Check: that HyperPod cluster {CLUSTER!r} exists in this "
            "account and Region.",
        ),
        (
            {},
            f"Unknown: . Check: that HyperPod cluster {CLUSTER!r} exists in this account and "
            "Region.",
        ),
    ],
)
def test_an_aws_error_names_what_to_check(error: dict[str, Any], text: str) -> None:
    with pytest.raises(GateError) as err:
        read_state(Failing({"Error": error}), CLUSTER)
    assert str(err.value) == f"DescribeCluster on HyperPod cluster {CLUSTER!r} failed: {text}"


def test_throttling_retries_later_naming_the_call() -> None:
    with pytest.raises(RetryLater, match=r"^DescribeCluster: Throttling$"):
        read_state(Failing({"Error": {"Code": "Throttling"}}), CLUSTER)
