"""Preflight for an existing HyperPod EKS cluster (``existing_cluster`` in config).

Instead of quotas and AZ offerings (the cluster's instances already run), it checks that the
named clusters exist and match config: the EKS cluster (minor, access-entry authentication), its
OIDC provider, the HyperPod instance groups, the kubectl role when one is brought, each
add-on's mode against what EKS has installed and, for a private API endpoint, that the kubectl
subnets reach the AWS APIs the handlers call. Where config must change, the fix is the YAML to
paste.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml
from botocore.exceptions import BotoCoreError, ClientError

from infra.config import AppConfig
from infra.config.addons import ADDON_KEYS
from infra.config.hyperpod import ExistingClusterConfig, InstanceGroupConfig
from scripts.clients import Clients
from scripts.common import Check

# addons.<key> -> EKS add-on name (as infra/constructs/addons declares them).
ADDON_NAMES = {
    "cert_manager": "cert-manager",
    "s3_csi": "aws-mountpoint-s3-csi-driver",
    "fsx_csi": "aws-fsx-csi-driver",
    "metrics_server": "metrics-server",
    "ebs_csi": "aws-ebs-csi-driver",
    "inference_operator": "amazon-sagemaker-hyperpod-inference",
}
CLUSTER_ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
SKIPPED_FOR_EXISTING = (
    ("quotas", "the cluster's instances already run: no new HyperPod capacity is requested"),
    ("AZ offerings", "no HyperPod subnet or instance group is created"),
)


def _paste(section: dict[str, Any]) -> str:
    """The YAML to paste into config/<env>.yaml, as one block."""
    return "paste into config:\n" + yaml.safe_dump(section, sort_keys=False).rstrip()


def _error(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        return exc.response["Error"]["Code"]
    return type(exc).__name__


def check_eks_cluster(clients: Clients, existing: ExistingClusterConfig, minor: str) -> tuple[
    list[Check], dict[str, Any] | None
]:  # fmt: skip
    name = existing.eks_cluster_name
    try:
        cluster: dict[str, Any] = clients.aws("eks").describe_cluster(name=name)["cluster"]
    except (ClientError, BotoCoreError) as exc:
        if _error(exc) == "ResourceNotFoundException":
            return [
                Check(
                    "EKS cluster",
                    "fail",
                    f"{name} not found in {clients.region}",
                    "set existing_cluster.eks_cluster_name to one of `aws eks list-clusters`",
                )
            ], None
        return [Check("EKS cluster", "fail", str(exc), "grant eks:DescribeCluster")], None
    checks = [Check("EKS cluster", "pass", f"{name}: {cluster.get('status', '?')}")]
    live = cluster.get("version", "")
    if live == minor:
        checks.append(Check("kubectl layer minor", "pass", f"layer {minor} = cluster {live}"))
    else:
        checks.append(
            Check(
                "kubectl layer minor",
                "fail",
                f"layer {minor} but cluster {name} runs {live}",
                f'set eks.kubernetes_version to "{live}"',
            )
        )
    mode = cluster.get("accessConfig", {}).get("authenticationMode", "CONFIG_MAP")
    if mode in ("API", "API_AND_CONFIG_MAP"):
        checks.append(Check("access entries", "pass", f"authentication mode {mode}"))
    else:
        checks.append(
            Check(
                "access entries",
                "fail",
                f"authentication mode {mode}: the kubectl handler's access entry needs API",
                f"aws eks update-cluster-config --name {name} "
                "--access-config authenticationMode=API_AND_CONFIG_MAP",
            )
        )
    return checks, cluster


def check_oidc(clients: Clients, existing: ExistingClusterConfig, cluster: dict[str, Any]) -> Check:
    issuer = cluster.get("identity", {}).get("oidc", {}).get("issuer", "")
    try:
        url = clients.aws("iam").get_open_id_connect_provider(
            OpenIDConnectProviderArn=existing.oidc_provider_arn
        )["Url"]
    except (ClientError, BotoCoreError) as exc:
        return Check(
            "OIDC provider",
            "fail",
            f"{existing.oidc_provider_arn}: {_error(exc)}",
            f"eksctl utils associate-iam-oidc-provider --cluster {existing.eks_cluster_name} "
            "--approve, then copy its ARN into existing_cluster.oidc_provider_arn",
        )
    if url.removeprefix("https://") == issuer.removeprefix("https://"):
        return Check("OIDC provider", "pass", f"matches the cluster's issuer {issuer}")
    return Check(
        "OIDC provider",
        "fail",
        f"provider URL {url} is not the cluster's issuer {issuer}",
        "set existing_cluster.oidc_provider_arn to the provider whose URL is the issuer "
        "(aws iam list-open-id-connect-providers)",
    )


def check_kubectl_role(clients: Clients, existing: ExistingClusterConfig) -> list[Check]:
    arn = existing.kubectl_role_arn
    if arn is None:
        return [Check("kubectl role", "pass", "created by the stack with its own access entry")]
    checks = []
    name = arn.rsplit("/", 1)[-1]
    try:
        role = clients.aws("iam").get_role(RoleName=name)["Role"]
        document = role["AssumeRolePolicyDocument"]
        if isinstance(document, str):
            document = json.loads(document)
        trusted = any(
            "lambda.amazonaws.com" in json.dumps(s.get("Principal", {}))
            and s.get("Effect") == "Allow"
            for s in document.get("Statement", [])
        )
        checks.append(
            Check("kubectl role trust", "pass", f"{name} trusts lambda.amazonaws.com")
            if trusted
            else Check(
                "kubectl role trust",
                "fail",
                f"{name} does not trust lambda.amazonaws.com (it is the handler's execution role)",
                "add lambda.amazonaws.com to its trust policy, or remove "
                "existing_cluster.kubectl_role_arn to let the stack create the role",
            )
        )
    except (ClientError, BotoCoreError) as exc:
        checks.append(
            Check("kubectl role trust", "fail", f"{name}: {_error(exc)}", "check the ARN")
        )
    eks = clients.aws("eks")
    cluster = existing.eks_cluster_name
    fix = (
        f"aws eks create-access-entry --cluster-name {cluster} --principal-arn {arn} && "
        f"aws eks associate-access-policy --cluster-name {cluster} --principal-arn {arn} "
        f"--policy-arn {CLUSTER_ADMIN} --access-scope type=cluster"
    )
    try:
        policies = eks.list_associated_access_policies(clusterName=cluster, principalArn=arn)
    except (ClientError, BotoCoreError) as exc:
        if _error(exc) == "ResourceNotFoundException":
            return [*checks, Check("kubectl access entry", "fail", f"none for {arn}", fix)]
        return [*checks, Check("kubectl access entry", "warn", str(exc), "grant eks:List*")]
    admin = [
        p
        for p in policies.get("associatedAccessPolicies", [])
        if p["policyArn"] == CLUSTER_ADMIN and p.get("accessScope", {}).get("type") == "cluster"
    ]
    if admin:
        return [*checks, Check("kubectl access entry", "pass", "cluster admin, cluster scope")]
    return [
        *checks,
        Check("kubectl access entry", "fail", "no AmazonEKSClusterAdminPolicy (cluster)", fix),
    ]


def _group_yaml(group: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": group["InstanceGroupName"],
        "instance_type": group["InstanceType"],
        "instance_count": group.get("TargetCount", group.get("CurrentCount")),
    }


def check_instance_groups(clients: Clients, cfg: AppConfig) -> list[Check]:
    existing = cfg.existing_cluster
    assert existing is not None
    try:
        described = clients.aws("sagemaker").describe_cluster(
            ClusterName=existing.hyperpod_cluster_name
        )
    except (ClientError, BotoCoreError) as exc:
        return [
            Check(
                "HyperPod cluster",
                "fail",
                f"{existing.hyperpod_cluster_name}: {_error(exc)}",
                "set existing_cluster.hyperpod_cluster_name to one of "
                "`aws sagemaker list-clusters`",
            )
        ]
    checks = []
    if described["ClusterArn"] != existing.hyperpod_cluster_arn:
        checks.append(
            Check(
                "HyperPod cluster",
                "fail",
                f"ARN is {described['ClusterArn']}",
                _paste({"existing_cluster": {"hyperpod_cluster_arn": described["ClusterArn"]}}),
            )
        )
    else:
        checks.append(Check("HyperPod cluster", "pass", described.get("ClusterStatus", "")))
    live = {g["InstanceGroupName"]: g for g in described.get("InstanceGroups", [])}
    wanted: dict[str, InstanceGroupConfig] = {
        "gpu_group": cfg.hyperpod.gpu_group,
        "system_group": cfg.hyperpod.system_group,
    }
    for key, group in wanted.items():
        stage = f"instance group {key}"
        found = live.get(group.name)
        if found is None:
            names = ", ".join(f"{n} ({g['InstanceType']})" for n, g in live.items())
            checks.append(
                Check(
                    stage,
                    "fail",
                    f"no group {group.name!r} (the nodes are selected by its name); groups: "
                    f"{names}",
                    f"set hyperpod.{key} to one of them",
                )
            )
            continue
        have = _group_yaml(found)
        if (have["instance_type"], have["instance_count"]) == (
            group.instance_type,
            group.instance_count,
        ):
            checks.append(Check(stage, "pass", f"{group.name}: {have['instance_count']} x "
                                f"{have['instance_type']}"))  # fmt: skip
        else:
            checks.append(
                Check(
                    stage,
                    "fail",
                    f"{group.name} is {have['instance_count']} x {have['instance_type']}, config "
                    f"says {group.instance_count} x {group.instance_type}",
                    _paste({"hyperpod": {key: have}}),
                )
            )
    return checks


def _offered(clients: Clients, cfg: AppConfig, key: str, minor: str) -> Check:
    """The version this app will install is offered for the cluster's minor."""
    from scripts.preflight import check_addon_version, check_inference_addon_version

    if key == "inference_operator":
        return check_inference_addon_version(clients, cfg, minor)
    version = cfg.addons.settings(key).version
    return check_addon_version(clients, ADDON_NAMES[key], version, f"addons.{key}.version", minor)


