"""The versions preflight asks EKS and the workstation about: the Kubernetes minor, each pinned
add-on version (the inference add-on names its operator), and kubectl, helm and node.

Doubles: moto for STS and EC2 instance-type offerings (by AZ id); botocore's Stubber for Service
Quotas (moto 5.2 has no ListServiceQuotas) and for EKS DescribeCluster, DescribeClusterVersions
and DescribeAddonVersions (moto 5.2.5 implements neither version API: it answers 404 "Not yet
implemented", pinned by the moto tests); a fake tool runner for kubectl/helm/node
(tests/support/preflight.py)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from scripts.lib.clients import Clients
from scripts.lib.preflight.versions import (
    check_inference_addon_version,
    check_kubernetes_minor,
    check_tools,
)
from tests.support.config import make_cfg
from tests.support.preflight import (
    ADDON,
    MOTO_ACCOUNT,
    REGION,
    STANDARD,
    _tools,
    cluster_versions,
    eks_offering,
    pinned_addons,
    preflight_with,
)


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("cert-manager", "addons.cert_manager.version"),
        ("kube-proxy", "eks.addons.kube_proxy"),
        (ADDON, "addons.inference_operator.version"),
    ],
)
def test_a_pinned_addon_version_eks_does_not_offer_is_named_in_one_line(
    name: str, field: str
) -> None:
    cfg = make_cfg(account=MOTO_ACCOUNT)
    pinned = pinned_addons(cfg)[name]
    eks, stub = eks_offering(cfg, {name: ["v9.9.2-eksbuild.1", "v9.9.1-eksbuild.1"]})
    checks = preflight_with(cfg, eks)
    stub.assert_no_pending_responses()
    row = checks[f"{name} {pinned}"]
    assert row.status == "fail" and "\n" not in row.detail
    assert row.detail == (
        f"{field} = {pinned}: not offered for Kubernetes 1.34 in us-west-2; offered: "
        "v9.9.2-eksbuild.1, v9.9.1-eksbuild.1"
    )
    assert row.fix.startswith(f"set {field} to one of v9.9.2-eksbuild.1, v9.9.1-eksbuild.1")
    others = [c for stage, c in checks.items() if c.status == "fail"]
    assert others == [row]


def test_a_minor_eks_does_not_offer_fails_naming_the_pinned_ones_it_does() -> None:
    cfg = make_cfg(account=MOTO_ACCOUNT)
    eks = boto3.client("eks", region_name=REGION)
    stub = Stubber(eks)
    stub.add_response("describe_cluster_versions", cluster_versions({"1.33": "STANDARD_SUPPORT"}))
    stub.activate()
    row = check_kubernetes_minor(
        Clients(REGION, aws_factory=lambda s: eks), cfg.eks.kubernetes_version
    )
    assert (row.stage, row.status) == ("Kubernetes 1.34", "fail")
    assert row.detail == "EKS in us-west-2 offers no Kubernetes 1.34"
    assert row.fix == "set eks.kubernetes_version to one of 1.33"


def test_a_minor_in_extended_support_warns_with_the_date_and_a_newer_pin() -> None:
    eks = boto3.client("eks", region_name=REGION)
    stub = Stubber(eks)
    stub.add_response("describe_cluster_versions", cluster_versions(STANDARD))
    stub.activate()
    row = check_kubernetes_minor(Clients(REGION, aws_factory=lambda s: eks), "1.33")
    assert row.status == "warn" and "extended support since 2026-07-29" in row.detail
    assert row.fix == "set eks.kubernetes_version to 1.34"


def test_moto_lacks_describe_cluster_versions_so_the_check_warns() -> None:
    with mock_aws():
        clients = Clients(REGION, aws_factory=lambda s: boto3.client(s, region_name=REGION))
        row = check_kubernetes_minor(clients, "1.34")
    assert row.status == "warn" and "Not yet implemented" in row.detail
    assert row.fix == "grant eks:DescribeClusterVersions"


def test_missing_tools() -> None:
    checks = check_tools(lambda argv: None, "1.34")
    assert [(c.stage, c.status) for c in checks] == [
        ("kubectl", "fail"),
        ("helm", "fail"),
        ("node", "fail"),
    ]
    skew_ok = check_tools(_tools("33"), "1.34")
    assert skew_ok[0].status == "pass"


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
        "addons.inference_operator.version = v1.3.0-eksbuild.1: not offered for Kubernetes 1.34 "
        "in us-west-2; offered: v1.1.0-eksbuild.1, v1.2.0-eksbuild.1"
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
