"""With a private API endpoint, whether ``kubectl_subnet_ids`` reach EKS, Lambda and S3 (and the
Kyverno chart): a NAT route, the VPC endpoints that serve the subnet's route table, and what cannot
be a way out.

Doubles: moto for STS, IAM (roles, OIDC providers) and EC2
(subnets, route tables, NAT and internet gateways, VPC endpoints: all in moto's EC2);
botocore's Stubber for EKS (moto 5.2 has no ListAddons, DescribeAddon, DescribeAddonVersions,
DescribeClusterVersions or access-entry APIs, so DescribeCluster is stubbed with them) and
SageMaker DescribeCluster (moto's HyperPod model rejects ml.g6e types); a fake tool runner for
kubectl/helm/node."""

from __future__ import annotations

from typing import Any

import boto3

from infra.config import AppConfig
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.preflight.routes import check_kubectl_routes
from tests.support.preflight_existing import (
    ACCOUNT,
    REGION,
    _addons,
    _cfg,
    _eks,
    _oidc,
    _run,
    _sagemaker,
)


def _network(ec2: Any) -> dict[str, str]:
    """A VPC with two private subnets on no explicit route table (so on the main one), a
    public subnet for a NAT gateway, and the handler's security group."""
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    ids = {"vpc": vpc}
    for i, name in enumerate(("a", "b", "public")):
        ids[name] = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24")["Subnet"]["SubnetId"]
    ids["sg"] = ec2.create_security_group(GroupName="kubectl", Description="k", VpcId=vpc)[
        "GroupId"
    ]
    ids["main"] = ec2.describe_route_tables(
        Filters=[
            {"Name": "vpc-id", "Values": [vpc]},
            {"Name": "association.main", "Values": ["true"]},
        ]
    )["RouteTables"][0]["RouteTableId"]
    return ids


def _private(ids: dict[str, str], **extra: Any) -> AppConfig:
    existing = {
        "vpc_id": ids["vpc"],
        "kubectl_subnet_ids": [ids["a"], ids["b"]],
        "kubectl_security_group_id": ids["sg"],
    }
    oidc = extra.pop("oidc", f"arn:aws:iam::{ACCOUNT}:oidc-provider/x")
    return _cfg(oidc, existing=existing, **extra)


def _endpoint(ec2: Any, ids: dict[str, str], service: str, **kwargs: Any) -> None:
    kind = "Gateway" if "RouteTableIds" in kwargs else "Interface"
    if kind == "Interface":
        kwargs = {"SubnetIds": [ids["a"]], "PrivateDnsEnabled": True, **kwargs}
    ec2.create_vpc_endpoint(
        VpcId=ids["vpc"],
        ServiceName=f"com.amazonaws.{REGION}.{service}",
        VpcEndpointType=kind,
        **kwargs,
    )


def _routes(cfg: AppConfig) -> dict[str, Check]:
    return {c.stage: c for c in check_kubectl_routes(Clients(REGION), cfg)}


NO_KYVERNO = {"kvcache": {"kyverno": {"install": False}}}


def test_private_subnets_behind_a_nat_gateway_pass_preflight(aws: None) -> None:
    """The whole existing-cluster preflight, with a route table of their own for both subnets."""
    ec2 = boto3.client("ec2", region_name=REGION)
    ids = _network(ec2)
    table = ec2.create_route_table(VpcId=ids["vpc"])["RouteTable"]["RouteTableId"]
    for subnet in (ids["a"], ids["b"]):
        ec2.associate_route_table(RouteTableId=table, SubnetId=subnet)
    eip = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=ids["public"], AllocationId=eip)["NatGateway"]
    ec2.create_route(
        RouteTableId=table, DestinationCidrBlock="0.0.0.0/0", NatGatewayId=nat["NatGatewayId"]
    )
    cfg = _private(ids, oidc=_oidc())
    eks, stub = _eks()
    _addons(stub, {})
    stub.activate()
    checks = _run(cfg, eks, _sagemaker())
    for subnet in (ids["a"], ids["b"]):
        assert checks[f"routes from {subnet}"].status == "pass"
        assert nat["NatGatewayId"] in checks[f"routes from {subnet}"].detail
    assert not [c for c in checks.values() if c.status == "fail"]


def test_a_subnet_on_the_main_table_without_a_way_to_s3_fails_naming_s3(aws: None) -> None:
    """EKS and Lambda have interface endpoints; nothing reaches S3, where the Provider framework
    sends CloudFormation its answer: the deploy would hang until the custom resource times out."""
    ec2 = boto3.client("ec2", region_name=REGION)
    ids = _network(ec2)
    _endpoint(ec2, ids, "eks")
    _endpoint(ec2, ids, "lambda")
    row = _routes(_private(ids, **NO_KYVERNO))[f"routes from {ids['a']}"]
    assert row.status == "fail"
    assert ids["main"] in row.detail and "main table" in row.detail
    assert "S3" in row.detail and "Lambda" not in row.detail and "EKS" not in row.detail
    assert f"com.amazonaws.{REGION}.s3" in row.fix and f"--route-table-ids {ids['main']}" in row.fix
    assert ".lambda" not in row.fix and ".eks" not in row.fix