def check_addons(clients: Clients, cfg: AppConfig, minor: str) -> list[Check]:
    """Each add-on's mode against what EKS has installed; for one this app will create, whether
    EKS offers its pinned version for the cluster's ``minor``."""
    existing = cfg.existing_cluster
    assert existing is not None
    eks = clients.aws("eks")
    cluster = existing.eks_cluster_name
    try:
        installed = set(eks.list_addons(clusterName=cluster).get("addons", []))
    except (ClientError, BotoCoreError) as exc:
        return [Check("add-ons", "warn", f"cannot list add-ons: {exc}", "grant eks:ListAddons")]
    checks = []
    for key in ADDON_KEYS:
        settings = cfg.addons.settings(key)
        if not (cfg.addons.enabled and settings.enabled):
            continue
        name = ADDON_NAMES[key]
        stage = f"add-on {name}"
        if name not in installed:
            if settings.mode == "create":
                checks.append(Check(stage, "pass", "not installed: create (this app installs it)"))
                checks.append(_offered(clients, cfg, key, minor))
            else:
                checks.append(
                    Check(
                        stage,
                        "fail",
                        f"not installed as an EKS add-on, config says {settings.mode}",
                        _paste({"addons": {key: {"mode": "create"}}})
                        + "\n(or install it yourself and keep skip)",
                    )
                )
            continue
        addon = eks.describe_addon(clusterName=cluster, addonName=name)["addon"]
        adopted = {
            "mode": "adopt",
            "version": addon["addonVersion"],
            "adopted_role_arn": addon.get("serviceAccountRoleArn"),
            "adopted_configuration": addon.get("configurationValues") or None,
        }
        adopted = {k: v for k, v in adopted.items() if v is not None}
        if settings.mode == "skip":
            checks.append(Check(stage, "pass", f"{addon['addonVersion']} installed: skip"))
        elif settings.mode == "create":
            checks.append(
                Check(
                    stage,
                    "fail",
                    f"{addon['addonVersion']} already installed: create would fail",
                    _paste({"addons": {key: {"mode": "skip"}}})
                    + "\n(recommended; or take it over as it is:)\n"
                    + _paste({"addons": {key: adopted}}),
                )
            )
        else:
            declared = {
                "version": settings.version,
                "adopted_role_arn": settings.adopted_role_arn,
                "adopted_configuration": settings.adopted_configuration,
            }
            differs = [k for k, v in declared.items() if v != adopted.get(k)]
            if differs:
                checks.append(
                    Check(
                        stage,
                        "fail",
                        f"adopt declares other {', '.join(differs)} than installed "
                        "(the import must describe it as it is)",
                        _paste({"addons": {key: adopted}}),
                    )
                )
            else:
                checks.append(Check(stage, "pass", f"adopt {addon['addonVersion']} as installed"))
    return checks


