"""Read a HyperPod cluster's instance groups and nodes and judge whether they are all up.

Ready means: the cluster is not failed, every instance group's ``CurrentCount`` has reached its
``TargetCount``, and every node ``ListClusterNodes`` returns is ``Running``, with at least
``TargetCount`` running nodes per group. Whether Kubernetes reports the nodes ``Ready`` is not
checked: that needs cluster credentials this Lambda does not have.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

RUNNING = "Running"
# Cluster states that will not turn into ready nodes by waiting.
FAILED_CLUSTER_STATES = frozenset({"Failed", "RollingBack", "Deleting"})
# Errors that mean "not now"; the next poll tries again.
RETRY_LATER = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ServiceUnavailable",
        "InternalFailure",
    }
)
PAGE_SIZE = 100  # the API's maximum
MAX_PAGES = 50  # 5,000 nodes; a bound so a paging fault cannot spin until the Lambda times out


class GateError(Exception):
    """A failure the user must act on; ``str(error)`` says what happened and what to check."""


class RetryLater(Exception):
    """A retryable AWS error: the caller reports 'not ready yet'."""


@dataclass(frozen=True)
class GroupState:
    name: str
    current: int
    target: int
    statuses: Counter[str] = field(default_factory=Counter)

    @property
    def running(self) -> int:
        return self.statuses[RUNNING]

    @property
    def ready(self) -> bool:
        others = sum(n for s, n in self.statuses.items() if s != RUNNING)
        return self.current >= self.target and self.running >= self.target and others == 0

    def __str__(self) -> str:
        shown = ", ".join(f"{s}={n}" for s, n in sorted(self.statuses.items())) or "no nodes"
        return f"group {self.name!r}: {self.current}/{self.target} instances ({shown})"


@dataclass(frozen=True)
class ClusterState:
    name: str
    status: str
    groups: tuple[GroupState, ...]

    @property
    def ready(self) -> bool:
        return all(g.ready for g in self.groups)

    def __str__(self) -> str:
        groups = "; ".join(str(g) for g in self.groups) or "no instance groups"
        return f"cluster status {self.status}; {groups}"


def inspect_command(cluster: str) -> str:
    return (
        f"`aws sagemaker list-cluster-nodes --cluster-name {cluster} --query "
        "'ClusterNodeSummaries[].[InstanceGroupName,InstanceId,InstanceStatus.Status,"
        "InstanceStatus.Message]' --output table`"
    )


def read_state(client: Any, cluster: str) -> ClusterState:
    """DescribeCluster + every page of ListClusterNodes, folded per instance group."""
    desc = _call("DescribeCluster", cluster, client.describe_cluster, ClusterName=cluster)
    status = str(desc.get("ClusterStatus", "Unknown"))
    if status in FAILED_CLUSTER_STATES:
        reason = desc.get("FailureMessage") or "no FailureMessage"
        raise GateError(
            f"HyperPod cluster {cluster!r} is {status} ({reason}): its nodes will not become "
            f"ready. Inspect: `aws sagemaker describe-cluster --cluster-name {cluster}` and "
            f"{inspect_command(cluster)}."
        )
    statuses: dict[str, Counter[str]] = {}
    token: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        kwargs: dict[str, Any] = {"ClusterName": cluster, "MaxResults": PAGE_SIZE}
        if token:
            kwargs["NextToken"] = token
        page = _call("ListClusterNodes", cluster, client.list_cluster_nodes, **kwargs)
        for node in page.get("ClusterNodeSummaries", []):
            group = str(node.get("InstanceGroupName", "?"))
            state = str((node.get("InstanceStatus") or {}).get("Status", "Unknown"))
            statuses.setdefault(group, Counter())[state] += 1
        token = page.get("NextToken")
        if not token:
            break
        if token in seen:
            # A paging loop would spin until the Lambda times out: fail with a message instead.
            raise RetryLater("ListClusterNodes returned a NextToken twice")
        seen.add(token)
    else:
        raise RetryLater(f"ListClusterNodes returned more than {MAX_PAGES} pages")
    groups = tuple(
        GroupState(
            name=str(g.get("InstanceGroupName", "?")),
            current=int(g.get("CurrentCount", 0)),
            target=int(g.get("TargetCount", 0)),
            statuses=statuses.get(str(g.get("InstanceGroupName", "?")), Counter()),
        )
        for g in desc.get("InstanceGroups", [])
    )
    return ClusterState(name=cluster, status=status, groups=groups)


def _call(op: str, cluster: str, method: Any, **kwargs: Any) -> dict[str, Any]:
    try:
        result: dict[str, Any] = method(**kwargs)
        return result
    except ClientError as e:
        err = e.response.get("Error", {})
        code = str(err.get("Code", "Unknown"))
        if code in RETRY_LATER:
            raise RetryLater(f"{op}: {code}") from e
        hint = (
            "the gate's role allows sagemaker:DescribeCluster and sagemaker:ListClusterNodes on "
            "this cluster's ARN"
            if code == "AccessDeniedException"
            else f"that HyperPod cluster {cluster!r} exists in this account and Region"
        )
        raise GateError(
            f"{op} on HyperPod cluster {cluster!r} failed: {code}: {err.get('Message', '')}. "
            f"Check: {hint}."
        ) from e
