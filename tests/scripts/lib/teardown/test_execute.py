"""A whole teardown: only this environment and exactly its plan is deleted, in order (Kubernetes
objects, stacks wave by wave, leftovers), a re-run after a failure, and the waits it reports.

Doubles: moto and FakeKube, as in ``World`` (tests/support/teardown_world.py); where a test
needs more it says so."""

from __future__ import annotations

import itertools
import re

import boto3
import pytest

from infra.environment.layout import STACK_DEPENDENCIES
from scripts.lib.environment import stack_names, stack_waves
from scripts.lib.errors import OperationError
from scripts.lib.teardown.execute import execute_teardown
from scripts.lib.teardown.model import Timeouts
from scripts.lib.teardown.plan import plan_teardown
from tests.doubles.fake_kube import FakeKube
from tests.support.endpoint_objects import IECS
from tests.support.progress import FakeClock, plain
from tests.support.teardown_world import FAST, NEIGHBOURS, PREFIX, REGION, World


def _deleted(world: World) -> set[str]:
    """Ids of everything deleted, from the AWS calls and the Kubernetes DELETE requests."""
    aws = {step.split(":", 1)[1] for step in world.timeline if step.startswith("Delete")}
    kube = {
        "/".join(path.split("/")[-3::2]) for _, path, _ in world.kube.writes("DELETE")
    }  # .../namespaces/<ns>/<plural>/<name> -> ns/name
    return aws | kube


def test_only_this_environment_and_exactly_the_plan_is_deleted(world: World) -> None:
    plan = plan_teardown(world.clients, world.cfg)
    planned = {i.id for i in plan.items()}
    assert set(world.own_groups) <= planned
    assert not planned & set(world.neighbour_groups)
    assert not any("owners-model" in n for n in plan.notes)  # not configured: not considered
    execute_teardown(world.clients, world.cfg, lambda _: None, FAST, show=False)
    assert _deleted(world) == planned  # the dry run lists exactly what --yes deletes

    logs = boto3.client("logs", region_name=REGION)
    left = {g["logGroupName"] for g in logs.describe_log_groups()["logGroups"]}
    assert set(world.neighbour_groups) <= left and not set(world.own_groups) & left
    cfn = boto3.client("cloudformation", region_name=REGION)
    for other in NEIGHBOURS:
        cfn.describe_stacks(StackName=f"hyperpod-kvcache-{other}-kvcache")  # still there
    ec2 = boto3.client("ec2", region_name=REGION)
    eni, sg, volume = world.neighbour_ec2
    ec2.describe_network_interfaces(NetworkInterfaceIds=[eni, world.neighbour_lambda_eni])
    ec2.describe_security_groups(GroupIds=[sg])
    ec2.describe_volumes(VolumeIds=[volume, world.other_volume, world.neighbour_csi_volume])
    for path in (
        f"{IECS}/owners-model",
        f"{IECS.replace('/models/', '/team-b/')}/vllm-kvcache",
        "/api/v1/namespaces/models/persistentvolumeclaims/owners-cache",
        "/api/v1/namespaces/models/persistentvolumeclaims/data",
    ):
        assert world.kube.get(path) is not None, path