@dataclass(frozen=True)
class Need:
    """Something the Lambda functions in ``kubectl_subnet_ids`` must reach."""

    name: str
    service: str  # com.amazonaws.<region>.<service>; "" when no VPC endpoint serves it
    why: str


# The kubectl handler and the owned-manifest handler run in kubectl_subnet_ids, and so does each
# one's Provider framework function (aws-eks-v2's KubectlProvider and OwnedManifests pass the
# subnets to both). STS is not among them: the cluster token is an STS URL the function signs
# with its own credentials, and the API server, not the function, sends it to STS.
NEEDS = (
    Need("EKS", "eks", "the handlers' eks:DescribeCluster"),
    Need("Lambda", "lambda", "the Provider framework invokes the handler"),
    Need("S3", "s3", "the Provider framework answers CloudFormation at a presigned S3 URL"),
)
KYVERNO_CHART = Need(
    "the internet", "", "the kubectl handler fetches the Kyverno chart from kyverno.github.io"
)
# 0.0.0.0/0 targets that may lead out but that this check cannot see past.
OTHER_EGRESS = ("TransitGatewayId", "NetworkInterfaceId", "InstanceId", "CoreNetworkArn",
                "LocalGatewayId", "CarrierGatewayId")  # fmt: skip


def _route_table(ec2: Any, subnet: str, vpc: str) -> tuple[dict[str, Any], bool]:
    """The subnet's route table, and whether it is the VPC's main table by implicit
    association (a subnet associated with no table uses the main one)."""
    explicit = ec2.describe_route_tables(
        Filters=[{"Name": "association.subnet-id", "Values": [subnet]}]
    )["RouteTables"]
    if explicit:
        return explicit[0], False
    main = ec2.describe_route_tables(
        Filters=[
            {"Name": "vpc-id", "Values": [vpc]},
            {"Name": "association.main", "Values": ["true"]},
        ]
    )["RouteTables"]
    return main[0], True


