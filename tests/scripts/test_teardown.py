"""`teardown`: order, dry-run listing, prod refusal, re-run after a failure half way.

Doubles: moto for CloudFormation (stacks with a trivial resource), EC2 (VPC, ENI, security group,
VPC endpoint, EBS volume), CloudWatch Logs, ELBv2 and EKS; FakeKube (local in-memory API server
behind the official client) for InferenceEndpointConfigs and PVCs. A FakeKube hook plays the AWS
Load Balancer Controller: deleting the endpoint deletes its load balancer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from scripts.clients import Clients
from scripts.common import OperationError
from scripts.teardown import Timeouts, execute_teardown, plan_teardown, stack_names
from tests.scripts.conftest import IECS, endpoint_config, make_cfg
from tests.scripts.fake_kube import FakeKube

REGION = "us-west-2"
FAST = Timeouts(endpoint_s=10, pvc_s=10, stack_s=30, sweep_s=10, interval_s=0.05)
TEMPLATE = json.dumps({"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}})


class World:
    """A moto account holding one dev environment, plus a timeline of every delete."""

    def __init__(self, kube: FakeKube) -> None:
        self.cfg = make_cfg()
        self.kube = kube
        self.timeline: list[str] = []
        self.fail_stack: str | None = None
        self.clients = Clients(REGION, aws_factory=self._client, kube_factory=kube.api_client)

    def _client(self, service: str) -> Any:
        client = boto3.client(service, region_name=REGION)
        client.meta.events.register("before-parameter-build", self._record)  # API params
        return client

    def _record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if not model.name.startswith("Delete"):
            return
        name = (
            params.get("StackName")
            or params.get("logGroupName")
            or params.get("VolumeId")
            or params.get("NetworkInterfaceId")
            or params.get("GroupId")
            or params.get("VpcEndpointIds")
        )
        if model.name == "DeleteStack" and self.fail_stack is not None and name == self.fail_stack:
            self.fail_stack = None  # fail once, like a transient DELETE_FAILED
            raise OperationError(f"simulated failure deleting {name}")
        self.timeline.append(f"{model.name}:{name}")

    def build(self) -> None:
        cfg = self.cfg
        cfn = boto3.client("cloudformation", region_name=REGION)
        for name in reversed(stack_names(cfg)):  # deploy order
            cfn.create_stack(StackName=name, TemplateBody=TEMPLATE)
        ec2 = boto3.client("ec2", region_name=REGION)
        tags = [
            {"Key": "project", "Value": cfg.project},
            {"Key": "environment", "Value": cfg.environment},
        ]
        vpc = ec2.create_vpc(
            CidrBlock="10.192.0.0/16", TagSpecifications=[{"ResourceType": "vpc", "Tags": tags}]
        )["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.192.1.0/24")["Subnet"]["SubnetId"]
        self.eni = ec2.create_network_interface(SubnetId=subnet)["NetworkInterface"][
            "NetworkInterfaceId"
        ]
        self.sg = ec2.create_security_group(
            GroupName=f"GuardDutyManagedSecurityGroup-{vpc}", Description="gd", VpcId=vpc
        )["GroupId"]
        self.vpce = ec2.create_vpc_endpoint(
            VpcId=vpc,
            ServiceName=f"com.amazonaws.{REGION}.guardduty-data",
            VpcEndpointType="Interface",
        )["VpcEndpoint"]["VpcEndpointId"]
        self.volume = ec2.create_volume(
            AvailabilityZone=f"{REGION}a",
            Size=50,
            TagSpecifications=[{"ResourceType": "volume", "Tags": tags}],
        )["VolumeId"]
        self.other_volume = ec2.create_volume(AvailabilityZone=f"{REGION}a", Size=50)["VolumeId"]
        logs = boto3.client("logs", region_name=REGION)
        for group in (
            f"/aws/eks/{cfg.eks.cluster_name}/cluster",
            f"/aws/lambda/{cfg.stack_prefix}-kvcache-Provider",
            "/aws/lambda/someone-elses-function",
        ):
            logs.create_log_group(logGroupName=group)
        eks = boto3.client("eks", region_name=REGION)
        eks.create_cluster(
            name=cfg.eks.cluster_name,
            roleArn="arn:aws:iam::111122223333:role/eks",
            resourcesVpcConfig={"subnetIds": [subnet]},
        )
        elb = boto3.client("elbv2", region_name=REGION)
        subnet_b = ec2.create_subnet(
            VpcId=vpc, CidrBlock="10.192.2.0/24", AvailabilityZone=f"{REGION}b"
        )["Subnet"]["SubnetId"]
        ec2.modify_subnet_attribute(SubnetId=subnet, MapPublicIpOnLaunch={"Value": False})
        self.lb = elb.create_load_balancer(
            Name="k8s-default-vllmkvca",
            Subnets=[subnet, subnet_b],
            Tags=[{"Key": "elbv2.k8s.aws/cluster", "Value": cfg.eks.cluster_name}],
        )["LoadBalancers"][0]["LoadBalancerArn"]
        # Kubernetes side: one endpoint, the Curvine PVC and an unrelated PVC.
        self.kube.put(IECS, endpoint_config())
        pvcs = "/api/v1/namespaces/default/persistentvolumeclaims"
        self.kube.put(
            pvcs,
            {
                "metadata": {"name": "curvine-pvc", "namespace": "default"},
                "spec": {"storageClassName": "curvine-sc"},
            },
        )
        self.kube.put(
            pvcs,
            {
                "metadata": {"name": "data", "namespace": "default"},
                "spec": {"storageClassName": "gp3"},
            },
        )

        def lb_controller(fake: FakeKube, method: str, path: str) -> None:
            if method == "DELETE" and "/inferenceendpointconfigs/" in path:
                self.timeline.append(f"k8s:{path.rsplit('/', 2)[-2]}")
                elb.delete_load_balancer(LoadBalancerArn=self.lb)
            elif method == "DELETE":
                self.timeline.append(f"k8s:{path.rsplit('/', 2)[-2]}")

        self.kube.after_write.append(lb_controller)


@pytest.fixture
def world(kube: FakeKube) -> Iterator[World]:
    with mock_aws():
        w = World(kube)
        w.build()
        yield w


def test_dry_run_lists_everything_and_deletes_nothing(world: World) -> None:
    plan = plan_teardown(world.clients, world.cfg)
    assert [i.id for i in plan.kubernetes] == ["default/vllm-kvcache", "default/curvine-pvc"]
    assert [i.id for i in plan.stacks] == stack_names(world.cfg)
    found = {(i.kind, i.id) for i in plan.leftovers}
    assert ("available ENI", world.eni) in found
    assert ("GuardDuty security group", world.sg) in found
    assert ("GuardDuty VPC endpoint", world.vpce) in found
    assert ("EBS volume", world.volume) in found and ("EBS volume", world.other_volume) not in found
    assert ("log group", "/aws/lambda/someone-elses-function") not in found
    assert ("log group", f"/aws/eks/{world.cfg.eks.cluster_name}/cluster") in found
    assert world.timeline == [] and world.kube.writes() == []


def test_order_of_operations(world: World) -> None:
    steps: list[str] = []
    execute_teardown(world.clients, world.cfg, steps.append, FAST, show=False)
    t = world.timeline
    stacks = [s.split(":", 1)[1] for s in t if s.startswith("DeleteStack:")]
    assert stacks == stack_names(world.cfg)  # kvcache, addons, hyperpod, eks, network
    assert (
        t.index("k8s:inferenceendpointconfigs")
        < t.index("k8s:persistentvolumeclaims")
        < t.index(f"DeleteStack:{stacks[0]}")
    )
    # VPC leftovers go right before the network stack; account leftovers at the end.
    assert (
        t.index(f"DeleteStack:{stacks[3]}")
        < t.index(f"DeleteNetworkInterface:{world.eni}")
        < t.index(f"DeleteStack:{stacks[4]}")
    )
    assert t.index(f"DeleteSecurityGroup:{world.sg}") < t.index(f"DeleteStack:{stacks[4]}")
    assert t.index(f"DeleteStack:{stacks[4]}") < t.index(f"DeleteVolume:{world.volume}")
    assert (
        "k8s:persistentvolumeclaims" in t
        and sum(s.startswith("k8s:persistentvolumeclaims") for s in t) == 1
    )  # not the gp3 one
    assert f"DeleteVolume:{world.other_volume}" not in t
    assert not plan_teardown(world.clients, world.cfg).stacks


def test_rerun_after_a_failure_half_way(world: World) -> None:
    names = stack_names(world.cfg)
    world.fail_stack = names[2]  # hyperpod
    with pytest.raises(OperationError, match="simulated"):
        execute_teardown(world.clients, world.cfg, lambda _: None, FAST, show=False)
    left = [i.id for i in plan_teardown(world.clients, world.cfg).stacks]
    assert left == names[2:]
    world.timeline.clear()
    steps: list[str] = []
    execute_teardown(world.clients, world.cfg, steps.append, FAST, show=False)
    assert [s.split(":", 1)[1] for s in world.timeline if s.startswith("DeleteStack:")] == names[2:]
    assert f"stack {names[0]}: not found, skipped" in steps
    assert not plan_teardown(world.clients, world.cfg).stacks


def test_cli_dry_run_json_and_prod_refusal(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from scripts import cli

    monkeypatch.setattr(cli, "CLIENTS", lambda cfg, ctx: world.clients)
    result = CliRunner().invoke(cli.app, ["teardown", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["dry_run"] is True and len(data["stacks"]) == 5
    assert world.timeline == []

    monkeypatch.setattr(cli, "load_config", lambda env: make_cfg(environment="prod"))
    refused = CliRunner().invoke(cli.app, ["teardown", "--env", "prod", "--yes"])
    assert refused.exit_code == 3 and "--allow-prod" in refused.output
    assert world.timeline == []
    recreate = CliRunner().invoke(cli.app, ["recreate", "--env", "prod"])
    assert recreate.exit_code == 3


@pytest.mark.parametrize(
    "overrides",
    [
        {"environment": "production"},
        {"environment": "live", "termination_protection": True},
        {"environment": "live", "retain_stateful_resources": True},
    ],
)
def test_protected_environments_count_as_prod(overrides: dict[str, Any]) -> None:
    from scripts.teardown import is_prod

    assert is_prod(make_cfg(**overrides))
    assert not is_prod(make_cfg(environment="test"))


def test_recreate_runs_teardown_then_deploy(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from scripts import cli

    deployed: list[str] = []
    monkeypatch.setattr(cli, "CLIENTS", lambda cfg, ctx: world.clients)

    def deploy(env: str) -> int:
        deployed.append(env)
        return 0

    monkeypatch.setattr(cli, "DEPLOY", deploy)
    monkeypatch.setattr("scripts.teardown.Timeouts", lambda: FAST)
    result = CliRunner().invoke(cli.app, ["recreate", "--yes", "--skip-verify"])
    assert result.exit_code == 0, result.output
    assert deployed == ["dev"] and not plan_teardown(world.clients, world.cfg).stacks
