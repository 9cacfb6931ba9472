"""`teardown`: scope (only this environment's resources), order, dry-run listing, prod refusal,
re-run after a failure half way, and the ordered steps for what blocks a deletion.

Doubles: moto for everything it supports: CloudFormation (stacks with a trivial resource, S3
buckets), EC2 (VPC, ENI, security group, VPC endpoint, EBS volume), S3 (object versions, delete
markers), CloudWatch Logs, Lambda (functions created through CloudFormation, whose log groups
teardown derives from ListStackResources), ELBv2 and EKS; FakeKube (local in-memory API server
behind the official client) for InferenceEndpointConfigs and PVCs. A FakeKube hook plays the AWS
Load Balancer Controller: deleting the endpoint deletes its load balancer.

Where moto falls short, a thin double, each saying why where it is defined: Lambda's ENIs get
their ``lambda`` type and in-use status set on moto's model (``moto_eni``), and World frees one
after the eks stack goes and refuses to delete the network stack while one is left; botocore
event hooks play CloudFormation's DELETE_FAILED on a bucket that is not empty; botocore's
Stubber plays a role that may not delete ENIs."""

from __future__ import annotations

import dataclasses
import itertools
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from typer.testing import CliRunner

from scripts.lib import runtime
from scripts.lib.clients import Clients
from scripts.lib.environment import stack_names, stack_waves
from scripts.lib.errors import OperationError
from scripts.lib.teardown.execute import execute_teardown
from scripts.lib.teardown.kubernetes import LB_CLUSTER_TAG
from scripts.lib.teardown.model import Item, Timeouts
from scripts.lib.teardown.plan import plan_teardown
from scripts.lib.teardown.stacks import (
    DeleteFailed,
    _describe_event,
    _events_of_this_delete,
    delete_failure,
    empty_bucket,
)
from tests.doubles.fake_kube import FakeKube
from tests.scripts.conftest import IECS, endpoint_config, make_cfg