def test_an_s3_gateway_endpoint_on_the_main_table_serves_an_implicitly_associated_subnet(
    aws: None,
) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    ids = _network(ec2)
    _endpoint(ec2, ids, "eks")
    _endpoint(ec2, ids, "lambda")
    _endpoint(ec2, ids, "s3", RouteTableIds=[ids["main"]])
    rows = _routes(_private(ids, **NO_KYVERNO))
    assert [rows[f"routes from {s}"].status for s in (ids["a"], ids["b"])] == ["pass", "pass"]


def test_an_s3_gateway_endpoint_on_another_route_table_does_not_serve_the_subnet(
    aws: None,
) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    ids = _network(ec2)
    other = ec2.create_route_table(VpcId=ids["vpc"])["RouteTable"]["RouteTableId"]
    ec2.associate_route_table(RouteTableId=other, SubnetId=ids["public"])
    _endpoint(ec2, ids, "eks")
    _endpoint(ec2, ids, "lambda")
    _endpoint(ec2, ids, "s3", RouteTableIds=[other])
    row = _routes(_private(ids, **NO_KYVERNO))[f"routes from {ids['a']}"]
    assert row.status == "fail" and "S3" in row.detail


def test_an_interface_endpoint_without_private_dns_does_not_serve_the_handlers(aws: None) -> None:
    """The SDKs call lambda.<region>.amazonaws.com: only private DNS points it at the endpoint."""
    ec2 = boto3.client("ec2", region_name=REGION)
    ids = _network(ec2)
    _endpoint(ec2, ids, "eks")
    _endpoint(ec2, ids, "lambda", PrivateDnsEnabled=False)
    _endpoint(ec2, ids, "s3", RouteTableIds=[ids["main"]])
    row = _routes(_private(ids, **NO_KYVERNO))[f"routes from {ids['a']}"]
    assert row.status == "fail" and "Lambda" in row.detail and "EKS" not in row.detail
    assert f"com.amazonaws.{REGION}.lambda" in row.fix and "--private-dns-enabled" in row.fix


def test_an_internet_gateway_route_is_no_way_out_for_the_handlers(aws: None) -> None:
    """A Lambda function's network interfaces have no public IP: 0.0.0.0/0 to an internet
    gateway reaches nothing."""
    ec2 = boto3.client("ec2", region_name=REGION)
    ids = _network(ec2)
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=ids["vpc"])
    ec2.create_route(RouteTableId=ids["main"], DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
    row = _routes(_private(ids, **NO_KYVERNO))[f"routes from {ids['a']}"]
    assert row.status == "fail"
    assert all(name in row.detail for name in ("EKS", "Lambda", "S3")) and igw in row.detail
    assert "NAT gateway" in row.fix


def test_endpoints_alone_cannot_fetch_the_kyverno_chart(aws: None) -> None:
    """kvcache.kyverno.install (the default) has the kubectl handler fetch the chart from
    kyverno.github.io, which no VPC endpoint serves."""
    ec2 = boto3.client("ec2", region_name=REGION)
    ids = _network(ec2)
    _endpoint(ec2, ids, "eks")
    _endpoint(ec2, ids, "lambda")
    _endpoint(ec2, ids, "s3", RouteTableIds=[ids["main"]])
    row = _routes(_private(ids))[f"routes from {ids['a']}"]
    assert row.status == "fail" and "kyverno.github.io" in row.detail
    assert "S3" not in row.detail and "Lambda" not in row.detail
    assert "kvcache.kyverno.install" in row.fix and "create-vpc-endpoint" not in row.fix


def test_a_kubectl_subnet_that_does_not_exist_fails_with_the_command_that_lists_them(
    aws: None,
) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    ids = _network(ec2)
    rows = _routes(_private({**ids, "a": "subnet-0aaaa1111bbbb2222"}, **NO_KYVERNO))
    assert rows["kubectl subnets"].status == "fail"
    assert "aws ec2 describe-subnets" in rows["kubectl subnets"].fix


def test_a_public_endpoint_cluster_has_no_route_rows(aws: None) -> None:
    """Without kubectl_subnet_ids the handlers run outside any VPC: nothing to check."""
    assert check_kubectl_routes(Clients(REGION), _cfg("arn:aws:iam::123456789012:role/x")) == []
