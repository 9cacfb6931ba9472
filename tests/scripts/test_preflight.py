"""`preflight`. Doubles: moto for STS, EC2 instance-type offerings (by AZ id) and EKS; botocore
Stubber for Service Quotas (moto 5.2 has no ListServiceQuotas); a fake tool runner for
kubectl/helm/node."""

from __future__ import annotations

import json
from typing import Any

import boto3
from botocore.stub import Stubber
from moto import mock_aws

from scripts.clients import Clients
from scripts.preflight import check_inference_addon_version, check_tools, run_preflight
from tests.scripts.conftest import make_cfg

REGION = "us-west-2"
MOTO_ACCOUNT = "123456789012"


def _quotas(values: dict[str, float]) -> Any:
    sq = boto3.client("service-quotas", region_name=REGION)
    stub = Stubber(sq)
    quotas = [
        {"ServiceCode": "sagemaker", "QuotaName": name, "QuotaCode": f"L-{i:08d}", "Value": v}
        for i, (name, v) in enumerate(values.items())
    ]
    stub.add_response("list_service_quotas", {"Quotas": quotas}, {"ServiceCode": "sagemaker"})
    stub.activate()
    return sq


def _tools(kubectl_minor: str = "34") -> Any:
    outputs = {
        "kubectl": json.dumps(
            {
                "clientVersion": {
                    "major": "1",
                    "minor": kubectl_minor,
                    "gitVersion": f"v1.{kubectl_minor}.2",
                }
            }
        ),
        "helm": "v3.16.4+g7877b45",
        "node": "v20.18.1",
    }
    return lambda argv: (0, outputs[argv[0]])


def test_everything_passes_in_an_offered_az() -> None:
    with mock_aws():
        sq = _quotas(
            {
                "ml.g6e.4xlarge for cluster usage": 4,
                "ml.c5.4xlarge for cluster usage": 2,
                "ml.p5.48xlarge for cluster usage": 0,
            }
        )
        clients = Clients(
            REGION,
            aws_factory=lambda s: (
                sq if s == "service-quotas" else boto3.client(s, region_name=REGION)
            ),
        )
        checks = run_preflight(clients, make_cfg(account=MOTO_ACCOUNT), _tools())
    status = {c.stage: c.status for c in checks}
    assert status["credentials"] == "pass"
    assert status["quota ml.g6e.4xlarge for cluster usage"] == "pass"
    assert status["ml.g6e.4xlarge in usw2-az2"] == "pass"
    assert status["kubectl layer minor"] == "pass"
    # moto has no DescribeAddonVersions (test_moto_lacks_describe_addon_versions_so_the_check_warns)
    assert status.pop(f"{ADDON} v1.3.0-eksbuild.1") == "warn"
    assert all(v == "pass" for v in status.values()), checks


def test_failures_carry_a_fix() -> None:
    with mock_aws():
        sq = _quotas({"ml.g6e.4xlarge for cluster usage": 1})
        clients = Clients(
            REGION,
            aws_factory=lambda s: (
                sq if s == "service-quotas" else boto3.client(s, region_name=REGION)
            ),
        )
        cfg = make_cfg(
            network={"hyperpod_subnet": {"az_id": "usw2-az9"}}
        )  # account differs from moto's
        checks = run_preflight(clients, cfg, _tools(kubectl_minor="31"))
    by = {c.stage: c for c in checks}
    assert by["credentials"].status == "fail" and "111122223333" in by["credentials"].fix
    quota = by["quota ml.g6e.4xlarge for cluster usage"]
    assert quota.status == "fail" and "--quota-code L-00000000 --desired-value 2" in quota.fix
    assert by["quota ml.c5.4xlarge for cluster usage"].status == "warn"
    offering = by["ml.g6e.4xlarge in usw2-az9"]
    assert offering.status == "fail" and "usw2-az1" in offering.fix  # names AZ ids that offer it
    assert by["kubectl"].status == "fail"  # 1.31 client vs 1.34 cluster


def test_missing_tools() -> None:
    checks = check_tools(lambda argv: None, "1.34")
    assert [(c.stage, c.status) for c in checks] == [
        ("kubectl", "fail"),
        ("helm", "fail"),
        ("node", "fail"),
    ]
    skew_ok = check_tools(_tools("33"), "1.34")
    assert skew_ok[0].status == "pass"


# The inference add-on check. Double: botocore's Stubber on EKS DescribeAddonVersions; moto 5.2.5
# does not implement that operation (it answers 404 "Not yet implemented", pinned below).
ADDON = "amazon-sagemaker-hyperpod-inference"


def _addon_versions(offered: list[str], minor: str = "1.34") -> Any:
    eks = boto3.client("eks", region_name=REGION)
    stub = Stubber(eks)
    versions = [{"addonVersion": v} for v in offered]
    addons = [{"addonName": ADDON, "addonVersions": versions}] if offered else []
    stub.add_response(
        "describe_addon_versions",
        {"addons": addons},
        {"addonName": ADDON, "kubernetesVersion": minor},
    )
    stub.activate()
    return eks, stub


def _addon_check(offered: list[str], minor: str = "1.34") -> Any:
    eks, stub = _addon_versions(offered, minor)
    clients = Clients(REGION, aws_factory=lambda s: eks)
    check = check_inference_addon_version(clients, make_cfg(), minor)
    stub.assert_no_pending_responses()
    return check


def test_inference_addon_version_offered_for_the_cluster_minor() -> None:
    check = _addon_check(["v1.1.0-eksbuild.1", "v1.3.0-eksbuild.1"], "1.33")
    assert (check.stage, check.status) == (f"{ADDON} v1.3.0-eksbuild.1", "pass")
    assert check.detail == "offered for Kubernetes 1.33 (operator 3.2)"


def test_inference_addon_version_not_offered_names_the_offered_ones() -> None:
    check = _addon_check(["v1.1.0-eksbuild.1", "v1.2.0-eksbuild.1"])
    assert check.status == "fail"
    assert check.detail == (
        "not offered for Kubernetes 1.34; offered: v1.1.0-eksbuild.1, v1.2.0-eksbuild.1"
    )
    assert "one of v1.1.0-eksbuild.1, v1.2.0-eksbuild.1" in check.fix
    assert "infra/config/operator_versions.py" in check.fix


def test_inference_addon_not_offered_at_all() -> None:
    check = _addon_check([])
    assert check.status == "fail" and "no amazon-sagemaker-hyperpod-inference version" in (
        check.detail
    )
    assert f"describe-addon-versions --addon-name {ADDON}" in check.fix


def test_moto_lacks_describe_addon_versions_so_the_check_warns() -> None:
    with mock_aws():
        clients = Clients(REGION, aws_factory=lambda s: boto3.client(s, region_name=REGION))
        check = check_inference_addon_version(clients, make_cfg(), "1.34")
    assert check.status == "warn" and "Not yet implemented" in check.detail
    assert check.fix == "grant eks:DescribeAddonVersions"
