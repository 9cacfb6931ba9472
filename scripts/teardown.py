"""Ordered, re-runnable teardown of one environment, then a sweep of what CloudFormation leaves.

Scope: only what this environment owns, found by exact names and exact tag values, never by a
substring or prefix of a name: the stacks named ``<stack_prefix>-<suffix>``; the configured
InferenceEndpointConfigs (``kvcache.endpoints``) and the Curvine PVCs in their namespaces, each only
when it carries our ownership labels and no other environment's ``hyperpod-kvcache/owner`` mark (on
an existing cluster, where every environment shares the labels, only with our own mark); log
groups whose names the stacks' own resources determine (read with ListStackResources, which also
answers for a deleted stack by its id for 90 days);
EC2 leftovers by the ``project`` and ``environment`` tags (or inside this environment's tagged VPC).

Order: InferenceEndpointConfigs (and wait until their load balancers are gone) -> PVCs on the
Curvine StorageClass (and wait until the CSI driver, which the kvcache stack takes, has deleted
their volumes) -> stacks in waves from infra/stack_layout.py (a stack after every stack that
depends on it; the stacks of one wave in parallel). Right before the wave that holds the network
stack: Lambda's network interfaces in the VPC (delete the available ones, wait for Lambda to free
the rest) -> the VPC sweep of available ENIs and GuardDuty's endpoints and security group. Then
log groups and retained EBS volumes. Each step looks at what exists now, so a re-run after a
failure skips what is already gone.

Every wait goes through ``scripts.kube.wait_for``: a stack deletion (up to 90 minutes) shows the
elapsed time, the stack's status and its latest resource event, and a DELETE_FAILED names each
resource that failed to delete with CloudFormation's reason. One DELETE_FAILED is recovered in
place: a bucket of that stack that was not empty (an S3 access log delivered after the
auto-delete custom resource emptied it) is emptied and the stack's deletion retried once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from botocore.exceptions import ClientError
from kubernetes.client.exceptions import ApiException

from infra.config import AppConfig
from infra.handlers.owned_manifest.ownership import OWNER_ANNOTATION
from infra.stack_layout import STACK_SUFFIXES, deletion_waves
from k8s.names import CURVINE_SC, MANAGED_BY, MANAGED_BY_LABEL, PART_OF, PART_OF_LABEL, PVC
from scripts.clients import Clients
from scripts.common import OperationError
from scripts.endpoints import IEC_GROUP, IEC_PLURAL, IEC_VERSION
from scripts.kube import Show, wait_for
from scripts.verify import cluster_names

LB_CLUSTER_TAG = "elbv2.k8s.aws/cluster"  # set by the AWS Load Balancer Controller
Log = Callable[[str], None]
DENIED_CODES = ("UnauthorizedOperation", "AccessDenied", "AccessDeniedException")
# The stack of infra/stack_layout.py that holds the VPC, its subnets and security groups.
NETWORK_SUFFIX = "network"
LAMBDA_ENI_DESCRIPTION = "AWS Lambda VPC ENI"  # how Lambda describes its hyperplane ENIs
S3_BATCH = 1000  # the most keys one DeleteObjects takes


def is_prod(cfg: AppConfig) -> bool:
    """Production by name, or by the protections only production turns on."""
    return (
        cfg.environment.lower().startswith("prod")
        or cfg.termination_protection
        or cfg.retain_stateful_resources
    )


def stack_waves(cfg: AppConfig) -> list[list[str]]:
    """Stack names in deletion waves: each wave's stacks can be deleted in parallel once the
    waves before it are gone (stacks a mode lacks are simply not found)."""
    return [[f"{cfg.stack_prefix}-{s}" for s in wave] for wave in deletion_waves(STACK_SUFFIXES)]


def network_stack(cfg: AppConfig) -> str:
    """The stack whose subnets and security groups Lambda's network interfaces hold."""
    return f"{cfg.stack_prefix}-{NETWORK_SUFFIX}"


def stack_names(cfg: AppConfig) -> list[str]:
    """Stacks in teardown order (the waves, flattened)."""
    return [name for wave in stack_waves(cfg) for name in wave]


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