def _default_route(table: dict[str, Any]) -> dict[str, Any] | None:
    for route in table.get("Routes", []):
        if route.get("DestinationCidrBlock") == "0.0.0.0/0" and route.get("State") == "active":
            return dict(route)
    return None


def _egress(route: dict[str, Any] | None) -> tuple[str, str]:
    """("nat" | "other" | "igw" | "", target) of the subnet's default route."""
    if route is None:
        return "", ""
    if route.get("NatGatewayId"):
        return "nat", route["NatGatewayId"]
    for key in OTHER_EGRESS:
        if route.get(key):
            return "other", route[key]
    gateway = route.get("GatewayId", "")
    # A Lambda function's network interfaces get no public IP: an internet gateway is no way out.
    return ("igw", gateway) if gateway.startswith("igw-") else ("other", gateway)


def _endpoint_for(need: Need, endpoints: list[dict[str, Any]], table_id: str, region: str) -> str:
    """The VPC endpoint that serves ``need`` from a subnet using ``table_id``, or ""."""
    name = f"com.amazonaws.{region}.{need.service}"
    for e in endpoints:
        if not need.service or e["ServiceName"] != name or e.get("State") != "available":
            continue
        if e["VpcEndpointType"] == "Gateway" and table_id in e.get("RouteTableIds", []):
            return f"gateway endpoint {e['VpcEndpointId']}"
        # The SDKs call the service's usual host name: only private DNS sends it to the endpoint.
        if e["VpcEndpointType"] == "Interface" and e.get("PrivateDnsEnabled"):
            return f"interface endpoint {e['VpcEndpointId']}"
    return ""


