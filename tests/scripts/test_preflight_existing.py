"""`preflight` on an existing cluster. Doubles: moto for STS, IAM (roles, OIDC providers) and EC2
(subnets, route tables, NAT and internet gateways, VPC endpoints: all in moto's EC2);
botocore's Stubber for EKS (moto 5.2 has no ListAddons, DescribeAddon, DescribeAddonVersions,
DescribeClusterVersions or access-entry APIs, so DescribeCluster is stubbed with them) and
SageMaker DescribeCluster (moto's HyperPod model rejects ml.g6e types); a fake tool runner for
kubectl/helm/node."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
import yaml
from botocore.stub import Stubber
from moto import mock_aws

from infra.config import AppConfig
from infra.config.addons import ADDON_KEYS, AddonsConfig
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.preflight.routes import check_kubectl_routes
from scripts.lib.preflight.run import run_preflight
from scripts.lib.preflight.versions import ADDON_NAMES
from tests.scripts.conftest import make_cfg
from tests.scripts.test_preflight import STANDARD, _tools, cluster_versions

REGION = "us-west-2"
ACCOUNT = "123456789012"  # moto's
ISSUER = "https://oidc.eks.us-west-2.amazonaws.com/id/QUICKINSTALL"
HP_ARN = f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:cluster/qi0123456789"
S3_ROLE = f"arn:aws:iam::{ACCOUNT}:role/hyperpod-cluster-s3-csi"
OPERATOR_CONFIG = (
    '{"executionRoleArn":"arn:aws:iam::123456789012:role/SageMakerHyperPodInference-qi"}'
)
GROUPS = {
    "gpu_group": {"name": "worker-group-1", "instance_type": "ml.g6e.4xlarge", "instance_count": 2},
    "system_group": {"name": "system", "instance_type": "ml.c5.4xlarge", "instance_count": 1},
}
# What Quick Install installs (the issue and the AWS walk-through list these five).
INSTALLED = {
    "cert-manager": {"addonVersion": "v1.18.2-eksbuild.2"},
    "metrics-server": {"addonVersion": "v0.8.0-eksbuild.6"},
    "aws-fsx-csi-driver": {"addonVersion": "v1.8.0-eksbuild.1"},
    "aws-mountpoint-s3-csi-driver": {
        "addonVersion": "v2.7.0-eksbuild.1",
        "serviceAccountRoleArn": S3_ROLE,
    },
    "amazon-sagemaker-hyperpod-inference": {
        "addonVersion": "v1.0.0-eksbuild.1",
        "configurationValues": OPERATOR_CONFIG,
    },
}


def _cfg(oidc_arn: str, **extra: Any) -> AppConfig:
    existing = {
        "eks_cluster_name": "hyperpod-cluster-eks",
        "hyperpod_cluster_name": "hyperpod-cluster",
        "hyperpod_cluster_arn": HP_ARN,
        "oidc_provider_arn": oidc_arn,
        **extra.pop("existing", {}),
    }
    return make_cfg(account=ACCOUNT, existing_cluster=existing, hyperpod=GROUPS, **extra)


def _eks(*, found: bool = True, mode: str = "API") -> tuple[Any, Stubber]:
    eks = boto3.client("eks", region_name=REGION)
    stub = Stubber(eks)
    if not found:
        stub.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
        stub.activate()
        return eks, stub
    stub.add_response(
        "describe_cluster",
        {
            "cluster": {
                "name": "hyperpod-cluster-eks",
                "version": "1.34",
                "status": "ACTIVE",
                "identity": {"oidc": {"issuer": ISSUER}},
                "accessConfig": {"authenticationMode": mode},
            }
        },
        {"name": "hyperpod-cluster-eks"},
    )
    stub.add_response("describe_cluster_versions", cluster_versions(STANDARD), {})
    return eks, stub


def _addons(
    stub: Stubber,
    installed: dict[str, dict[str, Any]] = INSTALLED,
    offered: dict[str, list[str]] | None = None,
) -> None:
    """ListAddons, then in config order (ADDON_KEYS) DescribeAddon for each installed one and
    DescribeAddonVersions (Kubernetes 1.34) for each one left to create, offering its default
    pin unless ``offered`` says otherwise."""
    stub.add_response(
        "list_addons", {"addons": sorted(installed)}, {"clusterName": "hyperpod-cluster-eks"}
    )
    for key in ADDON_KEYS:
        name = ADDON_NAMES[key]
        if name not in installed:
            versions = (offered or {}).get(name, [AddonsConfig().settings(key).version])
            stub.add_response(
                "describe_addon_versions",
                {"addons": [{"addonName": name,
                             "addonVersions": [{"addonVersion": v} for v in versions]}]},
                {"addonName": name, "kubernetesVersion": "1.34"},
            )  # fmt: skip
            continue
        stub.add_response(
            "describe_addon",
            {"addon": {"addonName": name, "clusterName": "hyperpod-cluster-eks",
                       **INSTALLED[name]}},
            {"clusterName": "hyperpod-cluster-eks", "addonName": name},
        )  # fmt: skip


def _sagemaker(gpu_count: int = 2) -> Any:
    sm = boto3.client("sagemaker", region_name=REGION)
    stub = Stubber(sm)
    groups = [("worker-group-1", "ml.g6e.4xlarge", gpu_count), ("system", "ml.c5.4xlarge", 1)]
    stub.add_response(
        "describe_cluster",
        {
            "ClusterArn": HP_ARN,
            "ClusterName": "hyperpod-cluster",
            "ClusterStatus": "InService",
            "InstanceGroups": [
                {"InstanceGroupName": n, "InstanceType": t, "CurrentCount": c, "TargetCount": c}
                for n, t, c in groups
            ],
        },
        {"ClusterName": "hyperpod-cluster"},
    )
    stub.activate()
    return sm


def _oidc() -> str:
    iam = boto3.client("iam", region_name=REGION)
    return iam.create_open_id_connect_provider(
        Url=ISSUER, ClientIDList=["sts.amazonaws.com"], ThumbprintList=["a" * 40]
    )["OpenIDConnectProviderArn"]


def _run(cfg: AppConfig, eks: Any, sm: Any) -> dict[str, Check]:
    doubles = {"eks": eks, "sagemaker": sm}
    clients = Clients(
        REGION, aws_factory=lambda s: doubles.get(s) or boto3.client(s, region_name=REGION)
    )
    return {c.stage: c for c in run_preflight(clients, cfg, _tools())}


@pytest.fixture
def aws() -> Any:
    with mock_aws():
        yield


def test_unknown_eks_cluster_fails(aws: None) -> None:
    eks, _ = _eks(found=False)
    checks = _run(_cfg(_oidc()), eks, _sagemaker())
    assert checks["EKS cluster"].status == "fail"
    assert "not found" in checks["EKS cluster"].detail


def test_quick_install_all_skip_passes_and_skips_quotas(aws: None) -> None:
    eks, stub = _eks()
    _addons(stub)
    stub.activate()
    addons = {k: {"mode": "skip"} for k in ("cert_manager", "metrics_server", "fsx_csi",
                                            "s3_csi", "inference_operator")}  # fmt: skip
    checks = _run(_cfg(_oidc(), addons=addons), eks, _sagemaker())
    assert checks["quotas"].status == "skip" and checks["AZ offerings"].status == "skip"
    assert not any(k.startswith("quota ml.") for k in checks)
    assert checks["OIDC provider"].status == "pass"
    assert checks["kubectl role"].status == "pass"
    assert checks["add-on aws-ebs-csi-driver"].status == "pass"  # not installed: create
    failed = {k: c for k, c in checks.items() if c.status == "fail"}
    assert not failed
    stub.assert_no_pending_responses()


def test_create_on_an_installed_addon_fails_with_the_yaml_to_paste(aws: None) -> None:
    eks, stub = _eks()
    _addons(stub)
    stub.activate()
    checks = _run(_cfg(_oidc()), eks, _sagemaker())  # every add-on on create
    s3 = checks["add-on aws-mountpoint-s3-csi-driver"]
    assert s3.status == "fail" and "create would fail" in s3.detail
    skip_block, adopt_block = s3.fix.split("(recommended; or take it over as it is:)")
    assert yaml.safe_load(skip_block.removeprefix("paste into config:\n")) == {
        "addons": {"s3_csi": {"mode": "skip"}}
    }
    pasted = yaml.safe_load(adopt_block.strip().removeprefix("paste into config:\n"))
    assert pasted == {"addons": {"s3_csi": {"mode": "adopt", "version": "v2.7.0-eksbuild.1",
                                            "adopted_role_arn": S3_ROLE}}}  # fmt: skip


def test_adopt_must_declare_the_installed_configuration(aws: None) -> None:
    eks, stub = _eks()
    _addons(stub)
    stub.activate()
    addons = {
        k: {"mode": "skip"} for k in ("cert_manager", "metrics_server", "fsx_csi", "s3_csi")
    } | {"inference_operator": {"mode": "adopt", "adopted_configuration": '{"other":1}'}}
    checks = _run(_cfg(_oidc(), addons=addons), eks, _sagemaker())
    operator = checks["add-on amazon-sagemaker-hyperpod-inference"]
    assert operator.status == "fail" and "adopted_configuration" in operator.detail
    pasted = yaml.safe_load(operator.fix.removeprefix("paste into config:\n"))
    assert pasted["addons"]["inference_operator"]["adopted_configuration"] == OPERATOR_CONFIG


def test_instance_group_count_mismatch_prints_the_group(aws: None) -> None:
    eks, stub = _eks()
    _addons(stub, {})
    stub.activate()
    checks = _run(_cfg(_oidc()), eks, _sagemaker(gpu_count=4))
    gpu = checks["instance group gpu_group"]
    assert gpu.status == "fail"
    assert yaml.safe_load(gpu.fix.removeprefix("paste into config:\n")) == {
        "hyperpod": {"gpu_group": {"name": "worker-group-1", "instance_type": "ml.g6e.4xlarge",
                                   "instance_count": 4}}
    }  # fmt: skip
    assert checks["instance group system_group"].status == "pass"


def test_oidc_provider_of_another_cluster_fails(aws: None) -> None:
    other = boto3.client("iam", region_name=REGION).create_open_id_connect_provider(
        Url="https://oidc.eks.us-west-2.amazonaws.com/id/OTHER",
        ClientIDList=["sts.amazonaws.com"],
        ThumbprintList=["b" * 40],
    )["OpenIDConnectProviderArn"]
    eks, stub = _eks()
    _addons(stub, {})
    stub.activate()
    checks = _run(_cfg(other), eks, _sagemaker())
    assert checks["OIDC provider"].status == "fail"


def test_a_brought_kubectl_role_is_checked(aws: None) -> None:
    iam = boto3.client("iam", region_name=REGION)
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
             "Principal": {"Service": "ec2.amazonaws.com"}}]}  # fmt: skip
    arn = iam.create_role(RoleName="team-kubectl", AssumeRolePolicyDocument=json.dumps(trust))[
        "Role"
    ]["Arn"]
    eks, stub = _eks()
    stub.add_client_error(
        "list_associated_access_policies", "ResourceNotFoundException", http_status_code=404
    )
    _addons(stub, {})
    stub.activate()
    checks = _run(_cfg(_oidc(), existing={"kubectl_role_arn": arn}), eks, _sagemaker())
    assert checks["kubectl role trust"].status == "fail"
    entry = checks["kubectl access entry"]
    assert entry.status == "fail" and "aws eks create-access-entry" in entry.fix


def test_config_map_only_authentication_fails(aws: None) -> None:
    eks, stub = _eks(mode="CONFIG_MAP")
    _addons(stub, {})
    stub.activate()
    checks = _run(_cfg(_oidc()), eks, _sagemaker())
    assert checks["access entries"].status == "fail"


# A private API endpoint: the handlers and their Provider framework functions run in
# kubectl_subnet_ids. Routes, route tables, NAT and internet gateways and VPC endpoints are
# moto's EC2 (it answers the association.subnet-id and association.main filters as EC2 does).


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
        Filters=[{"Name": "vpc-id", "Values": [vpc]}, {"Name": "association.main",
                                                      "Values": ["true"]}]
    )["RouteTables"][0]["RouteTableId"]  # fmt: skip
    return ids


def _private(ids: dict[str, str], **extra: Any) -> AppConfig:
    existing = {"vpc_id": ids["vpc"], "kubectl_subnet_ids": [ids["a"], ids["b"]],
                "kubectl_security_group_id": ids["sg"]}  # fmt: skip
    oidc = extra.pop("oidc", f"arn:aws:iam::{ACCOUNT}:oidc-provider/x")
    return _cfg(oidc, existing=existing, **extra)


def _endpoint(ec2: Any, ids: dict[str, str], service: str, **kwargs: Any) -> None:
    kind = "Gateway" if "RouteTableIds" in kwargs else "Interface"
    if kind == "Interface":
        kwargs = {"SubnetIds": [ids["a"]], "PrivateDnsEnabled": True, **kwargs}
    ec2.create_vpc_endpoint(
        VpcId=ids["vpc"], ServiceName=f"com.amazonaws.{REGION}.{service}",
        VpcEndpointType=kind, **kwargs,
    )  # fmt: skip


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
    ec2.create_route(RouteTableId=table, DestinationCidrBlock="0.0.0.0/0",
                     NatGatewayId=nat["NatGatewayId"])  # fmt: skip
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


def test_an_addon_to_create_that_eks_does_not_offer_for_the_clusters_minor_fails(
    aws: None,
) -> None:
    eks, stub = _eks()
    _addons(stub, offered={"aws-ebs-csi-driver": ["v1.99.0-eksbuild.1"]})
    stub.activate()
    addons = {k: {"mode": "skip"} for k in ("cert_manager", "metrics_server", "fsx_csi",
                                            "s3_csi", "inference_operator")}  # fmt: skip
    checks = _run(_cfg(_oidc(), addons=addons), eks, _sagemaker())
    stub.assert_no_pending_responses()
    row = checks["aws-ebs-csi-driver v1.54.0-eksbuild.1"]
    assert row.status == "fail" and row.detail.startswith(
        "addons.ebs_csi.version = v1.54.0-eksbuild.1: not offered for Kubernetes 1.34"
    )
    assert row.fix == "set addons.ebs_csi.version to one of v1.99.0-eksbuild.1"
    assert [c for c in checks.values() if c.status == "fail"] == [row]
    assert checks["Kubernetes 1.34"].status == "pass"