def test_order_of_operations(world: World) -> None:
    steps: list[str] = []
    execute_teardown(world.clients, world.cfg, steps.append, FAST, show=False)
    t = world.timeline
    stacks = [s.split(":", 1)[1] for s in t if s.startswith("DeleteStack:")]
    assert sorted(stacks) == sorted(stack_names(world.cfg))
    # Wave by wave (infra/environment/layout.py): a stack only after every stack that depends on it.
    waves = stack_waves(world.cfg)
    for before, after in itertools.pairwise(waves):
        assert max(stacks.index(n) for n in before) < min(stacks.index(n) for n in after)
    assert waves[0] == [f"{PREFIX}-endpoints"]
    # The workspace goes after the add-ons and endpoints that import its id and ARN.
    assert f"{PREFIX}-observability" in waves[2]
    eks, network = f"{PREFIX}-eks", f"{PREFIX}-network"
    assert (
        t.index("k8s:inferenceendpointconfigs")
        < t.index("k8s:persistentvolumeclaims")
        < t.index(f"DeleteStack:{stacks[0]}")
    )
    # VPC leftovers go right before the network stack; account leftovers at the end.
    assert (
        t.index(f"DeleteStack:{eks}")
        < t.index(f"DeleteNetworkInterface:{world.eni}")
        < t.index(f"DeleteStack:{network}")
    )
    assert t.index(f"DeleteSecurityGroup:{world.sg}") < t.index(f"DeleteStack:{network}")
    # Lambda's ENIs: the free one deleted, the kubectl handler's only once Lambda frees it (after
    # the eks stack takes the function), both before the network stack.
    busy, free = world.lambda_busy, world.lambda_free
    assert (
        t.index(f"DeleteStack:{eks}")
        < t.index(f"DeleteNetworkInterface:{free}")
        < t.index(f"released:{busy}")
        < t.index(f"DeleteNetworkInterface:{busy}")
        < t.index(f"DeleteStack:{network}")
    )
    assert f"deleted Lambda ENI {busy}" in steps
    assert any(s.endswith("waiting for Lambda to free them") and busy in s for s in steps)
    # The load balancer the controller removes once its endpoint goes: gone before any stack.
    assert (
        t.index("k8s:inferenceendpointconfigs")
        < t.index(f"released:{world.lb}")
        < t.index(f"DeleteStack:{stacks[0]}")
    )
    # Retained EBS volumes (ours and the CSI driver's): after the PVCs and the stacks.
    for volume in (world.volume, world.csi_volume):
        assert (
            t.index("k8s:persistentvolumeclaims")
            < t.index(f"DeleteStack:{network}")
            < t.index(f"DeleteVolume:{volume}")
        )
    assert (
        "k8s:persistentvolumeclaims" in t
        and sum(s.startswith("k8s:persistentvolumeclaims") for s in t) == 1
    )  # not the gp3 one
    assert f"DeleteVolume:{world.other_volume}" not in t
    assert not plan_teardown(world.clients, world.cfg).stacks


def deleted_too_early(deleted: list[str]) -> list[str]:
    """Each stack of ``deleted`` (in DeleteStack order) that was deleted before a stack that
    depends on it (infra/environment/layout.py); stacks of one wave may come in any order."""
    suffix = {name: name.removeprefix(f"{PREFIX}-") for name in deleted}
    return [
        f"{name} before {later}"
        for i, name in enumerate(deleted)
        for later in deleted[i + 1 :]
        if suffix[name] in STACK_DEPENDENCIES[suffix[later]]
    ]


def test_deleted_too_early_names_a_stack_deleted_before_its_dependent() -> None:
    assert deleted_too_early([f"{PREFIX}-egress", f"{PREFIX}-eks", f"{PREFIX}-network"]) == []
    assert deleted_too_early([f"{PREFIX}-network", f"{PREFIX}-eks"]) == [
        f"{PREFIX}-network before {PREFIX}-eks"
    ]


def test_rerun_after_a_failure_half_way(world: World) -> None:
    names = stack_names(world.cfg)
    world.fail_stack = f"{PREFIX}-hyperpod"
    names = names[names.index(world.fail_stack) - 1 :]  # nodes, hyperpod, eks, egress, network
    with pytest.raises(OperationError, match="simulated"):
        execute_teardown(world.clients, world.cfg, lambda _: None, FAST, show=False)
    left = [i.id for i in plan_teardown(world.clients, world.cfg).stacks]
    assert left == names[1:]
    world.timeline.clear()
    steps: list[str] = []
    execute_teardown(world.clients, world.cfg, steps.append, FAST, show=False)
    # eks and egress go side by side (one wave): which thread calls DeleteStack first is open.
    rerun = [s.split(":", 1)[1] for s in world.timeline if s.startswith("DeleteStack:")]
    assert sorted(rerun) == sorted(names[1:])
    assert deleted_too_early(rerun) == []
    assert f"stack {names[0]}: not found, skipped" in steps
    assert not plan_teardown(world.clients, world.cfg).stacks