REGION = "us-west-2"
FAST = Timeouts(endpoint_s=10, pvc_s=10, stack_s=30, sweep_s=10, lambda_eni_s=10, interval_s=0.05)
TEMPLATE = json.dumps({"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}})
# Like infra/constructs/buckets.py SecureBucket: a bucket and its server-access-log bucket.
BUCKETS_TEMPLATE = json.dumps(
    {
        "Resources": {
            "Bucket": {"Type": "AWS::S3::Bucket"},
            "AccessLogs": {"Type": "AWS::S3::Bucket"},
        }
    }
)
OWNED = {"app.kubernetes.io/managed-by": "cdk8s", "app.kubernetes.io/part-of": "hyperpod-kvcache"}
ENV = "test"
PREFIX = f"hyperpod-kvcache-{ENV}"
# Neighbouring environments whose names contain this one's, and a look-alike nothing created.
NEIGHBOURS = ("test2", "test-west", "testbox")


def env_cfg(environment: str = ENV) -> Any:
    return make_cfg(
        environment=environment,
        eks={"cluster_name": f"hyperpod-kvcache-{environment}"},
        hyperpod={"cluster_name": f"hyperpod-kvcache-{environment}"},
        kvcache={"endpoints": [{"name": "vllm-kvcache", "namespace": "default", "replicas": 1}]},
    )


def function_template(role_arn: str) -> str:
    """A stack with a Lambda function (its log group appears outside CloudFormation) and a
    retained log group (CloudFormation leaves it behind), like the CDK provider stacks."""
    return json.dumps(
        {
            "Resources": {
                "Fn": {
                    "Type": "AWS::Lambda::Function",
                    "Properties": {
                        "Runtime": "python3.12",
                        "Handler": "index.handler",
                        "Role": role_arn,
                        "Code": {"ZipFile": "def handler(event, context): pass"},
                    },
                },
                "Logs": {
                    "Type": "AWS::Logs::LogGroup",
                    "DeletionPolicy": "Retain",
                    "UpdateReplacePolicy": "Retain",
                },
            }
        }
    )


def moto_eni(eni_id: str) -> Any:
    """moto's model of an ENI. Lambda creates its ENIs itself (InterfaceType ``lambda``, which
    CreateNetworkInterface does not accept) and frees them on its own schedule, so the tests set
    the type and the status on the model, the way Lambda would."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ec2.models import ec2_backends

    return ec2_backends[DEFAULT_ACCOUNT_ID][REGION].enis[eni_id]


class World:
    """A moto account holding one dev environment, plus a timeline of every delete."""

    def __init__(self, kube: FakeKube) -> None:
        self.cfg = env_cfg()
        self.kube = kube
        self.timeline: list[str] = []
        self.fail_stack: str | None = None
        # Lambda frees the kubectl handler's ENI after this many DescribeNetworkInterfaces calls
        # once the eks stack (which holds the function) is deleted; None: not yet counting.
        self.lambda_frees_after = 3
        self._lambda_countdown: int | None = None
        # The load balancer goes this many DescribeLoadBalancers calls after its endpoint.
        self._lb_countdown: int | None = None
        # Stack name -> a barrier each stack of its wave must reach inside DeleteStack.
        self.side_by_side: dict[str, threading.Barrier] = {}
        self.on_delete_stack: list[Callable[[str], None]] = []  # called with the stack's name
        # CloudFormation failing to delete a bucket that is not empty (see _delete_stack_call).
        self.deliveries_at_delete = 0  # DeleteStacks at which a late access log lands first
        self.blame: str | None = None  # the bucket the DELETE_FAILED event names, if not that one
        self.failed: dict[str, str] = {}  # stack id -> bucket its deletion failed on
        self.denied: set[str] = set()  # API operations the role may not call (moto allows all)
        # Stack name -> how many DescribeStacks answers after its DeleteStack still say
        # DELETE_IN_PROGRESS (moto deletes at once), with a resource event to show meanwhile.
        self.deleting: dict[str, int] = {}
        # Stack id -> DELETE_IN_PROGRESS answers so far, while the last answer was one.
        self._in_progress: dict[str, int] = {}
        self.clients = Clients(REGION, aws_factory=self._client, kube_factory=kube.api_client)
        self._plain: dict[str, Any] = {}

    def plain(self, service: str) -> Any:
        """A client of the test's own (not recorded, not the code under test's); one per service
        because creating a botocore client costs more than most moto calls."""
        if service not in self._plain:
            self._plain[service] = boto3.client(service, region_name=REGION)
        return self._plain[service]

    def _client(self, service: str) -> Any:
        client = boto3.client(service, region_name=REGION)
        client.meta.events.register("before-parameter-build", self._record)  # API params
        if service == "cloudformation":
            events = client.meta.events
            events.register(
                "before-parameter-build.cloudformation.DeleteStack",
                lambda params, context, **_: context.update(stack_name=params["StackName"]),
            )  # the request context carries the name to before-call (which sees the request)
            events.register("before-call.cloudformation.DeleteStack", self._delete_stack_call)
            events.register("after-call.cloudformation.DescribeStacks", self._failed_status)
            events.register("after-call.cloudformation.DescribeStackEvents", self._failed_events)
        return client

    # A thin double of CloudFormation's DELETE_FAILED on a bucket that is not empty: moto's
    # DeleteStack raises on such a bucket and drops the stack instead of keeping it
    # DELETE_FAILED with an event naming the bucket. The buckets and their objects stay moto's.

    def _delete_stack_call(self, context: dict[str, Any], **_: Any) -> Any:
        from botocore.awsrequest import AWSResponse

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
            topic = {**stack, "LogicalResourceId": "Topic", "ResourceType": "AWS::SNS::Topic",
                     "ResourceStatus": "DELETE_IN_PROGRESS"}  # fmt: skip
            parsed["StackEvents"] = [
                *([topic] if answered > 1 else []),
                {**stack, "ResourceType": "AWS::CloudFormation::Stack",
                 "ResourceStatus": "DELETE_IN_PROGRESS", "ResourceStatusReason": "User Initiated"},
                *events,
            ]  # fmt: skip
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

    def _record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if model.name in self.denied:
            error = {"Error": {"Code": "AccessDenied", "Message": "not authorized"}}
            raise ClientError(error, model.name)  # type: ignore[arg-type]
        if model.name == "DescribeLoadBalancers" and self._lb_countdown is not None:
            self._lb_countdown -= 1
            if self._lb_countdown == 0:
                self.plain("elbv2").delete_load_balancer(LoadBalancerArn=self.lb)
                self.timeline.append(f"released:{self.lb}")
        if model.name == "DescribeNetworkInterfaces" and self._lambda_countdown is not None:
            self._lambda_countdown -= 1
            if self._lambda_countdown == 0:
                moto_eni(self.lambda_busy).status = "available"
                self.timeline.append(f"released:{self.lambda_busy}")
        if not model.name.startswith("Delete"):
            return
        name = (
            params.get("StackName")
            or params.get("logGroupName")
            or params.get("VolumeId")
            or params.get("NetworkInterfaceId")
            or params.get("GroupId")
            or (params.get("VpcEndpointIds") or [None])[0]
            or params.get("Bucket")
        )
        if model.name == "DeleteStack" and self.fail_stack is not None and name == self.fail_stack:
            self.fail_stack = None  # fail once, like a transient DELETE_FAILED
            raise OperationError(f"simulated failure deleting {name}")
        if model.name == "DeleteStack" and name == f"{PREFIX}-network":
            # CloudFormation cannot delete the subnets and security groups a Lambda ENI sits in.
            ec2 = self.plain("ec2")  # not recorded
            vpc = [{"Name": "vpc-id", "Values": [self.vpc]}]
            left = [
                e["NetworkInterfaceId"]
                for e in ec2.describe_network_interfaces(Filters=vpc)["NetworkInterfaces"]
                if e["NetworkInterfaceId"] in (self.lambda_busy, self.lambda_free)
            ]
            if left:
                raise OperationError(f"{name}: DELETE_FAILED, subnet has dependencies: {left}")
        if model.name == "DeleteStack":
            for hook in self.on_delete_stack:
                hook(str(name))
        if model.name == "DeleteStack" and name in self.side_by_side:
            # BrokenBarrierError unless side by side. Only a sequential delete waits the whole
            # timeout; a long one keeps a loaded machine's slow sibling thread from breaking it.
            self.side_by_side[name].wait(timeout=60)
        if model.name == "DeleteStack" and name == f"{PREFIX}-eks":
            self._lambda_countdown = self.lambda_frees_after  # the kubectl handler is gone
        self.timeline.append(f"{model.name}:{name}")

    def build(self) -> None:
        cfg = self.cfg
        cfn = self.plain("cloudformation")
        logs = self.plain("logs")
        role = self.plain("iam").create_role(RoleName="fn", AssumeRolePolicyDocument="{}")["Role"][
            "Arn"
        ]
        for name in reversed(stack_names(cfg)):  # deploy order
            body = function_template(role) if name.endswith("-kvcache") else TEMPLATE
            body = BUCKETS_TEMPLATE if name.endswith("-hyperpod") else body
            cfn.create_stack(StackName=name, TemplateBody=body)
        self.own_groups = self._function_log_groups(f"{PREFIX}-kvcache")
        self.access_logs = self._bucket(f"{PREFIX}-hyperpod")
        neighbour = "hyperpod-kvcache-test2-hyperpod"
        cfn.create_stack(StackName=neighbour, TemplateBody=BUCKETS_TEMPLATE)
        self.neighbour_bucket = self._bucket(neighbour)
        self.plain("s3").put_object(
            Bucket=self.neighbour_bucket, Key="s3-access/theirs", Body=b"log"
        )
        # Neighbours: stacks and log groups of environments whose names contain ours.
        self.neighbour_groups = []
        for other in NEIGHBOURS:
            stack = f"hyperpod-kvcache-{other}-kvcache"
            cfn.create_stack(StackName=stack, TemplateBody=function_template(role))
            self.neighbour_groups += self._function_log_groups(stack)
            group = f"/aws/eks/hyperpod-kvcache-{other}/cluster"
            logs.create_log_group(logGroupName=group)
            self.neighbour_groups.append(group)
        # Untagged look-alikes that no stack of ours names.
        for group in (f"/aws/lambda/{PREFIX}-kvcache-Handmade", f"/aws/eks/{PREFIX}/cluster-old"):
            logs.create_log_group(logGroupName=group)
            self.neighbour_groups.append(group)
        ec2 = self.plain("ec2")
        tags = [
            {"Key": "project", "Value": cfg.project},
            {"Key": "environment", "Value": cfg.environment},
        ]
        vpc = ec2.create_vpc(
            CidrBlock="10.192.0.0/16", TagSpecifications=[{"ResourceType": "vpc", "Tags": tags}]
        )["Vpc"]["VpcId"]
        self.vpc = vpc
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.192.1.0/24")["Subnet"]["SubnetId"]
        self.eni = ec2.create_network_interface(SubnetId=subnet)["NetworkInterface"][
            "NetworkInterfaceId"
        ]
        # Lambda's ENIs: one already freed (found by its description), and the kubectl
        # handler's, in use until its function is deleted with the eks stack.
        self.lambda_free = ec2.create_network_interface(
            SubnetId=subnet, Description=f"AWS Lambda VPC ENI-{PREFIX}-kvcache-Provider"
        )["NetworkInterface"]["NetworkInterfaceId"]
        self.lambda_busy = ec2.create_network_interface(
            SubnetId=subnet, Description="kubectl handler"
        )["NetworkInterface"]["NetworkInterfaceId"]
        moto_eni(self.lambda_busy).interface_type = "lambda"
        moto_eni(self.lambda_busy).status = "in-use"
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
        # Volumes the EBS CSI driver leaves (PVs with reclaimPolicy Retain, or deleted while the
        # driver was gone): tagged with the cluster, not with our tags. One of test2's too.
        self.csi_volume, self.neighbour_csi_volume = (
            ec2.create_volume(
                AvailabilityZone=f"{REGION}a",
                Size=20,
                TagSpecifications=[
                    {
                        "ResourceType": "volume",
                        "Tags": [
                            {
                                "Key": f"kubernetes.io/cluster/hyperpod-kvcache-{env}",
                                "Value": "owned",
                            },
                            {"Key": "ebs.csi.aws.com/cluster", "Value": "true"},
                        ],
                    }
                ],
            )["VolumeId"]
            for env in (ENV, "test2")
        )
        self._neighbour_network(ec2)
        for group in (
            f"/aws/eks/{cfg.eks.cluster_name}/cluster",
            f"/aws/lambda/{cfg.stack_prefix}-kvcache-Provider",
            "/aws/lambda/someone-elses-function",
        ):
            logs.create_log_group(logGroupName=group)
        eks = self.plain("eks")
        eks.create_cluster(
            name=cfg.eks.cluster_name,
            roleArn="arn:aws:iam::111122223333:role/eks",
            resourcesVpcConfig={"subnetIds": [subnet]},
        )
        elb = self.plain("elbv2")
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
        iec = endpoint_config()
        iec["metadata"]["labels"] = OWNED
        self.kube.put(IECS, iec)
        # The cluster owner's endpoints: one we do not configure, one with a configured name
        # in another namespace; and a PVC on our StorageClass that we did not render.
        foreign = endpoint_config()
        foreign["metadata"] = {"name": "owners-model", "namespace": "default"}
        self.kube.put(IECS, foreign)
        elsewhere = endpoint_config()
        elsewhere["metadata"] = {"name": "vllm-kvcache", "namespace": "team-b", "labels": OWNED}
        self.kube.put(IECS.replace("/default/", "/team-b/"), elsewhere)
        pvcs = "/api/v1/namespaces/default/persistentvolumeclaims"
        self.kube.put(
            pvcs,
            {
                "metadata": {"name": "curvine-pvc", "namespace": "default", "labels": OWNED},
                "spec": {"storageClassName": "curvine-sc"},
            },
        )
        self.kube.put(
            pvcs,
            {
                "metadata": {"name": "owners-cache", "namespace": "default"},
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
                self._lb_countdown = 3  # the controller removes the load balancer a bit later
            elif method == "DELETE":
                self.timeline.append(f"k8s:{path.rsplit('/', 2)[-2]}")

        self.kube.after_write.append(lb_controller)

    def _bucket(self, stack: str) -> str:
        cfn = self.plain("cloudformation")
        found = cfn.describe_stack_resource(StackName=stack, LogicalResourceId="AccessLogs")
        return str(found["StackResourceDetail"]["PhysicalResourceId"])

    def _function_log_groups(self, stack: str) -> list[str]:
        """The log group Lambda creates for the stack's function on first run."""
        cfn = self.plain("cloudformation")
        fn = cfn.describe_stack_resource(StackName=stack, LogicalResourceId="Fn")
        group = f"/aws/lambda/{fn['StackResourceDetail']['PhysicalResourceId']}"
        self.plain("logs").create_log_group(logGroupName=group)
        retained = cfn.describe_stack_resource(StackName=stack, LogicalResourceId="Logs")
        return [group, retained["StackResourceDetail"]["PhysicalResourceId"]]

    def _neighbour_network(self, ec2: Any) -> None:
        """test2's VPC (same project, other environment) with the same kinds of leftovers."""
        tags = [
            {"Key": "project", "Value": self.cfg.project},
            {"Key": "environment", "Value": "test2"},
        ]
        vpc = ec2.create_vpc(
            CidrBlock="10.193.0.0/16", TagSpecifications=[{"ResourceType": "vpc", "Tags": tags}]
        )["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.193.1.0/24")["Subnet"]["SubnetId"]
        self.neighbour_lambda_eni = ec2.create_network_interface(
            SubnetId=subnet, Description="AWS Lambda VPC ENI-hyperpod-kvcache-test2-kvcache-Fn"
        )["NetworkInterface"]["NetworkInterfaceId"]
        moto_eni(self.neighbour_lambda_eni).interface_type = "lambda"
        self.neighbour_ec2 = [
            ec2.create_network_interface(SubnetId=subnet)["NetworkInterface"]["NetworkInterfaceId"],
            ec2.create_security_group(
                GroupName=f"GuardDutyManagedSecurityGroup-{vpc}", Description="gd", VpcId=vpc
            )["GroupId"],
            ec2.create_volume(
                AvailabilityZone=f"{REGION}a",
                Size=50,
                TagSpecifications=[{"ResourceType": "volume", "Tags": tags}],
            )["VolumeId"],
        ]


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
    assert sorted((i.kind, i.id, i.detail) for i in plan.leftovers if i.kind in in_vpc) == sorted([
        ("GuardDuty VPC endpoint", world.vpce, world.vpc),
        ("available ENI", world.eni, world.vpc),
        ("available ENI", world.lambda_free, world.vpc),
        ("GuardDuty security group", world.sg, world.vpc),
    ])  # fmt: skip
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
    assert plan.notes == [
        "Kubernetes API not reachable (timed out); its objects go with the stacks"
    ]

    world.plain("eks").delete_cluster(name=world.cfg.eks.cluster_name)
    plan = plan_teardown(world.clients, world.cfg)
    assert plan.kubernetes == [] and [i.id for i in plan.stacks] == stack_names(world.cfg)
    assert plan.notes == ["EKS cluster not found: skipping the Kubernetes phase"]


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
        f"{IECS.replace('/default/', '/team-b/')}/vllm-kvcache",
        "/api/v1/namespaces/default/persistentvolumeclaims/owners-cache",
        "/api/v1/namespaces/default/persistentvolumeclaims/data",
    ):
        assert world.kube.get(path) is not None, path