def labelled(metadata: Any) -> bool:
    """Carries the labels every object we render has (k8s/common.py ``labels``)."""
    labels = (metadata or {}).get("labels") or {}
    return labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(PART_OF_LABEL) == PART_OF


def owner_mark(metadata: Any) -> str | None:
    """The environment that created it on an existing cluster (``hyperpod-kvcache/owner``)."""
    value = ((metadata or {}).get("annotations") or {}).get(OWNER_ANNOTATION)
    return None if value is None else str(value)


def why_not_ours(cfg: AppConfig, metadata: Any) -> str | None:
    """None when the object is this environment's; else why it is left in place. The labels
    are the same in every environment, so the owner mark decides: another environment's mark
    is never ours, and on an existing cluster (where the owned-manifest handler marks what it
    creates) only our own mark is."""
    if not labelled(metadata):
        return f"lacks our ownership labels ({owner_selector()})"
    mark = owner_mark(metadata)
    if mark is not None and mark != cfg.stack_prefix:
        return f"is marked {OWNER_ANNOTATION}={mark}, another environment's"
    if mark is None and cfg.existing_cluster is not None:
        return f"has no {OWNER_ANNOTATION} mark, so this environment did not create it"
    return None


def owner_selector() -> str:
    return f"{MANAGED_BY_LABEL}={MANAGED_BY},{PART_OF_LABEL}={PART_OF}"


def _endpoints(clients: Clients, cfg: AppConfig) -> tuple[list[Item], list[str]]:
    """(the configured endpoints that exist and are ours, notes on those left in place)."""
    custom = clients.custom()
    items: list[Item] = []
    notes: list[str] = []
    for ep in cfg.kvcache.endpoints:
        try:
            obj = custom.get_namespaced_custom_object(
                IEC_GROUP, IEC_VERSION, ep.namespace, IEC_PLURAL, ep.name
            )
        except ApiException as exc:
            if exc.status == 404:  # not deployed, or the CRD went with the operator add-on
                continue
            raise
        ref = f"{ep.namespace}/{ep.name}"
        why = why_not_ours(cfg, obj.get("metadata"))
        if why is None:
            items.append(Item("InferenceEndpointConfig", ref))
        else:
            notes.append(
                f"InferenceEndpointConfig {ref} {why}: left in place; delete it with kubectl if "
                "it is yours"
            )
    return items, notes


def list_endpoints(clients: Clients, cfg: AppConfig) -> list[Item]:
    return _endpoints(clients, cfg)[0]


def list_curvine_pvcs(clients: Clients, cfg: AppConfig) -> list[Item]:
    """Curvine PVCs we rendered, in the configured endpoints' namespaces only."""
    return _curvine_pvcs(clients, cfg)[0]


def _curvine_pvcs(clients: Clients, cfg: AppConfig) -> tuple[list[Item], list[str]]:
    """(our Curvine PVCs in the configured endpoints' namespaces, notes on those left)."""
    core = clients.core()
    items: list[Item] = []
    notes: list[str] = []
    for ns in sorted({ep.namespace for ep in cfg.kvcache.endpoints}):
        pvcs = core.list_namespaced_persistent_volume_claim(ns, label_selector=owner_selector())
        for p in pvcs.items:
            if p.spec.storage_class_name != CURVINE_SC:
                continue
            ref = f"{ns}/{p.metadata.name}"
            why = why_not_ours(cfg, clients.to_dict(p).get("metadata"))
            if why is None:
                items.append(Item("PersistentVolumeClaim", ref, CURVINE_SC))
            else:
                notes.append(f"PersistentVolumeClaim {ref} {why}: left in place")
    return items, notes


