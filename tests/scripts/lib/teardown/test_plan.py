"""What a teardown dry run lists: every item of this environment, where each leftover is and why it
waits, and why a phase is skipped; nothing is deleted.

Doubles: moto and FakeKube, as in ``World`` (tests/support/teardown_world.py); where a test
needs more it says so."""

from __future__ import annotations

from typing import Any

from scripts.lib.clients import Clients
from scripts.lib.environment import stack_names
from scripts.lib.teardown.model import Item
from scripts.lib.teardown.plan import plan_teardown
from tests.support.logs import assert_lines_say
from tests.support.teardown_world import REGION, World


def test_dry_run_lists_everything_and_deletes_nothing(world: World) -> None:
    plan = plan_teardown(world.clients, world.cfg)
    assert [i.id for i in plan.kubernetes] == ["models/vllm-kvcache", "models/curvine-pvc"]
    assert [i.id for i in plan.stacks] == stack_names(world.cfg)
    found = {(i.kind, i.id) for i in plan.leftovers}
    assert ("available ENI", world.eni) in found
    assert ("available ENI", world.lambda_free) in found and (
        "Lambda ENI",
        world.lambda_busy,
    ) in found
    assert not any(world.neighbour_lambda_eni == i for _, i in found)
    assert ("GuardDuty security group", world.sg) in found
    assert ("GuardDuty VPC endpoint", world.vpce) in found
    assert ("EBS volume", world.volume) in found and ("EBS volume", world.other_volume) not in found
    assert ("EBS volume", world.csi_volume) in found
    assert ("EBS volume", world.neighbour_csi_volume) not in found
    assert ("log group", "/aws/lambda/someone-elses-function") not in found
    assert ("log group", f"/aws/eks/{world.cfg.eks.cluster_name}/cluster") in found
    assert world.timeline == [] and world.kube.writes() == []


def test_the_plan_says_where_each_leftover_is_and_why_it_waits(world: World) -> None:
    """What the dry run prints beside each id: a stack's status, the VPC an EC2 leftover sits
    in, why a Lambda ENI waits. An endpoint that is deleted already, and one that is not
    GuardDuty's (the network stack's own), are not leftovers; an in-use ENI is not available."""
    ec2 = world.plain("ec2")
    guardduty = f"com.amazonaws.{REGION}.guardduty-data"
    gone = ec2.create_vpc_endpoint(
        VpcId=world.vpc, ServiceName=guardduty, VpcEndpointType="Interface"
    )
    ec2.delete_vpc_endpoints(VpcEndpointIds=[gone["VpcEndpoint"]["VpcEndpointId"]])
    ec2.create_vpc_endpoint(VpcId=world.vpc, ServiceName=f"com.amazonaws.{REGION}.s3")
    plan = plan_teardown(world.clients, world.cfg)
    assert {(i.kind, i.detail) for i in plan.stacks} == {("stack", "CREATE_COMPLETE")}
    in_vpc = ("GuardDuty VPC endpoint", "available ENI", "GuardDuty security group")
    assert sorted((i.kind, i.id, i.detail) for i in plan.leftovers if i.kind in in_vpc) == sorted(
        [
            ("GuardDuty VPC endpoint", world.vpce, world.vpc),
            ("available ENI", world.eni, world.vpc),
            ("available ENI", world.lambda_free, world.vpc),
            ("GuardDuty security group", world.sg, world.vpc),
        ]
    )
    busy = "in-use: deleted once Lambda frees it"
    assert [i for i in plan.leftovers if i.kind == "Lambda ENI"] == [
        Item("Lambda ENI", world.lambda_busy, busy)
    ]
    assert plan.notes == []


def test_the_plan_notes_why_it_skips_the_kubernetes_phase(world: World) -> None:
    def timed_out() -> Any:
        raise OSError("timed out")

    unreachable = Clients(REGION, aws_factory=world._client, kube_factory=timed_out)
    plan = plan_teardown(unreachable, world.cfg)
    assert plan.kubernetes == [] and [i.id for i in plan.stacks] == stack_names(world.cfg)
    assert_lines_say(plan.notes, ["Kubernetes API", "timed out", "stacks"])

    world.plain("eks").delete_cluster(name=world.cfg.eks.cluster_name)
    plan = plan_teardown(world.clients, world.cfg)
    assert plan.kubernetes == [] and [i.id for i in plan.stacks] == stack_names(world.cfg)
    assert_lines_say(plan.notes, ["EKS cluster", "not found", "Kubernetes"])