@pytest.mark.parametrize("labels", [{}, {"app.kubernetes.io/managed-by": "cdk8s"}])
def test_a_configured_endpoint_without_our_labels_stays(
    world: World, labels: dict[str, str]
) -> None:
    """No labels, or another cdk8s app's: both of ours are needed."""
    world.kube.objects[f"{IECS}/vllm-kvcache"]["metadata"]["labels"] = labels
    plan = plan_teardown(world.clients, world.cfg)
    assert "default/vllm-kvcache" not in {i.id for i in plan.kubernetes}
    assert plan.notes == [
        "InferenceEndpointConfig default/vllm-kvcache lacks our ownership labels "
        "(app.kubernetes.io/managed-by=cdk8s,app.kubernetes.io/part-of=hyperpod-kvcache): "
        "left in place; delete it with kubectl if it is yours"
    ]


PROD_MARK = {"hyperpod-kvcache/owner": "hyperpod-kvcache-prod"}
PVC = "/api/v1/namespaces/default/persistentvolumeclaims/curvine-pvc"


def existing_cfg(world: World) -> Any:
    """This environment on an existing cluster (world's EKS cluster), which prod shares."""
    from tests.scripts.test_preflight_existing import GROUPS
    from tests.synth_support import QUICK_INSTALL_CLUSTER

    name = world.cfg.eks.cluster_name
    return make_cfg(
        environment=ENV, hyperpod=GROUPS,
        existing_cluster={**QUICK_INSTALL_CLUSTER, "eks_cluster_name": name,
                          "hyperpod_cluster_name": name},
        kvcache={"endpoints": [{"name": "vllm-kvcache", "namespace": "default", "replicas": 1}]},
    )  # fmt: skip


def mark(world: World, path: str, annotations: dict[str, str]) -> None:
    world.kube.objects[path]["metadata"]["annotations"] = dict(annotations)


@pytest.mark.parametrize("existing", [True, False], ids=["existing-cluster", "created-cluster"])
def test_teardown_leaves_the_same_named_objects_another_environment_marked(
    world: World, existing: bool
) -> None:
    """prod's endpoint and Curvine PVC carry the same names and labels as ours, in the namespace
    this environment configures: its teardown leaves both and says why."""
    cfg = existing_cfg(world) if existing else world.cfg
    for path in (f"{IECS}/vllm-kvcache", PVC):
        mark(world, path, PROD_MARK)
    # The world's load balancer stands for our endpoint's; teardown waits for every load
    # balancer of the cluster to go, which is not what this test is about.
    world.plain("elbv2").delete_load_balancer(LoadBalancerArn=world.lb)
    plan = plan_teardown(world.clients, cfg)
    assert plan.kubernetes == []
    assert plan.notes == [
        "InferenceEndpointConfig default/vllm-kvcache is marked "
        "hyperpod-kvcache/owner=hyperpod-kvcache-prod, another environment's: left in place; "
        "delete it with kubectl if it is yours",
        "PersistentVolumeClaim default/curvine-pvc is marked "
        "hyperpod-kvcache/owner=hyperpod-kvcache-prod, another environment's: left in place",
    ]
    execute_teardown(world.clients, cfg, lambda _: None, FAST, show=False)
    assert world.kube.writes("DELETE") == []
    assert world.kube.get(f"{IECS}/vllm-kvcache") and world.kube.get(PVC)


def test_on_an_existing_cluster_teardown_deletes_only_what_carries_our_mark(world: World) -> None:
    """There every object the stack created carries our mark: an unmarked one with our labels
    (applied by hand from dist/, or by the cluster's owner) is not this environment's."""
    cfg = existing_cfg(world)
    mark(world, f"{IECS}/vllm-kvcache", {"hyperpod-kvcache/owner": PREFIX})
    plan = plan_teardown(world.clients, cfg)
    assert [i.id for i in plan.kubernetes] == ["default/vllm-kvcache"]
    assert plan.notes == [
        "PersistentVolumeClaim default/curvine-pvc has no hyperpod-kvcache/owner mark, so this "
        "environment did not create it: left in place"
    ]
    execute_teardown(world.clients, cfg, lambda _: None, FAST, show=False)
    assert world.kube.get(f"{IECS}/vllm-kvcache") is None and world.kube.get(PVC)


PVS = "/api/v1/persistentvolumes"


def curvine_volume(world: World, *, claim_gone: bool = False, after_reads: int = 3) -> str:
    """The volume the Curvine CSI driver provisioned for default/curvine-pvc. Its provisioner
    deletes it ``after_reads`` listings of volumes after the claim goes, while the kvcache stack
    (which holds the driver and Curvine) is there; after that, never. ``claim_gone``: a re-run,
    the claim deleted already and the volume Released."""
    claim = world.kube.objects[PVC]
    claim["metadata"]["uid"], claim["spec"]["volumeName"] = "uid-1", "pvc-uid-1"
    world.kube.put(PVS, {
        "metadata": {"name": "pvc-uid-1",
                     "finalizers": ["external-provisioner.volume.kubernetes.io/finalizer"]},
        "spec": {"storageClassName": "curvine-sc", "persistentVolumeReclaimPolicy": "Delete",
                 "claimRef": {"namespace": "default", "name": "curvine-pvc", "uid": "uid-1"}},
    })  # fmt: skip
    countdown: list[int] = []
    if claim_gone:
        del world.kube.objects[PVC]
        countdown.append(after_reads)

    def provisioner(fake: FakeKube, method: str, path: str) -> None:
        if method == "DELETE" and path == PVC:
            countdown.append(after_reads)
        elif method == "GET" and path == PVS and countdown:
            countdown[0] -= 1
            running = f"DeleteStack:{PREFIX}-kvcache" not in world.timeline
            if countdown[0] <= 0 and running and f"{PVS}/pvc-uid-1" in fake.objects:
                del fake.objects[f"{PVS}/pvc-uid-1"]
                world.timeline.append("released:pvc-uid-1")

    world.kube.after_write.append(provisioner)
    world.kube.after_read.append(provisioner)
    return "pvc-uid-1"


@pytest.mark.parametrize("claim_gone", [False, True], ids=["first-run", "re-run"])
def test_the_stacks_go_only_once_the_csi_driver_deleted_the_curvine_volumes(
    world: World, claim_gone: bool
) -> None:
    """The kvcache stack takes the CSI driver and Curvine: a volume they have not deleted by
    then keeps its finalizer (and Curvine's directory) for good."""
    volume = curvine_volume(world, claim_gone=claim_gone)
    execute_teardown(world.clients, world.cfg, lambda _: None, FAST, show=False)
    t = world.timeline
    first_stack = next(i for i, step in enumerate(t) if step.startswith("DeleteStack:"))
    assert t.index(f"released:{volume}") < first_stack
    assert world.kube.get(f"{PVS}/{volume}") is None


def test_a_curvine_volume_never_deleted_stops_teardown_before_the_stacks(world: World) -> None:
    volume = curvine_volume(world, after_reads=10**6)
    quick = dataclasses.replace(FAST, pvc_s=0.3)
    with pytest.raises(OperationError) as failed:
        execute_teardown(world.clients, world.cfg, lambda _: None, quick, show=False)
    assert str(failed.value) == (
        "timed out after 0s waiting for the Curvine CSI driver to delete the volumes of the "
        f"deleted PVCs (last state: {volume})"
    )
    assert not any(step.startswith("DeleteStack:") for step in world.timeline)


def test_a_volume_whose_claim_is_there_or_that_is_retained_is_not_waited_for(
    world: World,
) -> None:
    """A claim recreated under the same name (another uid) has released the old volume; one
    with reclaim policy Retain, or of another namespace or StorageClass, is not the driver's
    to delete now."""
    from scripts.lib.teardown.kubernetes import curvine_volumes_left

    curvine_volume(world)
    claim = {"namespace": "default", "name": "curvine-pvc", "uid": "uid-1"}
    for name, spec in (
        ("retained", {"persistentVolumeReclaimPolicy": "Retain"}),
        ("elsewhere", {"claimRef": {**claim, "namespace": "team-b", "uid": "x"}}),
        ("other-class", {"storageClassName": "gp3", "claimRef": {**claim, "uid": "x"}}),
        ("old", {"claimRef": {**claim, "uid": "uid-0"}}),
    ):
        world.kube.put(PVS, {"metadata": {"name": name}, "spec": {
            "storageClassName": "curvine-sc", "persistentVolumeReclaimPolicy": "Delete",
            "claimRef": claim, **spec}})  # fmt: skip
    assert curvine_volumes_left(world.clients, world.cfg) == ["old"]


def test_a_rerun_after_the_stacks_are_gone_reads_the_last_deleted_stack(world: World) -> None:
    """moto re-creates a deleted stack's resources (new physical ids) when they are listed, so
    this checks which stack ids teardown reads; AWS answers ListStackResources for a deleted
    stack by its id for 90 days."""
    from scripts.lib.teardown.leftovers import stack_ids

    cfn = boto3.client("cloudformation", region_name=REGION)
    live = {
        n: cfn.describe_stacks(StackName=n)["Stacks"][0]["StackId"] for n in stack_names(world.cfg)
    }
    for name in stack_names(world.cfg):
        cfn.delete_stack(StackName=name)
    assert sorted(stack_ids(world.clients, world.cfg)) == sorted(live.values())


