"""What CloudFormation leaves behind and teardown sweeps: GuardDuty's VPC endpoint and security
group, available ENIs, Lambda's network interfaces, the stacks' log groups and retained EBS
volumes, found by exact names and tag values."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from infra.config import AppConfig
from scripts.lib.clients import Clients
from scripts.lib.environment import cluster_names, network_stack, stack_names
from scripts.lib.progress import Show, wait_for
from scripts.lib.teardown.model import DENIED_CODES, Item, Log, Timeouts

LAMBDA_ENI_DESCRIPTION = "AWS Lambda VPC ENI"  # how Lambda describes its hyperplane ENIs


def _tag_filters(cfg: AppConfig) -> list[dict[str, Any]]:
    return [
        {"Name": "tag:project", "Values": [cfg.project]},
        {"Name": "tag:environment", "Values": [cfg.environment]},
    ]


def environment_vpcs(clients: Clients, cfg: AppConfig) -> list[str]:
    vpcs = clients.aws("ec2").describe_vpcs(Filters=_tag_filters(cfg))["Vpcs"]
    return [v["VpcId"] for v in vpcs]


def vpc_leftovers(clients: Clients, cfg: AppConfig) -> list[Item]:
    ec2 = clients.aws("ec2")
    items: list[Item] = []
    for vpc in environment_vpcs(clients, cfg):
        vpc_filter = [{"Name": "vpc-id", "Values": [vpc]}]
        for ep in ec2.describe_vpc_endpoints(Filters=vpc_filter)["VpcEndpoints"]:
            if "guardduty-data" in ep["ServiceName"] and ep["State"].lower() != "deleted":
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


def is_lambda_eni(eni: dict[str, Any]) -> bool:
    return eni.get("InterfaceType") == "lambda" or (eni.get("Description") or "").startswith(
        LAMBDA_ENI_DESCRIPTION
    )


def lambda_enis(clients: Clients, cfg: AppConfig) -> list[dict[str, Any]]:
    """The network interfaces Lambda keeps in this environment's VPC for VPC-attached functions
    (the EKS kubectl handler, custom-resource handlers): type ``lambda``, described as
    "AWS Lambda VPC ENI-<function>". Lambda frees them up to ~40 minutes after the function is
    deleted; until then they hold the subnets and security groups they sit in."""
    ec2 = clients.aws("ec2")
    found = []
    for vpc in environment_vpcs(clients, cfg):
        pages = ec2.get_paginator("describe_network_interfaces").paginate(
            Filters=[{"Name": "vpc-id", "Values": [vpc]}]
        )
        found += [eni for page in pages for eni in page["NetworkInterfaces"] if is_lambda_eni(eni)]
    return found


def stack_ids(clients: Clients, cfg: AppConfig) -> list[str]:
    """Ids of this environment's stacks (exact names): the live ones and, per name, the one
    deleted last, so that a re-run after the stacks are gone still finds their log groups."""
    names = set(stack_names(cfg))
    live: list[str] = []
    deleted: dict[str, tuple[Any, str]] = {}
    cfn = clients.aws("cloudformation")
    for page in cfn.get_paginator("list_stacks").paginate():
        for s in page["StackSummaries"]:
            if s["StackName"] not in names:
                continue
            if s["StackStatus"] != "DELETE_COMPLETE":
                live.append(s["StackId"])
                continue
            when = s.get("DeletionTime") or s["CreationTime"]
            prev = deleted.get(s["StackName"])
            if prev is None or when > prev[0]:
                deleted[s["StackName"]] = (when, s["StackId"])
    return live + [stack_id for _, stack_id in deleted.values()]


def stack_resources(clients: Clients, stack_id: str) -> list[dict[str, Any]]:
    """Every resource of a stack and of its nested stacks."""
    cfn = clients.aws("cloudformation")
    found: list[dict[str, Any]] = []
    for page in cfn.get_paginator("list_stack_resources").paginate(StackName=stack_id):
        for r in page["StackResourceSummaries"]:
            found.append(r)
            if r["ResourceType"] == "AWS::CloudFormation::Stack" and r.get("PhysicalResourceId"):
                found += stack_resources(clients, r["PhysicalResourceId"])
    return found


def log_group_names(resources: list[dict[str, Any]], hyperpod_name: str) -> set[str]:
    """Log groups named by these resources: declared ones (CloudFormation keeps retained ones),
    and the groups Lambda, EKS and HyperPod create for a resource on their own."""
    names = set()
    for r in resources:
        pid, kind = r.get("PhysicalResourceId") or "", r["ResourceType"]
        if not pid:
            continue
        if kind == "AWS::Logs::LogGroup":
            names.add(pid)
        elif kind == "AWS::Lambda::Function":
            names.add(f"/aws/lambda/{pid.rsplit(':', 1)[-1]}")
        elif kind == "AWS::EKS::Cluster":
            names.add(f"/aws/eks/{pid}/cluster")
        elif kind == "AWS::SageMaker::Cluster" and ":cluster/" in pid:
            # HyperPod writes to /aws/sagemaker/Clusters/<name>/<id>; the id ends the ARN.
            cluster_id = pid.rsplit("/", 1)[-1]
            names.add(f"/aws/sagemaker/Clusters/{hyperpod_name}/{cluster_id}")
    return names


def account_leftovers(
    clients: Clients, cfg: AppConfig, log_groups: set[str] | None = None
) -> list[Item]:
    """Log groups (``log_groups``, else those the stacks' resources name) and available EBS
    volumes of this environment."""
    items: list[Item] = []
    eks_name, hp_name = cluster_names(cfg)
    owned_cluster = cfg.existing_cluster is None
    if log_groups is None:
        resources = [r for sid in stack_ids(clients, cfg) for r in stack_resources(clients, sid)]
        log_groups = log_group_names(resources, hp_name)
    wanted = set(log_groups)
    if owned_cluster:  # an attached (existing) cluster's own log group is not ours to delete
        wanted.add(f"/aws/eks/{eks_name}/cluster")
    logs = clients.aws("logs")
    for name in sorted(wanted):
        # The API filters by prefix only; keep the exact name.
        groups = logs.describe_log_groups(logGroupNamePrefix=name)["logGroups"]
        if any(g["logGroupName"] == name for g in groups):
            items.append(Item("log group", name))
    ec2 = clients.aws("ec2")
    available = {"Name": "status", "Values": ["available"]}
    volumes = ec2.describe_volumes(Filters=[available, *_tag_filters(cfg)])["Volumes"]
    if owned_cluster:
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


def _release_lambda_enis(
    clients: Clients, cfg: AppConfig, t: Timeouts, log: Log, show: Show
) -> None:
    """Before the network stack: delete this VPC's Lambda ENIs that are available, and wait for
    Lambda to free the ones still in use (then delete those too). Left alone, they fail the
    deletion of the network stack's subnets and security groups ("has dependencies").

    Under a role that may not delete ENIs (the nightly role), available ones are left to
    Lambda and CloudFormation, and the wait is only for those in use."""
    ec2 = clients.aws("ec2")
    denied: set[str] = set()

    def delete_available() -> tuple[bool, str]:
        enis = lambda_enis(clients, cfg)
        busy = [e["NetworkInterfaceId"] for e in enis if e["Status"] != "available"]
        for eni in enis:
            eni_id = eni["NetworkInterfaceId"]
            if eni["Status"] != "available" or eni_id in denied:
                continue
            try:
                ec2.delete_network_interface(NetworkInterfaceId=eni_id)
                log(f"deleted Lambda ENI {eni_id}")
            except ClientError as exc:
                code = exc.response["Error"]["Code"]
                if code == "InvalidNetworkInterfaceID.NotFound":
                    continue  # Lambda deleted it first
                if code not in DENIED_CODES:
                    raise
                denied.add(eni_id)
                log(f"Lambda ENI {eni_id}: not allowed to delete ({code}); left to CloudFormation")
        return (
            not busy,
            f"{len(busy)} in use: {', '.join(busy)}" if busy else "none in use",
        )

    done, state = delete_available()
    if not done:
        log(f"Lambda ENIs in {network_stack(cfg)}'s VPC: {state}; waiting for Lambda to free them")
        wait_for(
            "Lambda network interfaces to be freed",
            delete_available,
            t.lambda_eni_s,
            t.interval_s,
            show,
        )


def _sweep(clients: Clients, items: list[Item], t: Timeouts, log: Log, show: Show) -> None:
    ec2, logs = clients.aws("ec2"), clients.aws("logs")
    gone_codes = (
        "InvalidVpcEndpoint.NotFound",
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
                answer = ec2.delete_vpc_endpoints(VpcEndpointIds=[item.id])
                # It answers 200 and lists the endpoints it could not delete, with their errors.
                if unsuccessful := answer.get("Unsuccessful"):
                    raise ClientError({"Error": unsuccessful[0]["Error"]}, "DeleteVpcEndpoints")
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
            code = exc.response["Error"]["Code"]
            if code in gone_codes:
                log(f"{item.kind} {item.id}: already gone")
                continue
            if item.kind == "available ENI" and code in DENIED_CODES:
                # The nightly role may not delete ENIs (they carry no tags to scope it by):
                # CloudFormation's own retries remove them with the subnets.
                log(
                    f"{item.kind} {item.id}: not allowed to delete ({code}); left to CloudFormation"
                )
                continue
            raise
