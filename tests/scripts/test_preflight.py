"""`preflight`. Doubles: moto for STS and EC2 instance-type offerings (by AZ id); botocore's
Stubber for Service Quotas (moto 5.2 has no ListServiceQuotas) and for EKS DescribeCluster,
DescribeClusterVersions and DescribeAddonVersions (moto 5.2.5 implements neither version API: it
answers 404 "Not yet implemented", pinned by the two moto tests below); a fake tool runner for
kubectl/helm/node."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from infra.config import AppConfig
from infra.config.addons import ADDON_KEYS
from scripts.lib.clients import Clients
from scripts.lib.preflight.run import run_preflight
from scripts.lib.preflight.versions import (
    ADDON_NAMES,
    CORE_ADDON_NAMES,
    check_inference_addon_version,
    check_kubernetes_minor,
    check_tools,
)
from tests.scripts.conftest import make_cfg

REGION = "us-west-2"
ADDON = "amazon-sagemaker-hyperpod-inference"
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


def pinned_addons(cfg: AppConfig) -> dict[str, str]:
    """EKS add-on name -> the version the config pins, in the order preflight asks."""
    core = {name: getattr(cfg.eks.addons, key) for key, name in CORE_ADDON_NAMES.items()}
    return core | {ADDON_NAMES[k]: cfg.addons.settings(k).version for k in ADDON_KEYS}


def cluster_versions(status: dict[str, str]) -> dict[str, Any]:
    """A DescribeClusterVersions answer: minor -> versionStatus."""
    ends = {"1.33": datetime(2026, 7, 29, tzinfo=UTC), "1.34": datetime(2026, 12, 2, tzinfo=UTC),
            "1.35": datetime(2027, 3, 27, tzinfo=UTC)}  # fmt: skip
    return {"clusterVersions": [
        {"clusterVersion": m, "versionStatus": v, "endOfStandardSupportDate": ends[m]}
        for m, v in status.items()]}  # fmt: skip


STANDARD = {"1.33": "EXTENDED_SUPPORT", "1.34": "STANDARD_SUPPORT", "1.35": "STANDARD_SUPPORT"}


def eks_offering(
    cfg: AppConfig, offered: dict[str, list[str]] | None = None, status: dict[str, str] = STANDARD,
    minor: str = "1.34",
) -> tuple[Any, Stubber]:  # fmt: skip
    """EKS for a cluster not created yet: DescribeClusterVersions, then DescribeAddonVersions for
    every pinned add-on, each offering the pinned version unless ``offered`` says otherwise."""
    eks = boto3.client("eks", region_name=REGION)
    stub = Stubber(eks)
    stub.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
    stub.add_response("describe_cluster_versions", cluster_versions(status), {})
    for name, version in pinned_addons(cfg).items():
        versions = (offered or {}).get(name, [version])
        addons = [{"addonName": name, "addonVersions": [{"addonVersion": v} for v in versions]}]
        stub.add_response("describe_addon_versions", {"addons": addons if versions else []},
                          {"addonName": name, "kubernetesVersion": minor})  # fmt: skip
    stub.activate()
    return eks, stub


def preflight_with(cfg: AppConfig, eks: Any) -> dict[str, Any]:
    with mock_aws():
        sq = _quotas({"ml.g6e.4xlarge for cluster usage": 4, "ml.c5.4xlarge for cluster usage": 2})
        doubles = {"service-quotas": sq, "eks": eks}
        clients = Clients(
            REGION, aws_factory=lambda s: doubles.get(s) or boto3.client(s, region_name=REGION)
        )
        return {c.stage: c for c in run_preflight(clients, cfg, _tools())}


def test_everything_passes_in_an_offered_az() -> None:
    cfg = make_cfg(account=MOTO_ACCOUNT)
    eks, stub = eks_offering(cfg)
    checks = preflight_with(cfg, eks)
    stub.assert_no_pending_responses()
    status = {stage: c.status for stage, c in checks.items()}
    assert status["credentials"] == "pass"
    assert status["quota ml.g6e.4xlarge for cluster usage"] == "pass"
    assert status["ml.g6e.4xlarge in usw2-az2"] == "pass"
    assert status["kubectl layer minor"] == "pass"
    assert checks["Kubernetes 1.34"].detail == "offered by EKS, standard support until 2026-12-02"
    for name, version in pinned_addons(cfg).items():
        assert status.pop(f"{name} {version}") == "pass", checks[f"{name} {version}"]
    assert checks[f"{ADDON} v1.3.0-eksbuild.1"].detail == (
        "offered for Kubernetes 1.34 (operator 3.2)"
    )
    assert all(v == "pass" for v in status.values()), checks


@pytest.mark.parametrize(
    ("name", "field"),
    [("cert-manager", "addons.cert_manager.version"), ("kube-proxy", "eks.addons.kube_proxy"),
     (ADDON, "addons.inference_operator.version")],
)  # fmt: skip
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
    row = check_kubernetes_minor(Clients(REGION, aws_factory=lambda s: eks), cfg.eks
                                 .kubernetes_version)  # fmt: skip
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


# The inference add-on check alone. Double: botocore's Stubber on EKS DescribeAddonVersions.


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