def test_log_group_names_come_from_the_stack_resources() -> None:
    from scripts.lib.teardown.leftovers import log_group_names

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
        {"ResourceType": "AWS::Lambda::Function",
         "PhysicalResourceId": "arn:aws:lambda:us-west-2:111122223333:function:hyperpod-G"},
        {"ResourceType": "AWS::ECS::Cluster",
         "PhysicalResourceId": "arn:aws:ecs:us-west-2:111122223333:cluster/other"},
    ]  # fmt: skip
    assert log_group_names(resources, "hp") == {
        "/aws/vendedlogs/x",
        "/aws/lambda/hyperpod-kvcache-test-F",
        "/aws/lambda/hyperpod-G",
        "/aws/eks/hyperpod-kvcache-test/cluster",
        "/aws/sagemaker/Clusters/hp/abc123",
    }


def test_order_of_operations(world: World) -> None:
    steps: list[str] = []
    execute_teardown(world.clients, world.cfg, steps.append, FAST, show=False)
    t = world.timeline
    stacks = [s.split(":", 1)[1] for s in t if s.startswith("DeleteStack:")]
    assert sorted(stacks) == sorted(stack_names(world.cfg))
    # Wave by wave (infra/stack_layout.py): a stack only after every stack that depends on it.
    waves = stack_waves(world.cfg)
    for before, after in itertools.pairwise(waves):
        assert max(stacks.index(n) for n in before) < min(stacks.index(n) for n in after)
    assert waves[0] == [f"{PREFIX}-endpoints", f"{PREFIX}-observability"]
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


def test_the_stacks_of_one_wave_are_deleted_side_by_side(world: World) -> None:
    """Each stack of a wave waits inside DeleteStack for its siblings: one after the other,
    the first would wait alone and the barrier break."""
    waves = [wave for wave in stack_waves(world.cfg) if len(wave) > 1]
    assert waves  # the layout has waves of several stacks
    for wave in waves:
        barrier = threading.Barrier(len(wave))
        world.side_by_side.update(dict.fromkeys(wave, barrier))
    execute_teardown(world.clients, world.cfg, lambda _: None, FAST, show=False)
    assert all(not b.broken for b in world.side_by_side.values())
    assert not plan_teardown(world.clients, world.cfg).stacks


def deleted_too_early(deleted: list[str]) -> list[str]:
    """Each stack of ``deleted`` (in DeleteStack order) that was deleted before a stack that
    depends on it (infra/stack_layout.py); stacks of one wave may come in any order."""
    from infra.stack_layout import STACK_DEPENDENCIES

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


def test_cli_dry_run_json_and_prod_refusal(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from scripts import cli

    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: world.clients)
    monkeypatch.setattr(runtime, "load_config", lambda env: world.cfg)
    result = CliRunner().invoke(cli.app, ["teardown", "--json", "--env", ENV])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["dry_run"] is True and len(data["stacks"]) == len(stack_names(world.cfg))
    assert world.timeline == []

    monkeypatch.setattr(runtime, "load_config", lambda env: make_cfg(environment="prod"))
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
    from scripts.lib.environment import is_prod

    assert is_prod(make_cfg(**overrides))
    assert not is_prod(make_cfg(environment="test"))


def test_recreate_runs_teardown_then_deploy(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from scripts import cli

    deployed: list[str] = []
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: world.clients)

    def deploy(env: str) -> int:
        deployed.append(env)
        return 0

    monkeypatch.setattr(runtime, "DEPLOY", deploy)
    monkeypatch.setattr(runtime, "load_config", lambda env: world.cfg)
    monkeypatch.setattr("scripts.lib.teardown.execute.Timeouts", lambda: FAST)
    result = CliRunner().invoke(cli.app, ["recreate", "--yes", "--skip-verify"])
    assert result.exit_code == 0, result.output
    assert deployed == ["dev"] and not plan_teardown(world.clients, world.cfg).stacks


