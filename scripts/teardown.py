"""Ordered, re-runnable teardown of one environment, then a sweep of what CloudFormation leaves.

Order: InferenceEndpointConfigs (and wait until their load balancers are gone) -> PVCs on the
Curvine StorageClass -> stacks in reverse deploy order (kvcache, addons, hyperpod, eks; the VPC
sweep of available ENIs and GuardDuty's endpoints and security group runs right before the network
stack) -> log groups and retained EBS volumes. Each step looks at what exists now, so a re-run
after a failure skips what is already gone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from botocore.exceptions import ClientError, WaiterError
from kubernetes.client.exceptions import ApiException

from infra.config import AppConfig
from scripts.clients import Clients
from scripts.common import OperationError
from scripts.endpoints import IEC_GROUP, IEC_PLURAL, IEC_VERSION
from scripts.kube import wait_for
from scripts.verify import cluster_names

STACK_SUFFIXES = ("network", "eks", "hyperpod", "addons", "kvcache")  # deploy order
LB_CLUSTER_TAG = "elbv2.k8s.aws/cluster"  # set by the AWS Load Balancer Controller
Log = Callable[[str], None]


def is_prod(cfg: AppConfig) -> bool:
    """Production by name, or by the protections only production turns on."""
    return (
        cfg.environment.lower().startswith("prod")
        or cfg.termination_protection
        or cfg.retain_stateful_resources
    )


def stack_names(cfg: AppConfig) -> list[str]:
    """Stacks in teardown (reverse deploy) order."""
    return [f"{cfg.stack_prefix}-{s}" for s in reversed(STACK_SUFFIXES)]


@dataclass
class Item:
    kind: str
    id: str
    detail: str = ""


@dataclass
class Plan:
    kubernetes: list[Item] = field(default_factory=list)
    stacks: list[Item] = field(default_factory=list)
    leftovers: list[Item] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def items(self) -> list[Item]:
        return self.kubernetes + self.stacks + self.leftovers


def _tag_filters(cfg: AppConfig) -> list[dict[str, Any]]:
    return [
        {"Name": "tag:project", "Values": [cfg.project]},
        {"Name": "tag:environment", "Values": [cfg.environment]},
    ]


# ---- discovery -------------------------------------------------------------------------------


def eks_cluster_exists(clients: Clients, cfg: AppConfig) -> bool:
    name, _ = cluster_names(cfg)
    try:
        clients.aws("eks").describe_cluster(name=name)
        return True
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ResourceNotFoundException":
            return False
        raise


def list_endpoints(clients: Clients) -> list[Item]:
    try:
        listed = clients.custom().list_cluster_custom_object(IEC_GROUP, IEC_VERSION, IEC_PLURAL)
    except ApiException as exc:
        if exc.status == 404:  # CRD gone with the operator add-on
            return []
        raise
    return [
        Item("InferenceEndpointConfig", f"{o['metadata']['namespace']}/{o['metadata']['name']}")
        for o in listed.get("items") or []
    ]


def list_curvine_pvcs(clients: Clients) -> list[Item]:
    from k8s.foundation import CURVINE_SC  # lazily: see scripts/endpoints.py

    pvcs = clients.core().list_persistent_volume_claim_for_all_namespaces()
    return [
        Item(
            "PersistentVolumeClaim",
            f"{p.metadata.namespace}/{p.metadata.name}",
            CURVINE_SC,
        )
        for p in pvcs.items
        if p.spec.storage_class_name == CURVINE_SC
    ]


def stack_status(clients: Clients, name: str) -> str | None:
    try:
        stacks = clients.aws("cloudformation").describe_stacks(StackName=name)["Stacks"]
    except ClientError as exc:
        if "does not exist" in exc.response["Error"].get("Message", ""):
            return None
        raise
    status = stacks[0]["StackStatus"] if stacks else None
    return None if status == "DELETE_COMPLETE" else status


def cluster_load_balancers(clients: Clients, eks_name: str) -> list[str]:
    elb = clients.aws("elbv2")
    arns = [
        lb["LoadBalancerArn"]
        for page in elb.get_paginator("describe_load_balancers").paginate()
        for lb in page["LoadBalancers"]
    ]
    found = []
    for i in range(0, len(arns), 20):
        for desc in elb.describe_tags(ResourceArns=arns[i : i + 20])["TagDescriptions"]:
            tags = {t["Key"]: t["Value"] for t in desc.get("Tags", [])}
            if tags.get(LB_CLUSTER_TAG) == eks_name:
                found.append(desc["ResourceArn"])
    return found


def environment_vpcs(clients: Clients, cfg: AppConfig) -> list[str]:
    vpcs = clients.aws("ec2").describe_vpcs(Filters=_tag_filters(cfg))["Vpcs"]
    return [v["VpcId"] for v in vpcs]


def vpc_leftovers(clients: Clients, cfg: AppConfig) -> list[Item]:
    ec2 = clients.aws("ec2")
    items: list[Item] = []
    for vpc in environment_vpcs(clients, cfg):
        vpc_filter = [{"Name": "vpc-id", "Values": [vpc]}]
        for ep in ec2.describe_vpc_endpoints(Filters=vpc_filter)["VpcEndpoints"]:
            if "guardduty-data" in ep["ServiceName"] and ep.get("State", "").lower() != "deleted":
                items.append(Item("GuardDuty VPC endpoint", ep["VpcEndpointId"], vpc))
        enis = ec2.describe_network_interfaces(
            Filters=[*vpc_filter, {"Name": "status", "Values": ["available"]}]
        )["NetworkInterfaces"]
        items += [Item("available ENI", e["NetworkInterfaceId"], vpc) for e in enis]
        sgs = ec2.describe_security_groups(
            Filters=[
                *vpc_filter,
                {"Name": "group-name", "Values": ["GuardDutyManagedSecurityGroup*"]},
            ]
        )["SecurityGroups"]
        items += [Item("GuardDuty security group", g["GroupId"], vpc) for g in sgs]
    return items


def account_leftovers(clients: Clients, cfg: AppConfig) -> list[Item]:
    items: list[Item] = []
    eks_name, hp_name = cluster_names(cfg)
    owned = cfg.existing_cluster is None
    # Names this environment's stacks give their log groups; an attached (existing) cluster's
    # own log groups are not ours to delete.
    markers = [cfg.stack_prefix] + ([eks_name, hp_name] if owned else [])
    logs = clients.aws("logs")
    for page in logs.get_paginator("describe_log_groups").paginate():
        for group in page["logGroups"]:
            name = group["logGroupName"]
            if any(m in name for m in markers):
                items.append(Item("log group", name))
    ec2 = clients.aws("ec2")
    available = {"Name": "status", "Values": ["available"]}
    volumes = ec2.describe_volumes(Filters=[available, *_tag_filters(cfg)])["Volumes"]
    if owned:
        volumes += ec2.describe_volumes(
            Filters=[
                available,
                {"Name": "tag-key", "Values": [f"kubernetes.io/cluster/{eks_name}"]},
            ]
        )["Volumes"]
    seen = set()
    for v in volumes:
        if v["VolumeId"] not in seen:
            seen.add(v["VolumeId"])
            items.append(Item("EBS volume", v["VolumeId"], f"{v['Size']} GiB, available"))
    return items


def plan_teardown(clients: Clients, cfg: AppConfig) -> Plan:
    plan = Plan()
    if eks_cluster_exists(clients, cfg):
        try:
            plan.kubernetes = list_endpoints(clients) + list_curvine_pvcs(clients)
        except (ApiException, OSError) as exc:
            plan.notes.append(
                f"Kubernetes API not reachable ({exc}); its objects go with the stacks"
            )
    else:
        plan.notes.append("EKS cluster not found: skipping the Kubernetes phase")
    for name in stack_names(cfg):
        status = stack_status(clients, name)
        if status is not None:
            plan.stacks.append(Item("stack", name, status))
    plan.leftovers = vpc_leftovers(clients, cfg) + account_leftovers(clients, cfg)
    return plan


# ---- execution -------------------------------------------------------------------------------


@dataclass
class Timeouts:
    endpoint_s: float = 1800
    pvc_s: float = 600
    stack_s: float = 5400
    sweep_s: float = 600
    interval_s: float = 10


def _delete_endpoints(clients: Clients, cfg: AppConfig, t: Timeouts, log: Log, show: bool) -> None:
    custom = clients.custom()
    endpoints = list_endpoints(clients)
    for item in endpoints:
        ns, name = item.id.split("/", 1)
        try:
            custom.delete_namespaced_custom_object(IEC_GROUP, IEC_VERSION, ns, IEC_PLURAL, name)
            log(f"deleted InferenceEndpointConfig {item.id}")
        except ApiException as exc:
            if exc.status != 404:
                raise
    if endpoints:
        wait_for(
            "InferenceEndpointConfigs to go",
            lambda: not list_endpoints(clients),
            t.endpoint_s,
            t.interval_s,
            show,
        )
    eks_name, _ = cluster_names(cfg)
    wait_for(
        f"load balancers of {eks_name} to go",
        lambda: not cluster_load_balancers(clients, eks_name),
        t.endpoint_s,
        t.interval_s,
        show,
    )


def _delete_pvcs(clients: Clients, t: Timeouts, log: Log, show: bool) -> None:
    core = clients.core()
    pvcs = list_curvine_pvcs(clients)
    for item in pvcs:
        ns, name = item.id.split("/", 1)
        try:
            core.delete_namespaced_persistent_volume_claim(name, ns)
            log(f"deleted PVC {item.id}")
        except ApiException as exc:
            if exc.status != 404:
                raise
    if pvcs:
        wait_for(
            "Curvine PVCs to go",
            lambda: not list_curvine_pvcs(clients),
            t.pvc_s,
            t.interval_s,
            show,
        )


def _delete_stack(clients: Clients, name: str, t: Timeouts, log: Log) -> None:
    status = stack_status(clients, name)
    if status is None:
        log(f"stack {name}: not found, skipped")
        return
    cfn = clients.aws("cloudformation")
    cfn.delete_stack(StackName=name)
    log(f"stack {name}: delete requested (was {status})")
    delay = max(1, int(t.interval_s))
    try:
        cfn.get_waiter("stack_delete_complete").wait(
            StackName=name,
            WaiterConfig={"Delay": delay, "MaxAttempts": max(1, int(t.stack_s // delay))},
        )
    except WaiterError as exc:
        reason = ""
        try:
            stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
            reason = f"{stack['StackStatus']}: {stack.get('StackStatusReason', '')}"
        except ClientError:
            pass
        raise OperationError(
            f"stack {name} did not delete ({reason or exc}); fix and re-run teardown"
        ) from None
    log(f"stack {name}: deleted")


def _sweep(clients: Clients, items: list[Item], t: Timeouts, log: Log, show: bool) -> None:
    ec2, logs = clients.aws("ec2"), clients.aws("logs")
    gone_codes = (
        "NotFound",
        "InvalidVpcEndpointId.NotFound",
        "InvalidNetworkInterfaceID.NotFound",
        "InvalidGroup.NotFound",
        "InvalidVolume.NotFound",
        "ResourceNotFoundException",
    )
    order = [
        "GuardDuty VPC endpoint",
        "available ENI",
        "GuardDuty security group",
        "log group",
        "EBS volume",
    ]
    for item in sorted(items, key=lambda i: order.index(i.kind)):
        try:
            if item.kind == "GuardDuty VPC endpoint":
                ec2.delete_vpc_endpoints(VpcEndpointIds=[item.id])
            elif item.kind == "available ENI":
                ec2.delete_network_interface(NetworkInterfaceId=item.id)
            elif item.kind == "GuardDuty security group":
                # The endpoint's ENIs hold the group for a while after the endpoint goes.
                def deleted(group: str = item.id) -> bool:
                    try:
                        ec2.delete_security_group(GroupId=group)
                        return True
                    except ClientError as exc:
                        if exc.response["Error"]["Code"] == "DependencyViolation":
                            return False
                        raise

                wait_for(
                    f"security group {item.id} to be free", deleted, t.sweep_s, t.interval_s, show
                )
            elif item.kind == "log group":
                logs.delete_log_group(logGroupName=item.id)
            elif item.kind == "EBS volume":
                ec2.delete_volume(VolumeId=item.id)
            log(f"deleted {item.kind} {item.id}")
        except ClientError as exc:
            if exc.response["Error"]["Code"] in gone_codes:
                log(f"{item.kind} {item.id}: already gone")
                continue
            raise


def execute_teardown(
    clients: Clients, cfg: AppConfig, log: Log, timeouts: Timeouts | None = None, show: bool = True
) -> None:
    t = timeouts or Timeouts()
    try:
        if eks_cluster_exists(clients, cfg):
            _delete_endpoints(clients, cfg, t, log, show)
            _delete_pvcs(clients, t, log, show)
        else:
            log("EKS cluster not found: Kubernetes phase skipped")
        for name in stack_names(cfg):
            if name.endswith("-network"):
                _sweep(clients, vpc_leftovers(clients, cfg), t, log, show)
            _delete_stack(clients, name, t, log)
        _sweep(clients, vpc_leftovers(clients, cfg) + account_leftovers(clients, cfg), t, log, show)
    except ClientError as exc:
        raise OperationError(
            f"AWS: {exc}; fix and re-run teardown (finished steps are skipped)"
        ) from None
    except ApiException as exc:
        raise OperationError(
            f"Kubernetes API: {exc.status} {exc.reason}; re-run teardown"
        ) from None
