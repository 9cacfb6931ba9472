"""The world teardown's tests run in: this environment and its neighbours in moto and FakeKube, and
the helpers that build and read it.

Doubles: moto for everything it supports: CloudFormation (stacks with a trivial resource, S3
buckets), EC2 (VPC, ENI, security group, VPC endpoint, EBS volume), S3 (object versions, delete
markers), CloudWatch Logs, Lambda (functions created through CloudFormation, whose log groups
teardown derives from ListStackResources), ELBv2 and EKS; FakeKube (local in-memory API server
behind the official client) for InferenceEndpointConfigs and PVCs. A FakeKube hook plays the AWS
Load Balancer Controller: deleting the endpoint deletes its load balancer.

Where moto falls short, a thin double, each saying why where it is defined: Lambda's ENIs get
their ``lambda`` type and in-use status set on moto's model (``moto_eni``), and World frees one
after the eks stack goes and refuses to delete the network stack while one is left; botocore
event hooks play CloudFormation's DELETE_FAILED on a bucket that is not empty
(tests/doubles/cloudformation_delete.py); botocore's Stubber plays a role that may not delete
ENIs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import boto3
from botocore.exceptions import ClientError
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends

from scripts.lib.clients import Clients
from scripts.lib.environment import stack_names
from scripts.lib.errors import OperationError
from scripts.lib.teardown.model import Timeouts
from tests.doubles.cloudformation_delete import DeleteFailedStacks
from tests.doubles.fake_kube import FakeKube
from tests.support.config import make_cfg
from tests.support.endpoint_objects import IECS, endpoint_config
from tests.support.stack_templates import BUCKETS_TEMPLATE, TEMPLATE, function_template

REGION = "us-west-2"
FAST = Timeouts(endpoint_s=10, pvc_s=10, stack_s=30, sweep_s=10, lambda_eni_s=10, interval_s=0.05)
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
        kvcache={"endpoints": [{"name": "vllm-kvcache", "namespace": "models", "replicas": 1}]},
    )


def moto_eni(eni_id: str) -> Any:
    """moto's model of an ENI. Lambda creates its ENIs itself (InterfaceType ``lambda``, which
    CreateNetworkInterface does not accept) and frees them on its own schedule, so the tests set
    the type and the status on the model, the way Lambda would."""
    return ec2_backends[DEFAULT_ACCOUNT_ID][REGION].enis[eni_id]


class World(DeleteFailedStacks):
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
        # moto's backends are not thread-safe (a DescribeStacks iterating the stacks while
        # another wave's thread deletes one fails with "OrderedDict mutated during iteration"):
        # each request reaches moto alone. Re-entrant, for handlers that call moto mid-request.
        self._moto = threading.RLock()

    def _serialized(self, client: Any) -> Any:
        """``client`` with each request to moto made under the world's lock. The generic events
        run after the operation's own handlers, so a barrier in a before-call handler is reached
        with the lock free."""
        events = client.meta.events
        events.register("before-call", self._take)
        events.register("after-call", self._give)
        events.register("after-call-error", self._give)
        return client

    # Event handlers return None: a value from a before-call handler would be taken as the
    # response and the request never made. A request answered by an earlier handler (the
    # DeleteStack double) never took the lock: the request's own context says whether it did.
    def _take(self, context: dict[str, Any], **_: Any) -> None:
        self._moto.acquire()
        context["moto_lock"] = True

    def _give(self, context: dict[str, Any], **_: Any) -> None:
        if context.pop("moto_lock", False):
            self._moto.release()

    def plain(self, service: str) -> Any:
        """A client of the test's own (not recorded, not the code under test's); one per service
        because creating a botocore client costs more than most moto calls."""
        if service not in self._plain:
            self._plain[service] = self._serialized(boto3.client(service, region_name=REGION))
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
        return self._serialized(client)

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
            Name="k8s-models-vllmkvca",
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
        foreign["metadata"] = {"name": "owners-model", "namespace": "models"}
        self.kube.put(IECS, foreign)
        elsewhere = endpoint_config()
        elsewhere["metadata"] = {"name": "vllm-kvcache", "namespace": "team-b", "labels": OWNED}
        self.kube.put(IECS.replace("/models/", "/team-b/"), elsewhere)
        pvcs = "/api/v1/namespaces/models/persistentvolumeclaims"
        self.kube.put(
            pvcs,
            {
                "metadata": {"name": "curvine-pvc", "namespace": "models", "labels": OWNED},
                "spec": {"storageClassName": "curvine-sc"},
            },
        )
        self.kube.put(
            pvcs,
            {
                "metadata": {"name": "owners-cache", "namespace": "models"},
                "spec": {"storageClassName": "curvine-sc"},
            },
        )
        self.kube.put(
            pvcs,
            {
                "metadata": {"name": "data", "namespace": "models"},
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


def stubbed_client(service: str) -> Any:
    return boto3.client(
        service,
        region_name="us-west-2",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