def curvine_volumes_left(clients: Clients, cfg: AppConfig) -> list[str]:
    """Volumes on the Curvine StorageClass that the Curvine CSI driver still has to delete:
    reclaim policy Delete, bound to a claim of the L2 volume (its name, in a configured
    endpoint's namespace) that no longer exists. Only waited for, never deleted."""
    namespaces = {ep.namespace for ep in cfg.kvcache.endpoints}
    core = clients.core()
    left = []
    for pv in core.list_persistent_volume().items:
        spec = clients.to_dict(pv).get("spec") or {}
        claim = spec.get("claimRef") or {}
        if (
            spec.get("storageClassName") != CURVINE_SC
            or spec.get("persistentVolumeReclaimPolicy") != "Delete"
            or claim.get("namespace") not in namespaces
            or claim.get("name") != PVC
        ):
            continue
        try:
            now = core.read_namespaced_persistent_volume_claim(claim["name"], claim["namespace"])
            if not claim.get("uid") or now.metadata.uid == claim["uid"]:
                continue  # its claim is there: not released
        except ApiException as exc:
            if exc.status != 404:
                raise
        left.append(pv.metadata.name)
    return sorted(left)


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
            when = s.get("DeletionTime") or s.get("CreationTime")
            prev = deleted.get(s["StackName"])
            if prev is None or (when and prev[0] and when > prev[0]):
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
            names.add(f"/aws/sagemaker/Clusters/{hyperpod_name}/{pid.rsplit('/', 1)[-1]}")
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


def plan_teardown(clients: Clients, cfg: AppConfig) -> Plan:
    plan = Plan()
    if eks_cluster_exists(clients, cfg):
        try:
            endpoints, notes = _endpoints(clients, cfg)
            pvcs, more = _curvine_pvcs(clients, cfg)
            plan.kubernetes = endpoints + pvcs
            plan.notes += notes + more
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
    # Available Lambda ENIs are among the VPC leftovers; the in-use ones are waited for.
    busy = [
        Item("Lambda ENI", e["NetworkInterfaceId"], f"{e['Status']}: deleted once Lambda frees it")
        for e in lambda_enis(clients, cfg)
        if e["Status"] != "available"
    ]
    plan.leftovers = vpc_leftovers(clients, cfg) + busy + account_leftovers(clients, cfg)
    return plan


# ---- execution -------------------------------------------------------------------------------


@dataclass
class Timeouts:
    endpoint_s: float = 1800
    pvc_s: float = 600
    stack_s: float = 5400
    sweep_s: float = 600
    lambda_eni_s: float = 2700  # Lambda frees its ENIs up to ~40 minutes after the function goes
    interval_s: float = 10


def _delete_endpoints(clients: Clients, cfg: AppConfig, t: Timeouts, log: Log, show: Show) -> None:
    custom = clients.custom()
    endpoints = list_endpoints(clients, cfg)
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
            lambda: not list_endpoints(clients, cfg),
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


def _delete_pvcs(clients: Clients, cfg: AppConfig, t: Timeouts, log: Log, show: Show) -> None:
    core = clients.core()
    pvcs = list_curvine_pvcs(clients, cfg)
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
            lambda: not list_curvine_pvcs(clients, cfg),
            t.pvc_s,
            t.interval_s,
            show,
        )

    # The CSI driver deletes a released volume (and Curvine its directory) only while both run,
    # and the kvcache stack takes them: without this wait the volume keeps its finalizer.
    def volumes() -> tuple[bool, str]:
        left = curvine_volumes_left(clients, cfg)
        return not left, ", ".join(left)

    if not volumes()[0]:
        wait_for(
            "the Curvine CSI driver to delete the volumes of the deleted PVCs",
            volumes,
            t.pvc_s,
            t.interval_s,
            show,
        )


def _stack(cfn: Any, ref: str) -> dict[str, Any] | None:
    """The stack by name or id; None when it no longer exists."""
    try:
        stacks = cfn.describe_stacks(StackName=ref)["Stacks"]
    except ClientError as exc:
        if "does not exist" in exc.response["Error"].get("Message", ""):
            return None
        raise
    return stacks[0] if stacks else None


def _events_of_this_delete(cfn: Any, stack_id: str) -> list[dict[str, Any]]:
    """The stack's events (newest first) back to the start of the current deletion."""
    events = cfn.describe_stack_events(StackName=stack_id)["StackEvents"]
    found = []
    for event in events:
        found.append(event)
        is_stack = event.get("ResourceType") == "AWS::CloudFormation::Stack"
        if is_stack and event.get("ResourceStatus") == "DELETE_IN_PROGRESS":
            break
    return found