def test_recreate_reports_its_phases_with_timings(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from scripts import cli
    from scripts.lib.progress import Reporter, fmt_duration
    from tests.scripts.test_progress import FakeClock

    fake = FakeClock()  # each stack deletion "takes" a minute, the deploy 25 minutes
    # The stacks of one wave call DeleteStack from their own threads: a minute each, whichever
    # thread runs first, none lost to two threads reading the clock before either adds to it.
    minute = threading.Lock()

    def a_minute(_: str) -> None:
        with minute:
            fake.t += 60

    world.on_delete_stack.append(a_minute)
    torn_down = 60 * len(stack_names(world.cfg))  # plus the waits' fake sleeps (< 1 s)
    monkeypatch.setattr(runtime, "PROGRESS", Reporter(clock=fake.clock(), tty=False))
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: world.clients)
    monkeypatch.setattr(runtime, "load_config", lambda env: world.cfg)
    monkeypatch.setattr("scripts.lib.teardown.execute.Timeouts", lambda: FAST)
    outcomes = iter([0, 2])

    def deploy(env: str) -> int:
        fake.t += 1500
        return next(outcomes)

    monkeypatch.setattr(runtime, "DEPLOY", deploy)
    result = CliRunner().invoke(cli.app, ["recreate", "--yes", "--skip-verify", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # one JSON object; progress went to stderr
    assert data["ok"] is True and data["exit_code"] == 0
    assert [(p["phase"], p["ok"]) for p in data["phases"]] == [("teardown", True), ("deploy", True)]
    assert torn_down <= data["phases"][0]["seconds"] < torn_down + 1
    assert data["phases"][1]["seconds"] == 1500
    assert any(s.endswith(": deleted") for s in data["teardown"]["steps"])
    assert "stack hyperpod-kvcache-test-kvcache: deleted" in result.stderr
    # The phases on stderr, in order, each with its time.
    phases = [
        line.split(" ", 1)[1] for line in result.stderr.splitlines() if " recreate dev: " in line
    ]
    assert phases == [
        "recreate dev: teardown started",
        f"recreate dev: teardown done after {fmt_duration(torn_down)}",
        "recreate dev: deploy started",
        "recreate dev: deploy done after 25m00s",
    ]

    failed = CliRunner().invoke(cli.app, ["recreate", "--yes", "--skip-verify", "--json"])
    assert failed.exit_code == 4
    data = json.loads(failed.stdout)
    assert data["ok"] is False and data["exit_code"] == 4
    deploy_phase = data["phases"][-1]
    assert deploy_phase["phase"] == "deploy" and not deploy_phase["ok"]
    assert deploy_phase["error"].startswith("make deploy failed")
    assert data["error"] == deploy_phase["error"] and data["command"] == "recreate"
    assert failed.stderr.strip().splitlines()[-1].startswith("error: make deploy failed")
    assert "recreate dev: deploy failed (exit 4) after 25m00s" in failed.stderr

    # Without --json: the same phases as a table with their times.
    outcomes = iter([0])
    table = CliRunner().invoke(cli.app, ["recreate", "--yes", "--skip-verify"])
    assert table.exit_code == 0, table.output
    rows = [line.split() for line in table.stdout.splitlines() if "│" in line]
    assert ["│", "teardown", "│", "ok", "│", fmt_duration(0), "│"] in rows  # nothing left
    assert ["│", "deploy", "│", "ok", "│", "25m00s", "│"] in rows


def test_a_denied_eni_delete_is_left_to_cloudformation() -> None:
    """Stubber: moto allows every call, so a role without ec2:DeleteNetworkInterface (the
    nightly role) cannot be played by it."""
    from botocore.stub import Stubber

    from scripts.lib.teardown.leftovers import _sweep

    ec2 = boto3.client("ec2", region_name=REGION)
    steps: list[str] = []
    with Stubber(ec2) as stub:
        stub.add_client_error(
            "delete_network_interface", "UnauthorizedOperation", "not authorized",
            expected_params={"NetworkInterfaceId": "eni-1"},
        )  # fmt: skip
        stub.add_response("delete_volume", {}, {"VolumeId": "vol-1"})
        clients = Clients(REGION, aws_factory=lambda service: ec2)
        items = [Item("available ENI", "eni-1"), Item("EBS volume", "vol-1")]
        _sweep(clients, items, FAST, steps.append, False)
        stub.assert_no_pending_responses()
    assert steps == [
        "available ENI eni-1: not allowed to delete (UnauthorizedOperation); "
        "left to CloudFormation",
        "deleted EBS volume vol-1",
    ]
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


def test_the_network_stack_is_the_layouts() -> None:
    from infra.stack_layout import STACK_DEPENDENCIES
    from scripts.lib.environment import NETWORK_SUFFIX, network_stack

    assert NETWORK_SUFFIX in STACK_DEPENDENCIES
    assert network_stack(env_cfg()) in stack_names(env_cfg())


def test_a_denied_lambda_eni_delete_waits_only_for_those_in_use() -> None:
    """Stubber: moto allows every call, so the nightly role (no ec2:DeleteNetworkInterface)
    cannot be played by it; Lambda deleting the in-use ENI itself is the second listing."""
    from botocore.stub import Stubber

    from scripts.lib.teardown.leftovers import _release_lambda_enis

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
            "delete_network_interface", "UnauthorizedOperation", "not authorized",
            expected_params={"NetworkInterfaceId": "eni-1"},
        )  # fmt: skip
        stub.add_response("describe_vpcs", vpcs)
        stub.add_response("describe_network_interfaces", enis(("eni-1", "available")))
        clients = Clients(REGION, aws_factory=lambda service: ec2)
        _release_lambda_enis(clients, env_cfg(), FAST, steps.append, False)
        stub.assert_no_pending_responses()
    assert steps == [
        "Lambda ENI eni-1: not allowed to delete (UnauthorizedOperation); left to CloudFormation",
        f"Lambda ENIs in {PREFIX}-network's VPC: 1 in use: eni-2; waiting for Lambda to free them",
    ]


def _objects(bucket: str) -> int:
    listed = boto3.client("s3", region_name=REGION).list_object_versions(Bucket=bucket)
    return len(listed.get("Versions", [])) + len(listed.get("DeleteMarkers", []))


def test_a_late_access_log_delivery_is_emptied_and_the_stack_deleted_again(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "scripts.lib.teardown.stacks.S3_BATCH", 2
    )  # pages of two: several DeleteObjects
    s3 = boto3.client("s3", region_name=REGION)
    bucket = world.access_logs
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    for key in ("s3-access/a", "s3-access/b"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"1")
        s3.put_object(Bucket=bucket, Key=key, Body=b"2")
        s3.delete_object(Bucket=bucket, Key=key)  # a delete marker
    world.deliveries_at_delete = 1  # and one more lands as the delete starts
    steps: list[str] = []
    execute_teardown(world.clients, world.cfg, steps.append, FAST, show=False)

    t, hyperpod = world.timeline, f"DeleteStack:{PREFIX}-hyperpod"
    assert t.count(hyperpod) == 2
    first, retry = (i for i, step in enumerate(t) if step == hyperpod)
    emptied = [i for i, step in enumerate(t) if step == f"DeleteObjects:{bucket}"]
    assert len(emptied) == 4 and first < min(emptied) and max(emptied) < retry  # 7 versions
    assert retry < t.index(f"DeleteStack:{PREFIX}-eks")  # before the next wave
    said = [s for s in steps if "not empty" in s]
    assert said == [
        f"stack {PREFIX}-hyperpod: DELETE_FAILED on a bucket that was not empty (late access-log "
        f"deliveries); emptied {bucket} (7 object versions); retrying the delete once"
    ]
    assert f"stack {PREFIX}-hyperpod: deleted" in steps
    assert _objects(world.neighbour_bucket) == 1
    assert not plan_teardown(world.clients, world.cfg).stacks


def test_a_bucket_that_keeps_filling_fails_the_teardown_after_one_retry(world: World) -> None:
    world.deliveries_at_delete = 2
    with pytest.raises(OperationError) as failed:
        execute_teardown(world.clients, world.cfg, lambda _: None, FAST, show=False)
    message = str(failed.value)
    assert message.startswith(f"stack {PREFIX}-hyperpod: DELETE_FAILED; failed to delete")
    assert f"AWS::S3::Bucket {world.access_logs}): The bucket you tried to delete is not empty" in (
        message
    )
    assert world.timeline.count(f"DeleteStack:{PREFIX}-hyperpod") == 2
    assert world.timeline.count(f"DeleteObjects:{world.access_logs}") == 1
    assert f"DeleteStack:{PREFIX}-eks" not in world.timeline


def test_a_failure_naming_a_bucket_outside_this_environment_empties_nothing(
    world: World,
) -> None:
    world.deliveries_at_delete = 1
    world.blame = world.neighbour_bucket  # an event naming a bucket no stack of ours holds
    with pytest.raises(OperationError, match="is not a resource of stack") as failed:
        execute_teardown(world.clients, world.cfg, lambda _: None, FAST, show=False)
    assert f"bucket {world.neighbour_bucket} is not a resource" in str(failed.value)
    assert not any(step.startswith("DeleteObjects:") for step in world.timeline)
    assert world.timeline.count(f"DeleteStack:{PREFIX}-hyperpod") == 1
    assert _objects(world.neighbour_bucket) == 1 and _objects(world.access_logs) == 1


def test_a_role_that_may_not_empty_the_bucket_gets_the_stack_failure_and_the_bucket(
    world: World,
) -> None:
    """The nightly role has no S3 permissions (bucket names are generated, so no pattern could
    keep them to this environment): the failure says which bucket to empty by hand."""
    world.deliveries_at_delete = 1
    world.denied = {"DeleteObjects"}
    with pytest.raises(OperationError) as failed:
        execute_teardown(world.clients, world.cfg, lambda _: None, FAST, show=False)
    message = str(failed.value)
    assert message.startswith(f"stack {PREFIX}-hyperpod: DELETE_FAILED; failed to delete")
    assert message.endswith(f"; could not empty bucket {world.access_logs}: AccessDenied")
    assert world.timeline.count(f"DeleteStack:{PREFIX}-hyperpod") == 1


@pytest.mark.parametrize(("event", "shown"), [
    ({"LogicalResourceId": "Cluster", "ResourceStatus": "DELETE_IN_PROGRESS",
      "ResourceStatusReason": "Waiting for nodes"},
     "Cluster DELETE_IN_PROGRESS: Waiting for nodes"),
    ({"LogicalResourceId": "Cluster", "ResourceStatus": "DELETE_IN_PROGRESS"},
     "Cluster DELETE_IN_PROGRESS"),
    ({"LogicalResourceId": "Cluster", "ResourceStatusReason": ""}, "Cluster "),
])  # fmt: skip
def test_the_progress_line_shows_the_latest_event_and_its_reason_if_any(
    event: dict[str, str], shown: str
) -> None:
    """What `teardown` prints while a stack deletes: `<status>; latest: <this>`."""
    assert _describe_event(event) == shown


# --- what a failed deletion reports (botocore's Stubber: exact requests, responses checked
# against the service model; moto cannot make DeleteObjects refuse a key)


def _stubbed(service: str) -> Any:
    return boto3.client(service, region_name="us-west-2", aws_access_key_id="testing",
                        aws_secret_access_key="testing")  # fmt: skip


def _event(n: int, logical: str, kind: str, status: str, reason: str = "") -> dict[str, Any]:
    return {"StackId": "arn:aws:cloudformation:us-west-2:123456789012:stack/s/1",
            "EventId": f"e{n}", "StackName": "s", "LogicalResourceId": logical,
            "ResourceType": kind, "ResourceStatus": status, "ResourceStatusReason": reason,
            "Timestamp": f"2026-12-01T10:{59 - n:02d}:00Z"}  # fmt: skip


def test_a_delete_failure_names_only_what_failed_in_this_attempt() -> None:
    """Events come newest first; those before this deletion's DELETE_IN_PROGRESS of the stack
    (an earlier attempt's failures) are not this attempt's and stay out of the message."""
    from botocore.stub import Stubber

    stack_type, bucket = "AWS::CloudFormation::Stack", "AWS::S3::Bucket"
    events = [
        _event(0, "s", stack_type, "DELETE_FAILED", "resources failed"),
        _event(1, "Logs", bucket, "DELETE_FAILED", "bucket not empty"),
        _event(2, "Logs", bucket, "DELETE_IN_PROGRESS"),  # a resource's: not where it began
        _event(3, "Role", "AWS::IAM::Role", "DELETE_COMPLETE"),
        _event(4, "s", stack_type, "DELETE_IN_PROGRESS", "User Initiated"),
        _event(5, "s", stack_type, "DELETE_FAILED"),
        _event(6, "Old", bucket, "DELETE_FAILED", "an earlier attempt"),
        _event(7, "s", stack_type, "DELETE_IN_PROGRESS", "User Initiated"),
    ]
    cfn = _stubbed("cloudformation")
    stack_id = events[0]["StackId"]
    with Stubber(cfn) as stub:
        stub.add_response("describe_stack_events", {"StackEvents": events},
                          {"StackName": stack_id})  # fmt: skip
        found = _events_of_this_delete(cfn, stack_id)
    assert [e["EventId"] for e in found] == ["e0", "e1", "e2", "e3", "e4"]
    message = delete_failure("s", {"StackStatus": "DELETE_FAILED"}, found)
    assert message == (  # the resource that failed, not the stack's own summary event
        "stack s: DELETE_FAILED; failed to delete Logs (AWS::S3::Bucket -): bucket not empty. "
        "Remove what holds it (or delete it by hand) and re-run teardown"
    )


def test_a_delete_failure_reads_whatever_cloudformation_gave() -> None:
    """Two failures are both named; a field CloudFormation left out reads as such; with no
    failed resource, the stack's own status and reason are the message."""
    failed = [
        {"LogicalResourceId": "A", "ResourceType": "AWS::EC2::Subnet", "PhysicalResourceId": "s-1",
         "ResourceStatus": "DELETE_FAILED", "ResourceStatusReason": "has dependencies"},
        {"LogicalResourceId": "B", "ResourceStatus": "DELETE_FAILED"},
    ]  # fmt: skip
    stack = {"StackStatus": "DELETE_FAILED"}
    assert str(DeleteFailed("s", stack, failed)) == (
        "stack s: DELETE_FAILED; failed to delete A (AWS::EC2::Subnet s-1): has dependencies; "
        "B (? -): no reason. Remove what holds it (or delete it by hand) and re-run teardown"
    )
    reason = {"StackStatus": "DELETE_FAILED", "StackStatusReason": "Role is in use"}
    assert str(DeleteFailed("s", reason, [])) == (
        "stack s: DELETE_FAILED (Role is in use); fix it and re-run teardown"
    )
    assert delete_failure("s", stack, []) == (
        "stack s: DELETE_FAILED (no reason given); fix it and re-run teardown"
    )


def test_a_bucket_that_refuses_some_deletions_stops_teardown_naming_one() -> None:
    """DeleteObjects answers 200 with per-key Errors (no exception): emptying must not report
    the bucket empty, but say how many objects stayed and why, with one example."""
    from botocore.stub import Stubber

    s3 = _stubbed("s3")
    versions = {"Versions": [{"Key": "k1", "VersionId": "v1"}, {"Key": "k2", "VersionId": "v2"}]}
    keys = [{"Key": "k1", "VersionId": "v1"}, {"Key": "k2", "VersionId": "v2"}]
    errors = [
        {"Key": "k2", "VersionId": "v2", "Code": "AccessDenied", "Message": "Access Denied"},
        {"Key": "k1", "VersionId": "v1", "Code": "InternalError", "Message": "retry"},
    ]
    with Stubber(s3) as stub:
        stub.add_response("list_object_versions", versions, {"Bucket": "b", "MaxKeys": 1000})
        stub.add_response("delete_objects", {"Errors": errors},
                          {"Bucket": "b", "Delete": {"Objects": keys, "Quiet": True}})  # fmt: skip
        with pytest.raises(OperationError) as failed:
            empty_bucket(s3, "b")
    assert str(failed.value) == (
        "emptying bucket b: 2 objects not deleted, e.g. k2: AccessDenied Access Denied"
    )
    with Stubber(s3) as stub:  # an error without a message: no trailing space, no "None"
        stub.add_response("list_object_versions", versions, {"Bucket": "b", "MaxKeys": 1000})
        stub.add_response("delete_objects", {"Errors": [{"Key": "k1", "Code": "InternalError"}]},
                          {"Bucket": "b", "Delete": {"Objects": keys, "Quiet": True}})  # fmt: skip
        with pytest.raises(OperationError) as failed:
            empty_bucket(s3, "b")
    assert str(failed.value) == "emptying bucket b: 1 objects not deleted, e.g. k1: InternalError"


def test_a_leftover_that_is_already_gone_does_not_stop_a_rerun() -> None:
    """Stubber: a re-run, or CloudFormation's own cleanup, may have removed a leftover between
    the plan and its deletion; each service's not-found code is "already gone", not a failure.
    A security group still held by an endpoint's ENIs is retried until it is free."""
    from botocore.stub import Stubber

    from scripts.lib.teardown.leftovers import _sweep

    ec2, logs = boto3.client("ec2", region_name=REGION), boto3.client("logs", region_name=REGION)
    gone = [("GuardDuty VPC endpoint", "vpce-1", "delete_vpc_endpoints",
             "InvalidVpcEndpointId.NotFound", {"VpcEndpointIds": ["vpce-1"]}),
            ("available ENI", "eni-1", "delete_network_interface",
             "InvalidNetworkInterfaceID.NotFound", {"NetworkInterfaceId": "eni-1"}),
            ("GuardDuty security group", "sg-1", "delete_security_group",
             "InvalidGroup.NotFound", {"GroupId": "sg-1"}),
            ("EBS volume", "vol-1", "delete_volume", "InvalidVolume.NotFound",
             {"VolumeId": "vol-1"})]  # fmt: skip
    steps: list[str] = []
    with Stubber(ec2) as ec2_stub, Stubber(logs) as logs_stub:
        for _kind, _id, operation, code, params in gone:
            ec2_stub.add_client_error(operation, code, "gone", expected_params=params)
        logs_stub.add_client_error("delete_log_group", "ResourceNotFoundException", "gone",
                                   expected_params={"logGroupName": "/aws/x"})  # fmt: skip
        clients = Clients(REGION, aws_factory=lambda s: {"ec2": ec2, "logs": logs}[s])
        items = [Item(kind, id_) for kind, id_, *_ in gone] + [Item("log group", "/aws/x")]
        _sweep(clients, items, FAST, steps.append, False)
        ec2_stub.assert_no_pending_responses()
    assert steps == [f"{kind} {id_}: already gone" for kind, id_, *_ in gone[:3]] + [
        "log group /aws/x: already gone", "EBS volume vol-1: already gone"]  # fmt: skip

    steps.clear()
    with Stubber(ec2) as stub:
        for _ in range(2):
            stub.add_client_error("delete_security_group", "DependencyViolation", "in use",
                                  expected_params={"GroupId": "sg-1"})  # fmt: skip
        stub.add_response("delete_security_group", {}, {"GroupId": "sg-1"})
        _sweep(clients, [Item("GuardDuty security group", "sg-1")], FAST, steps.append, False)
        stub.assert_no_pending_responses()
    assert steps == ["deleted GuardDuty security group sg-1"]


def test_an_endpoint_deletion_is_read_from_its_answer_not_only_its_errors() -> None:
    """Stubber (moto's DeleteVpcEndpoints never lists an unsuccessful endpoint): EC2 answers 200
    and lists each endpoint it did not delete. Not found there is "already gone"; any other
    error stops the sweep with EC2's code and message instead of reporting it deleted."""
    from botocore.stub import Stubber

    from scripts.lib.teardown.leftovers import _sweep

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
    assert steps == [
        "deleted GuardDuty VPC endpoint vpce-1",
        "GuardDuty VPC endpoint vpce-1: already gone",
    ]
    assert str(refused.value) == (
        "An error occurred (OperationNotPermitted) when calling the DeleteVpcEndpoints operation: "
        "owned by GuardDuty"
    )


def test_a_stack_that_is_gone_reads_as_none_and_other_errors_surface() -> None:
    """DescribeStacks on a deleted stack's name fails with ValidationError "does not exist";
    by its id it answers DELETE_COMPLETE. Both mean gone; any other error is not."""
    from botocore.stub import Stubber

    from scripts.lib.teardown.stacks import stack_status

    cfn = boto3.client("cloudformation", region_name=REGION)
    clients = Clients(REGION, aws_factory=lambda service: cfn)
    with Stubber(cfn) as stub:
        stub.add_client_error("describe_stacks", "ValidationError",
                              "Stack with id s does not exist")  # fmt: skip
        assert stack_status(clients, "s") is None
        for status in ("DELETE_COMPLETE", "DELETE_FAILED"):
            stub.add_response("describe_stacks", {"Stacks": [{
                "StackName": "s", "StackStatus": status,
                "CreationTime": "2026-12-01T10:00:00Z"}]})  # fmt: skip
        assert stack_status(clients, "s") is None
        assert stack_status(clients, "s") == "DELETE_FAILED"
        stub.add_client_error("describe_stacks", "AccessDenied", "not authorized")
        with pytest.raises(ClientError, match="AccessDenied"):
            stack_status(clients, "s")


def test_only_buckets_that_failed_for_being_not_empty_are_emptied() -> None:
    """CloudFormation words it "The bucket you tried to delete is not empty" (S3's
    BucketNotEmpty); a bucket that failed for another reason, or another resource, is not
    emptied, and a bucket named twice is emptied once."""
    from scripts.lib.teardown.stacks import not_empty_buckets

    def failed(logical: str, kind: str, physical: str, reason: str) -> dict[str, Any]:
        return {"LogicalResourceId": logical, "ResourceType": kind, "PhysicalResourceId": physical,
                "ResourceStatus": "DELETE_FAILED", "ResourceStatusReason": reason}  # fmt: skip

    events = [
        failed("Logs", "AWS::S3::Bucket", "logs-b", "The bucket you tried to delete is not empty"),
        failed("Logs", "AWS::S3::Bucket", "logs-b", "The bucket you tried to delete is not empty"),
        failed("Data", "AWS::S3::Bucket", "data-b", "BucketNotEmpty (Service: S3, Status: 409)"),
        failed("Denied", "AWS::S3::Bucket", "denied-b", "Access Denied"),
        failed("Queue", "AWS::SQS::Queue", "q", "queue is not empty"),
        {
            **failed("Gone", "AWS::S3::Bucket", "gone-b", "not empty"),
            "ResourceStatus": "DELETE_COMPLETE",
        },
        {**failed("NoReason", "AWS::S3::Bucket", "none-b", ""), "ResourceStatusReason": None},
    ]
    assert not_empty_buckets(events) == ["logs-b", "data-b"]


def test_load_balancers_are_matched_to_the_cluster_twenty_arns_at_a_time() -> None:
    """Stubber (exact requests): ELBv2's DescribeTags takes at most 20 ARNs, so 41 load
    balancers take three calls, each ARN in exactly one; only the cluster's are kept, once."""
    from botocore.stub import Stubber

    from scripts.lib.teardown.kubernetes import cluster_load_balancers

    elb = _stubbed("elbv2")
    arns = [f"arn:aws:elasticloadbalancing:{REGION}:111122223333:loadbalancer/net/lb{n}/{n}"
            for n in range(41)]  # fmt: skip
    ours = {0, 20, 40}

    def tagged(n: int) -> dict[str, Any]:
        if n == 1:
            return {"ResourceArn": arns[n]}  # no Tags at all
        cluster = "kvcache" if n in ours else "kvcache-2"
        return {"ResourceArn": arns[n], "Tags": [{"Key": LB_CLUSTER_TAG, "Value": cluster}]}

    lbs = [{"LoadBalancerArn": arn, "LoadBalancerName": f"lb{n}"} for n, arn in enumerate(arns)]
    with Stubber(elb) as stub:
        stub.add_response("describe_load_balancers", {"LoadBalancers": lbs}, {})
        for start in (0, 20, 40):
            batch = range(start, min(start + 20, len(arns)))
            stub.add_response("describe_tags", {"TagDescriptions": [tagged(n) for n in batch]},
                              {"ResourceArns": [arns[n] for n in batch]})  # fmt: skip
        found = cluster_load_balancers(Clients(REGION, aws_factory=lambda s: elb), "kvcache")
        stub.assert_no_pending_responses()
    assert found == [arns[n] for n in sorted(ours)]


def test_lambda_enis_are_found_in_every_vpc_of_the_environment() -> None:
    """Stubber: two VPCs carry this environment's tags (one left by an earlier deploy);
    Lambda's ENIs in both count, found by type or by description, nothing else."""
    from botocore.stub import Stubber

    from scripts.lib.teardown.leftovers import lambda_enis

    ec2 = _stubbed("ec2")
    by_type = {"NetworkInterfaceId": "eni-1", "InterfaceType": "lambda", "Status": "in-use"}
    by_description = {"NetworkInterfaceId": "eni-2", "Status": "available",
                      "Description": "AWS Lambda VPC ENI-kvcache-Provider"}  # fmt: skip
    other = {"NetworkInterfaceId": "eni-3", "Status": "available", "Description": "a Pod's"}
    with Stubber(ec2) as stub:
        stub.add_response("describe_vpcs", {"Vpcs": [{"VpcId": "vpc-1"}, {"VpcId": "vpc-2"}]},
                          {"Filters": [{"Name": "tag:project", "Values": ["hyperpod-kvcache"]},
                                       {"Name": "tag:environment", "Values": [ENV]}]})  # fmt: skip
        for vpc, enis in (("vpc-1", [by_type, other]), ("vpc-2", [by_description])):
            stub.add_response("describe_network_interfaces", {"NetworkInterfaces": enis},
                              {"Filters": [{"Name": "vpc-id", "Values": [vpc]}]})  # fmt: skip
        found = lambda_enis(Clients(REGION, aws_factory=lambda s: ec2), env_cfg())
        stub.assert_no_pending_responses()
    assert [e["NetworkInterfaceId"] for e in found] == ["eni-1", "eni-2"]


def test_lambda_enis_are_released_past_one_in_use_or_already_gone() -> None:
    """Stubber: the available ENIs after an in-use one are still deleted, one Lambda deleted
    first (not found) is passed over, and the wait says which ENIs hold it, on the reporter."""
    from botocore.stub import Stubber

    from scripts.lib.teardown.leftovers import _release_lambda_enis
    from tests.scripts.test_progress import FakeClock, plain

    ec2 = _stubbed("ec2")
    vpcs = {"Vpcs": [{"VpcId": "vpc-1"}]}
    listed = [("eni-1", "in-use"), ("eni-2", "in-use"), ("eni-3", "available"),
              ("eni-4", "available")]  # fmt: skip
    enis = {"NetworkInterfaces": [{"NetworkInterfaceId": i, "Status": st, "InterfaceType": "lambda"}
                                  for i, st in listed]}  # fmt: skip
    reporter, out = plain(FakeClock())
    steps: list[str] = []
    with Stubber(ec2) as stub:
        stub.add_response("describe_vpcs", vpcs)
        stub.add_response("describe_network_interfaces", enis)
        stub.add_client_error("delete_network_interface", "InvalidNetworkInterfaceID.NotFound",
                              "gone", expected_params={"NetworkInterfaceId": "eni-3"})  # fmt: skip
        stub.add_response("delete_network_interface", {}, {"NetworkInterfaceId": "eni-4"})
        stub.add_response("describe_vpcs", vpcs)
        stub.add_response("describe_network_interfaces", {"NetworkInterfaces": []})
        clients = Clients(REGION, aws_factory=lambda service: ec2)
        timeouts = dataclasses.replace(FAST, lambda_eni_s=7)
        _release_lambda_enis(clients, env_cfg(), timeouts, steps.append, reporter)
        stub.assert_no_pending_responses()
    assert steps == [
        "deleted Lambda ENI eni-4",
        f"Lambda ENIs in {PREFIX}-network's VPC: 2 in use: eni-1, eni-2; "
        "waiting for Lambda to free them",
    ]
    assert [line.split(" ", 1)[1] for line in out.getvalue().splitlines()] == [
        "waiting for Lambda network interfaces to be freed (up to 7s)",
        "Lambda network interfaces to be freed: done after 0s",
    ]


def test_a_security_group_in_use_is_waited_for_on_the_reporter() -> None:
    """Stubber: the sweep's wait for a GuardDuty security group reports on the caller's
    reporter, with the sweep's own timeout."""
    from botocore.stub import Stubber

    from scripts.lib.teardown.leftovers import _sweep
    from tests.scripts.test_progress import FakeClock, plain

    ec2 = _stubbed("ec2")
    reporter, out = plain(FakeClock())
    with Stubber(ec2) as stub:
        stub.add_client_error("delete_security_group", "DependencyViolation", "in use",
                              expected_params={"GroupId": "sg-1"})  # fmt: skip
        stub.add_response("delete_security_group", {}, {"GroupId": "sg-1"})
        clients = Clients(REGION, aws_factory=lambda service: ec2)
        timeouts = dataclasses.replace(FAST, sweep_s=7)
        _sweep(clients, [Item("GuardDuty security group", "sg-1")], timeouts, lambda _: None,
               reporter)  # fmt: skip
        stub.assert_no_pending_responses()
    assert [line.split(" ", 1)[1] for line in out.getvalue().splitlines()] == [
        "waiting for security group sg-1 to be free (up to 7s)",
        "security group sg-1 to be free: done after 0s",
    ]


def test_vpc_leftovers_are_asked_for_by_exact_filters() -> None:
    """Stubber (exact requests): EC2 rejects a filter name it does not know, which moto
    ignores; these are the filters that keep the sweep to this VPC's available ENIs and
    GuardDuty's security group."""
    from botocore.stub import Stubber

    from scripts.lib.teardown.leftovers import vpc_leftovers

    ec2 = _stubbed("ec2")
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
    assert found == [Item("available ENI", "eni-1", "vpc-1"),
                     Item("GuardDuty security group", "sg-1", "vpc-1")]  # fmt: skip


def test_teardown_reports_each_wait_with_its_timeout_and_a_stack_deleting(world: World) -> None:
    """What a user watches (plain lines, as in CI logs): each wait in order with its own
    timeout, and a stack's status with its latest resource event while it deletes."""
    import re

    from tests.scripts.test_progress import FakeClock, plain

    reporter, out = plain(FakeClock(), every_s=3600)
    timeouts = Timeouts(endpoint_s=11, pvc_s=12, stack_s=13, sweep_s=14, lambda_eni_s=15,
                        interval_s=0.05)  # fmt: skip
    world.deleting[f"{PREFIX}-nodes"] = 2
    # The operator's finalizer on the endpoint, kubernetes.io/pvc-protection on the PVC: each
    # stays, marked for deletion, for one read after its DELETE.
    pvc = "/api/v1/namespaces/default/persistentvolumeclaims/curvine-pvc"
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
    execute_teardown(world.clients, world.cfg, lambda _: None, timeouts, reporter)
    lines = [re.sub(r" \(\S+ elapsed\)$| after \S+$", "", line.split(" ", 1)[1])
             for line in out.getvalue().splitlines()]  # fmt: skip
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


def test_late_buckets_are_emptied_only_when_named_and_all_ours() -> None:
    """Stubber: a failure naming no bucket is not retried; every bucket it names is emptied
    when each is a resource of the stack, and none when any is not; the messages name all."""
    from botocore.stub import Stubber

    from scripts.lib.teardown.stacks import _empty_late_buckets

    cfn, s3 = _stubbed("cloudformation"), _stubbed("s3")
    clients = Clients(
        REGION, aws_factory=lambda service: {"cloudformation": cfn, "s3": s3}[service]
    )
    stack = {"StackId": "arn:aws:cloudformation:us-west-2:111122223333:stack/s/1",
             "StackStatus": "DELETE_FAILED"}  # fmt: skip

    def not_empty(bucket: str) -> dict[str, Any]:
        return {"LogicalResourceId": bucket, "ResourceType": "AWS::S3::Bucket",
                "PhysicalResourceId": bucket, "ResourceStatus": "DELETE_FAILED",
                "ResourceStatusReason": "The bucket you tried to delete is not empty"}  # fmt: skip

    def resources(*buckets: str) -> dict[str, Any]:
        return {"StackResourceSummaries": [
            {"LogicalResourceId": b, "PhysicalResourceId": b, "ResourceType": "AWS::S3::Bucket",
             "ResourceStatus": "DELETE_FAILED", "LastUpdatedTimestamp": "2026-12-01T10:00:00Z"}
            for b in buckets]}  # fmt: skip

    steps: list[str] = []
    other = {**not_empty("x"), "ResourceType": "AWS::SQS::Queue"}
    assert not _empty_late_buckets(clients, "s", DeleteFailed("s", stack, [other]), steps.append)

    both = DeleteFailed("s", stack, [not_empty("b1"), not_empty("b2")])
    with Stubber(cfn) as cfn_stub, Stubber(s3) as s3_stub:
        cfn_stub.add_response("list_stack_resources", resources("b1", "b2"),
                              {"StackName": stack["StackId"]})  # fmt: skip
        for bucket in ("b1", "b2"):
            s3_stub.add_response("list_object_versions", {}, {"Bucket": bucket, "MaxKeys": 1000})
        assert _empty_late_buckets(clients, "s", both, steps.append)
        cfn_stub.add_response("list_stack_resources", resources())
        with pytest.raises(OperationError) as foreign:
            _empty_late_buckets(clients, "s", both, steps.append)
    assert steps == [
        "stack s: DELETE_FAILED on a bucket that was not empty (late access-log deliveries); "
        "emptied b1 (0 object versions), b2 (0 object versions); retrying the delete once"
    ]
    assert str(foreign.value).endswith("; bucket b1, b2 is not a resource of stack s: left alone")


def test_the_kubernetes_plan_is_exactly_our_objects_in_every_configured_namespace(
    world: World,
) -> None:
    """A configured endpoint that is not deployed does not hide the next one; our Curvine PVCs
    are found in each configured namespace; a PVC with only one of our labels, or ours on
    another StorageClass, is not ours to delete."""
    cfg = make_cfg(
        environment=ENV,
        eks={"cluster_name": world.cfg.eks.cluster_name},
        hyperpod={"cluster_name": world.cfg.hyperpod.cluster_name},
        kvcache={"endpoints": [{"name": "not-deployed", "namespace": "default", "replicas": 1},
                               {"name": "vllm-kvcache", "namespace": "team-b", "replicas": 1}]},
    )  # fmt: skip
    pvcs = "/api/v1/namespaces/team-b/persistentvolumeclaims"
    for name, labels, storage_class in (
        ("cache", OWNED, "curvine-sc"),
        ("half-ours", {"app.kubernetes.io/managed-by": "cdk8s"}, "curvine-sc"),
        ("other-class", OWNED, "gp3"),
    ):
        world.kube.put(pvcs, {"metadata": {"name": name, "namespace": "team-b", "labels": labels},
                              "spec": {"storageClassName": storage_class}})  # fmt: skip
    plan = plan_teardown(world.clients, cfg)
    assert plan.kubernetes == [
        Item("InferenceEndpointConfig", "team-b/vllm-kvcache"),
        Item("PersistentVolumeClaim", "default/curvine-pvc", "curvine-sc"),
        Item("PersistentVolumeClaim", "team-b/cache", "curvine-sc"),
    ]


def test_whether_the_eks_cluster_exists_is_read_from_its_error_code() -> None:
    """Stubber: ResourceNotFoundException means no cluster; any other error stops teardown."""
    from botocore.stub import Stubber

    from scripts.lib.teardown.kubernetes import eks_cluster_exists

    eks = _stubbed("eks")
    clients = Clients(REGION, aws_factory=lambda service: eks)
    with Stubber(eks) as stub:
        stub.add_client_error("describe_cluster", "ResourceNotFoundException", "No cluster found")
        assert eks_cluster_exists(clients, env_cfg()) is False
        stub.add_client_error("describe_cluster", "AccessDeniedException", "not authorized")
        with pytest.raises(ClientError, match="AccessDeniedException"):
            eks_cluster_exists(clients, env_cfg())


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


def test_a_kubernetes_api_failure_stops_teardown_saying_to_rerun(world: World) -> None:
    world.kube.fail[("DELETE", f"{IECS}/vllm-kvcache")] = 500
    with pytest.raises(OperationError) as failed:
        execute_teardown(world.clients, world.cfg, lambda _: None, FAST, show=False)
    assert str(failed.value) == "Kubernetes API: 500 Internal Server Error; re-run teardown"


def test_the_stack_ids_are_the_live_ones_and_each_names_last_deletion() -> None:
    """Stubber: ListStacks keeps deleted stacks; per name, the one deleted last (by
    DeletionTime, else CreationTime; the first of a tie) is the one whose log groups count."""
    from botocore.stub import Stubber

    from scripts.lib.teardown.leftovers import stack_ids

    cfn = _stubbed("cloudformation")
    a, b, live = (f"{PREFIX}-{suffix}" for suffix in ("kvcache", "addons", "network"))

    def summary(name: str, id_: str, status: str, created: str, deleted: str = "") -> Any:
        found = {"StackName": name, "StackId": id_, "StackStatus": status,
                 "CreationTime": f"2026-12-01T{created}:00Z"}  # fmt: skip
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
    from botocore.stub import Stubber

    from scripts.lib.teardown.leftovers import stack_resources

    cfn = _stubbed("cloudformation")
    child = "arn:aws:cloudformation:us-west-2:111122223333:stack/child/1"

    def resource(logical: str, kind: str, physical: str = "") -> dict[str, Any]:
        found = {"LogicalResourceId": logical, "ResourceType": kind,
                 "ResourceStatus": "CREATE_COMPLETE",
                 "LastUpdatedTimestamp": "2026-12-01T10:00:00Z"}  # fmt: skip
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
        stub.add_response("list_stack_resources", {"StackResourceSummaries": parent},
                          {"StackName": "parent"})  # fmt: skip
        stub.add_response("list_stack_resources", {"StackResourceSummaries": inner},
                          {"StackName": child})  # fmt: skip
        found = stack_resources(Clients(REGION, aws_factory=lambda service: cfn), "parent")
        stub.assert_no_pending_responses()
    assert [r["LogicalResourceId"] for r in found] == ["Fn", "Child", "Inner", "NotYet", "Logs"]


def test_account_leftovers_name_hyperpods_log_group_and_each_volume_once() -> None:
    """Stubber (exact requests): the HyperPod log group is under the configured cluster name;
    a volume both tagged for us and by the EBS CSI driver is listed once, with its size."""
    from botocore.stub import Stubber

    from scripts.lib.teardown.leftovers import account_leftovers

    cfg = make_cfg(environment=ENV, eks={"cluster_name": "kv-eks"},
                   hyperpod={"cluster_name": "kv-hp"})  # fmt: skip
    cfn, logs, ec2 = _stubbed("cloudformation"), _stubbed("logs"), _stubbed("ec2")
    clients = Clients(REGION, aws_factory=lambda s: {"cloudformation": cfn, "logs": logs,
                                                     "ec2": ec2}[s])  # fmt: skip
    hyperpod = "arn:aws:sagemaker:us-west-2:111122223333:cluster/abc123"
    with Stubber(cfn) as cfn_stub, Stubber(logs) as logs_stub, Stubber(ec2) as ec2_stub:
        cfn_stub.add_response("list_stacks", {"StackSummaries": [
            {"StackName": f"{PREFIX}-hyperpod", "StackId": "hp", "StackStatus": "CREATE_COMPLETE",
             "CreationTime": "2026-12-01T09:00:00Z"}]})  # fmt: skip
        cfn_stub.add_response("list_stack_resources", {"StackResourceSummaries": [
            {"LogicalResourceId": "Cluster", "ResourceType": "AWS::SageMaker::Cluster",
             "PhysicalResourceId": hyperpod, "ResourceStatus": "CREATE_COMPLETE",
             "LastUpdatedTimestamp": "2026-12-01T10:00:00Z"}]})  # fmt: skip
        for group in ("/aws/eks/kv-eks/cluster", "/aws/sagemaker/Clusters/kv-hp/abc123"):
            found = [{"logGroupName": group}] if "sagemaker" in group else []
            logs_stub.add_response("describe_log_groups", {"logGroups": found},
                                   {"logGroupNamePrefix": group})  # fmt: skip
        available = {"Name": "status", "Values": ["available"]}
        ours = [{"Name": "tag:project", "Values": [cfg.project]},
                {"Name": "tag:environment", "Values": [ENV]}]  # fmt: skip
        csi = {"Name": "tag-key", "Values": ["kubernetes.io/cluster/kv-eks"]}
        ec2_stub.add_response("describe_volumes", {"Volumes": [{"VolumeId": "vol-1", "Size": 50}]},
                              {"Filters": [available, *ours]})  # fmt: skip
        ec2_stub.add_response("describe_volumes", {"Volumes": [
            {"VolumeId": "vol-1", "Size": 50}, {"VolumeId": "vol-2", "Size": 20}]},
            {"Filters": [available, csi]})  # fmt: skip
        items = account_leftovers(clients, cfg)
    assert items == [
        Item("log group", "/aws/sagemaker/Clusters/kv-hp/abc123"),
        Item("EBS volume", "vol-1", "50 GiB, available"),
        Item("EBS volume", "vol-2", "20 GiB, available"),
    ]


def test_an_object_deleted_by_someone_else_meanwhile_is_not_a_failure(world: World) -> None:
    """Between teardown's read and its DELETE, the endpoint and the PVC go (another teardown,
    a kubectl delete): the 404 is taken as done, and the teardown goes on."""
    pvcs = "/api/v1/namespaces/default/persistentvolumeclaims"
    racing = {f"{IECS}/vllm-kvcache": f"{IECS}/vllm-kvcache", pvcs: f"{pvcs}/curvine-pvc"}

    def someone_else(fake: FakeKube, method: str, path: str) -> None:
        if gone := racing.pop(path, None):
            del fake.objects[gone]
            if gone.endswith("/vllm-kvcache"):  # its load balancer goes with it
                world.plain("elbv2").delete_load_balancer(LoadBalancerArn=world.lb)

    world.kube.after_read.append(someone_else)
    steps: list[str] = []
    execute_teardown(world.clients, world.cfg, steps.append, FAST, show=False)
    assert not racing and not [
        s for s in steps if s.startswith(("deleted Inference", "deleted PVC"))
    ]
    assert f"stack {PREFIX}-network: deleted" in steps


def test_a_stack_read_fails_with_the_error_even_without_a_message() -> None:
    """A client error CloudFormation sent without a Message is raised as it is (not a
    TypeError from reading it); an empty answer reads as no stack."""
    from botocore.stub import Stubber

    from scripts.lib.teardown.stacks import _stack, stack_status

    class Throttled:
        def describe_stacks(self, StackName: str) -> Any:
            raise ClientError({"Error": {"Code": "Throttling"}}, "DescribeStacks")

    with pytest.raises(ClientError, match="Throttling"):
        stack_status(Clients(REGION, aws_factory=lambda service: Throttled()), "s")
    with pytest.raises(ClientError, match="Throttling"):
        _stack(Throttled(), "s")
    cfn = _stubbed("cloudformation")
    with Stubber(cfn) as stub:
        stub.add_response("describe_stacks", {"Stacks": []})
        stub.add_response("describe_stacks", {"Stacks": []})
        assert stack_status(Clients(REGION, aws_factory=lambda service: cfn), "s") is None
        assert _stack(cfn, "s") is None