def _endpoint_fix(need: Need, existing: ExistingClusterConfig, table_id: str, region: str) -> str:
    name = f"com.amazonaws.{region}.{need.service}"
    if need.service == "s3":
        return (
            f"aws ec2 create-vpc-endpoint --vpc-id {existing.vpc_id} --vpc-endpoint-type Gateway "
            f"--service-name {name} --route-table-ids {table_id}"
        )
    return (
        f"aws ec2 create-vpc-endpoint --vpc-id {existing.vpc_id} --vpc-endpoint-type Interface "
        f"--service-name {name} --subnet-ids {' '.join(existing.kubectl_subnet_ids)} "
        "--security-group-ids <a group admitting 443 from "
        f"{existing.kubectl_security_group_id}> --private-dns-enabled"
    )


def _missing_fix(missing: list[Need], existing: ExistingClusterConfig, table_id: str,
                 region: str) -> str:  # fmt: skip
    """A NAT route fixes everything; otherwise one VPC endpoint per API, and for the Kyverno
    chart (no endpoint serves it) the installed-Kyverno option."""
    endpoints = [_endpoint_fix(n, existing, table_id, region) for n in missing if n.service]
    fix = f"route 0.0.0.0/0 in {table_id} to a NAT gateway"
    if endpoints:
        fix += ", or: " + "; ".join(endpoints)
    if KYVERNO_CHART in missing:
        fix += (
            "; without a NAT gateway set kvcache.kyverno.install to false and install Kyverno "
            "yourself"
        )
    return fix


def _sort_needs(
    needs: list[Need],
    egress: tuple[str, str],
    endpoints: list[dict[str, Any]],
    table_id: str,
    region: str,
) -> tuple[list[str], list[Need], list[Need]]:
    """(how each reached need is reached, needs only an unseen egress may reach, missing)."""
    kind, target = egress
    reached: list[str] = []
    assumed: list[Need] = []
    missing: list[Need] = []
    for need in needs:
        endpoint = _endpoint_for(need, endpoints, table_id, region)
        if kind == "nat":
            reached.append(f"{need.name} through {target}")
        elif endpoint:
            reached.append(f"{need.name} through {endpoint}")
        elif kind == "other":
            assumed.append(need)
        else:
            missing.append(need)
    return reached, assumed, missing


def _subnet_routes(ec2: Any, cfg: AppConfig, subnet: str, endpoints: list[dict[str, Any]]) -> Check:
    existing = cfg.existing_cluster
    assert existing is not None and existing.vpc_id is not None
    table, implicit = _route_table(ec2, subnet, existing.vpc_id)
    table_id = table["RouteTableId"]
    where = table_id + (" (the VPC's main table: no explicit association)" if implicit else "")
    kind, target = egress = _egress(_default_route(table))
    needs = [*NEEDS, KYVERNO_CHART] if cfg.kvcache.kyverno.install else list(NEEDS)
    reached, assumed, missing = _sort_needs(needs, egress, endpoints, table_id, cfg.region)
    stage = f"routes from {subnet}"
    if missing:
        names = ", ".join(f"{n.name} ({n.why})" for n in missing)
        gateway = (
            f"; its 0.0.0.0/0 goes to {target}, which a Lambda function cannot use (no public IP)"
            if kind == "igw" else ""
        )  # fmt: skip
        return Check(
            stage,
            "fail",
            f"{where} has no NAT route and no VPC endpoint for {names}{gateway}",
            _missing_fix(missing, existing, table_id, cfg.region),
        )
    if assumed:
        return Check(
            stage,
            "warn",
            f"{where}: {', '.join(n.name for n in assumed)} only through {target}, which "
            "preflight cannot see past",
            f"make sure {target} leads to a NAT gateway, or add VPC endpoints for "
            + ", ".join(f"com.amazonaws.{cfg.region}.{n.service}" for n in assumed if n.service),
        )
    return Check(stage, "pass", f"{where}: " + "; ".join(reached))


