"""With a private API endpoint on an existing cluster, the handlers run in
``kubectl_subnet_ids``: whether those subnets reach the AWS APIs the handlers call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from infra.config import AppConfig
from infra.config.model import ExistingClusterConfig
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.preflight.existing import _error


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
OTHER_EGRESS = (
    "TransitGatewayId",
    "NetworkInterfaceId",
    "InstanceId",
    "CoreNetworkArn",
    "LocalGatewayId",
    "CarrierGatewayId",
)


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


def _missing_fix(
    missing: list[Need], existing: ExistingClusterConfig, table_id: str, region: str
) -> str:
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
    needs = [*NEEDS, KYVERNO_CHART] if cfg.kvcache.installs_kyverno else list(NEEDS)
    reached, assumed, missing = _sort_needs(needs, egress, endpoints, table_id, cfg.region)
    stage = f"routes from {subnet}"
    if missing:
        names = ", ".join(f"{n.name} ({n.why})" for n in missing)
        gateway = (
            f"; its 0.0.0.0/0 goes to {target}, which a Lambda function cannot use (no public IP)"
            if kind == "igw"
            else ""
        )
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
                checks.append(
                    Check(
                        f"routes from {subnet['SubnetId']}",
                        "fail",
                        f"the subnet is in {subnet['VpcId']}, not in existing_cluster.vpc_id "
                        f"{existing.vpc_id}",
                        "list subnets of the cluster's VPC in existing_cluster.kubectl_subnet_ids",
                    )
                )
                continue
            checks.append(_subnet_routes(ec2, cfg, subnet["SubnetId"], endpoints))
        return checks
    except (ClientError, BotoCoreError) as exc:
        if _error(exc).startswith("InvalidSubnetID"):
            return [
                Check(
                    "kubectl subnets",
                    "fail",
                    f"{', '.join(existing.kubectl_subnet_ids)}: {_error(exc)} in {clients.region}",
                    "set existing_cluster.kubectl_subnet_ids to private subnets of the cluster's "
                    "VPC "
                    f"(aws ec2 describe-subnets --filters Name=vpc-id,Values={existing.vpc_id})",
                )
            ]
        return [
            Check(
                "kubectl subnets",
                "warn",
                f"cannot read the subnets' routes: {_error(exc)}",
                "grant ec2:DescribeSubnets, ec2:DescribeRouteTables and ec2:DescribeVpcEndpoints",
            )
        ]