def test_teardown_reports_each_wait_with_its_timeout_and_a_stack_deleting(world: World) -> None:
    """What a user watches (plain lines, as in CI logs): each wait in order with its own
    timeout, and a stack's status with its latest resource event while it deletes."""

    reporter, out = plain(FakeClock(), every_s=3600)
    timeouts = Timeouts(
        endpoint_s=11, pvc_s=12, stack_s=13, sweep_s=14, lambda_eni_s=15, interval_s=0.05
    )
    world.deleting[f"{PREFIX}-nodes"] = 2
    # The operator's finalizer on the endpoint, kubernetes.io/pvc-protection on the PVC: each
    # stays, marked for deletion, for one read after its DELETE.
    pvc = "/api/v1/namespaces/models/persistentvolumeclaims/curvine-pvc"
    finalized = {path: world.kube.get(path) for path in (f"{IECS}/vllm-kvcache", pvc)}
    held: list[str] = []

    def finalizer(fake: FakeKube, method: str, path: str) -> None:
        if method == "DELETE" and finalized.get(path):
            obj = fake.objects[path] = finalized.pop(path)
            obj["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
            held.append(path)
        elif method == "GET":
            while held:
                del fake.objects[held.pop()]

    world.kube.after_write.append(finalizer)
    world.kube.after_read.append(finalizer)
    execute_teardown(world.clients, world.cfg, lambda _: None, timeouts, show=reporter)
    lines = [
        re.sub(r" \(\S+ elapsed\)$| after \S+$", "", line.split(" ", 1)[1])
        for line in out.getvalue().splitlines()
    ]
    eks = world.cfg.eks.cluster_name
    expected = [
        "waiting for InferenceEndpointConfigs to go (up to 11s)",
        "InferenceEndpointConfigs to go: done",
        f"waiting for load balancers of {eks} to go (up to 11s)",
        f"load balancers of {eks} to go: done",
        "waiting for Curvine PVCs to go (up to 12s)",
        "Curvine PVCs to go: done",
        f"waiting for stack {PREFIX}-nodes to delete (up to 13s)",
        f"stack {PREFIX}-nodes to delete: DELETE_IN_PROGRESS",
        f"stack {PREFIX}-nodes to delete: DELETE_IN_PROGRESS; latest: Topic DELETE_IN_PROGRESS",
        f"stack {PREFIX}-nodes to delete: done",
        "waiting for Lambda network interfaces to be freed (up to 15s)",
        "Lambda network interfaces to be freed: done",
        f"waiting for security group {world.sg} to be free (up to 14s)",
        f"security group {world.sg} to be free: done",
    ]
    assert [line for line in lines if line in expected] == expected, lines
    stacks = {line for line in lines if line.startswith(("waiting for stack", "stack "))}
    names = stack_names(world.cfg)
    assert stacks == {f"waiting for stack {name} to delete (up to 13s)" for name in names} | {
        f"stack {name} to delete: done" for name in names
    } | set(expected[7:9])


def test_teardown_without_the_cluster_says_so_and_failures_say_how_to_go_on(world: World) -> None:
    world.plain("eks").delete_cluster(name=world.cfg.eks.cluster_name)
    steps: list[str] = []
    world.denied = {"DeleteStack"}
    with pytest.raises(OperationError) as denied:
        execute_teardown(world.clients, world.cfg, steps.append, FAST, show=False)
    assert steps[0] == "EKS cluster not found: Kubernetes phase skipped"
    assert str(denied.value) == (
        "AWS: An error occurred (AccessDenied) when calling the DeleteStack operation: not "
        "authorized; fix and re-run teardown (finished steps are skipped)"
    )