def check_kubectl_routes(clients: Clients, cfg: AppConfig) -> list[Check]:
    """A private API endpoint puts the handlers in ``kubectl_subnet_ids``: without a way to the
    EKS, Lambda and S3 APIs the deploy waits until the custom resource times out."""
    existing = cfg.existing_cluster
    assert existing is not None
    if not existing.kubectl_subnet_ids:
        return []
    ec2 = clients.aws("ec2")
    try:
        subnets = ec2.describe_subnets(SubnetIds=list(existing.kubectl_subnet_ids))["Subnets"]
        endpoints = ec2.describe_vpc_endpoints(
            Filters=[{"Name": "vpc-id", "Values": [existing.vpc_id]}]
        )["VpcEndpoints"]
        checks = []
        for subnet in subnets:
            if subnet["VpcId"] != existing.vpc_id:
                checks.append(Check(
                    f"routes from {subnet['SubnetId']}", "fail",
                    f"the subnet is in {subnet['VpcId']}, not in existing_cluster.vpc_id "
                    f"{existing.vpc_id}",
                    "list subnets of the cluster's VPC in existing_cluster.kubectl_subnet_ids",
                ))  # fmt: skip
                continue
            checks.append(_subnet_routes(ec2, cfg, subnet["SubnetId"], endpoints))
        return checks
    except (ClientError, BotoCoreError) as exc:
        if _error(exc).startswith("InvalidSubnetID"):
            return [Check(
                "kubectl subnets", "fail",
                f"{', '.join(existing.kubectl_subnet_ids)}: {_error(exc)} in {clients.region}",
                "set existing_cluster.kubectl_subnet_ids to private subnets of the cluster's VPC "
                f"(aws ec2 describe-subnets --filters Name=vpc-id,Values={existing.vpc_id})",
            )]  # fmt: skip
        return [Check(
            "kubectl subnets", "warn", f"cannot read the subnets' routes: {_error(exc)}",
            "grant ec2:DescribeSubnets, ec2:DescribeRouteTables and ec2:DescribeVpcEndpoints",
        )]  # fmt: skip


def run_existing_preflight(
    clients: Clients,
    cfg: AppConfig,
    run: Callable[[list[str]], tuple[int, str] | None],
    identity: Check,
) -> list[Check]:
    """The checks for existing-cluster mode, after the credentials row ``identity`` (called by
    scripts.preflight.run_preflight once AWS has answered)."""
    from scripts.preflight import check_kubernetes_minor, check_tools

    existing = cfg.existing_cluster
    assert existing is not None
    checks = [identity]
    checks += [Check(stage, "skip", reason) for stage, reason in SKIPPED_FOR_EXISTING]
    cluster_checks, cluster = check_eks_cluster(clients, existing, cfg.eks.kubernetes_version)
    checks += cluster_checks
    if cluster is not None:
        checks.append(check_kubernetes_minor(clients, cluster["version"]))
        checks.append(check_oidc(clients, existing, cluster))
        checks += check_kubectl_role(clients, existing)
        checks += check_addons(clients, cfg, cluster["version"])
    checks += check_instance_groups(clients, cfg)
    checks += check_kubectl_routes(clients, cfg)
    minor = cluster["version"] if cluster else cfg.eks.kubernetes_version
    checks += check_tools(run, minor)
    return checks