def _describe_event(event: dict[str, Any]) -> str:
    reason = event.get("ResourceStatusReason") or ""
    text = f"{event['LogicalResourceId']} {event.get('ResourceStatus', '')}"
    return f"{text}: {reason}" if reason else text


def delete_failure(name: str, stack: dict[str, Any], events: list[dict[str, Any]]) -> str:
    """Which resources failed to delete, and why, from the events of this deletion."""
    failed = [
        e
        for e in events
        if e.get("ResourceStatus") == "DELETE_FAILED"
        and e.get("ResourceType") != "AWS::CloudFormation::Stack"
    ]
    if not failed:
        reason = stack.get("StackStatusReason") or "no reason given"
        return f"stack {name}: {stack['StackStatus']} ({reason}); fix it and re-run teardown"
    parts = [
        f"{e['LogicalResourceId']} ({e.get('ResourceType', '?')} "
        f"{e.get('PhysicalResourceId') or '-'}): {e.get('ResourceStatusReason') or 'no reason'}"
        for e in failed
    ]
    return (
        f"stack {name}: DELETE_FAILED; failed to delete {'; '.join(parts)}. Remove what holds it "
        "(or delete it by hand) and re-run teardown"
    )


class DeleteFailed(OperationError):
    """A stack deletion that ended DELETE_FAILED; the message names what failed and why."""

    def __init__(self, name: str, stack: dict[str, Any], events: list[dict[str, Any]]) -> None:
        super().__init__(delete_failure(name, stack, events))
        self.stack = stack
        self.events = events  # of this deletion, newest first


def not_empty_buckets(events: list[dict[str, Any]]) -> list[str]:
    """The buckets a deletion failed on because they were not empty (S3 access logs arrive
    minutes late: one can land after the auto-delete custom resource emptied the bucket)."""
    found = []
    for e in events:
        reason = e.get("ResourceStatusReason") or ""
        if (
            e.get("ResourceStatus") == "DELETE_FAILED"
            and e.get("ResourceType") == "AWS::S3::Bucket"
            and ("not empty" in reason or "BucketNotEmpty" in reason)
            and e.get("PhysicalResourceId")
            and e["PhysicalResourceId"] not in found
        ):
            found.append(e["PhysicalResourceId"])
    return found


def empty_bucket(s3: Any, bucket: str) -> int:
    """Delete every object version and delete marker, a page of at most S3_BATCH at a time
    (the most DeleteObjects takes), until a listing comes back empty; the count deleted."""
    deleted = 0
    while True:
        page = s3.list_object_versions(Bucket=bucket, MaxKeys=S3_BATCH)
        keys = [
            {"Key": v["Key"], "VersionId": v["VersionId"]}
            for v in page.get("Versions", []) + page.get("DeleteMarkers", [])
        ]
        if not keys:
            return deleted
        errors = s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True}).get(
            "Errors"
        )
        if errors:
            first = errors[0]
            raise OperationError(
                f"emptying bucket {bucket}: {len(errors)} objects not deleted, e.g. "
                f"{first.get('Key')}: {first.get('Code')} {first.get('Message', '')}".rstrip()
            )
        deleted += len(keys)


def _empty_late_buckets(clients: Clients, name: str, failed: DeleteFailed, log: Log) -> bool:
    """Empty the not-empty buckets the failed deletion names, when each is a resource of this
    stack (one of this environment's, by exact name); True when there was one to empty."""
    stack_id = failed.stack["StackId"]
    named = not_empty_buckets(failed.events)
    if not named:
        return False
    ours = {
        r.get("PhysicalResourceId")
        for r in stack_resources(clients, stack_id)
        if r["ResourceType"] == "AWS::S3::Bucket"
    }
    foreign = [b for b in named if b not in ours]
    if foreign:
        raise OperationError(
            f"{failed}; bucket {', '.join(foreign)} is not a resource of stack {name}: left alone"
        )
    s3 = clients.aws("s3")
    emptied = []
    for bucket in named:
        try:
            emptied.append(f"{bucket} ({empty_bucket(s3, bucket)} object versions)")
        except ClientError as exc:
            raise OperationError(
                f"{failed}; could not empty bucket {bucket}: {exc.response['Error']['Code']}"
            ) from None
    log(
        f"stack {name}: DELETE_FAILED on a bucket that was not empty (late access-log "
        f"deliveries); emptied {', '.join(emptied)}; retrying the delete once"
    )
    return True


def _delete_stack(clients: Clients, name: str, t: Timeouts, log: Log, show: Show = False) -> None:
    """DeleteStack, then poll until it is gone, showing the status and the latest event. A
    deletion that fails on a bucket that is not empty (a late access-log delivery) empties that
    bucket (only a resource of this stack) and is retried once."""
    cfn = clients.aws("cloudformation")
    stack = _stack(cfn, name)
    if stack is None or stack["StackStatus"] == "DELETE_COMPLETE":
        log(f"stack {name}: not found, skipped")
        return
    stack_id = stack["StackId"]  # by id, the stack still answers once it is deleted

    def gone() -> tuple[bool, str]:
        now = _stack(cfn, stack_id)
        if now is None or now["StackStatus"] == "DELETE_COMPLETE":
            return True, "DELETE_COMPLETE"
        if now["StackStatus"] == "DELETE_FAILED":
            raise DeleteFailed(name, now, _events_of_this_delete(cfn, stack_id))
        events = _events_of_this_delete(cfn, stack_id)
        latest = next(
            (e for e in events if e.get("ResourceType") != "AWS::CloudFormation::Stack"), None
        )
        return False, now["StackStatus"] + (
            f"; latest: {_describe_event(latest)}" if latest else ""
        )

    for attempt in (1, 2):
        cfn.delete_stack(StackName=name)
        log(f"stack {name}: delete requested (was {stack['StackStatus']})")
        try:
            wait_for(f"stack {name} to delete", gone, t.stack_s, t.interval_s, show)
            break
        except DeleteFailed as failed:
            if attempt == 2 or not _empty_late_buckets(clients, name, failed, log):
                raise
            stack = failed.stack
    log(f"stack {name}: deleted")


def _delete_wave(clients: Clients, names: list[str], t: Timeouts, log: Log, show: Show) -> None:
    """The stacks of one wave in parallel (none depends on another); errors surface after all
    have finished, so a re-run finds the wave as far as it got."""
    if len(names) == 1:
        _delete_stack(clients, names[0], t, log, show)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        futures = [pool.submit(_delete_stack, clients, name, t, log, show) for name in names]
    for future in futures:
        future.result()


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
        return not busy, f"{len(busy)} in use: {', '.join(busy)}" if busy else "none in use"

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


def execute_teardown(
    clients: Clients, cfg: AppConfig, log: Log, timeouts: Timeouts | None = None, show: Show = True
) -> None:
    t = timeouts or Timeouts()
    try:
        # Read before the stacks go: the log groups their resources name.
        log_groups = {i.id for i in account_leftovers(clients, cfg) if i.kind == "log group"}
        if eks_cluster_exists(clients, cfg):
            _delete_endpoints(clients, cfg, t, log, show)
            _delete_pvcs(clients, cfg, t, log, show)
        else:
            log("EKS cluster not found: Kubernetes phase skipped")
        for wave in stack_waves(cfg):
            if network_stack(cfg) in wave:
                _release_lambda_enis(clients, cfg, t, log, show)
                _sweep(clients, vpc_leftovers(clients, cfg), t, log, show)
            _delete_wave(clients, wave, t, log, show)
        leftovers = vpc_leftovers(clients, cfg) + account_leftovers(clients, cfg, log_groups)
        _sweep(clients, leftovers, t, log, show)
    except ClientError as exc:
        raise OperationError(
            f"AWS: {exc}; fix and re-run teardown (finished steps are skipped)"
        ) from None
    except ApiException as exc:
        raise OperationError(
            f"Kubernetes API: {exc.status} {exc.reason}; re-run teardown"
        ) from None
