"""``preflight`` on an owned cluster: every row passes in an offered AZ, and every failed row
carries its fix.

Doubles: moto for STS and EC2 instance-type offerings (by AZ id); botocore's Stubber for Service
Quotas (moto 5.2 has no ListServiceQuotas) and for EKS DescribeCluster, DescribeClusterVersions
and DescribeAddonVersions (moto 5.2.5 implements neither version API: it answers 404 "Not yet
implemented", pinned by the moto tests); a fake tool runner for kubectl/helm/node
(tests/support/preflight.py)."""

from __future__ import annotations

import boto3
from moto import mock_aws

from infra.config import AppConfig
from scripts.lib.clients import Clients
from scripts.lib.preflight.run import run_preflight
from tests.support.config import make_cfg
from tests.support.preflight import (
    ADDON,
    MOTO_ACCOUNT,
    REGION,
    _quotas,
    _tools,
    eks_offering,
    pinned_addons,
    preflight_with,
)


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


def _in_zone(cfg: AppConfig, az_id: str) -> AppConfig:
    """``cfg`` with its HyperPod subnet in ``az_id``, past the config's own checks."""
    subnet = cfg.network.hyperpod_subnet.model_copy(update={"az_id": az_id})
    network = cfg.network.model_copy(update={"hyperpod_subnet": subnet})
    return cfg.model_copy(update={"network": network})


def test_failures_carry_a_fix() -> None:
    with mock_aws():
        sq = _quotas({"ml.g6e.4xlarge for cluster usage": 1})
        clients = Clients(
            REGION,
            aws_factory=lambda s: (
                sq if s == "service-quotas" else boto3.client(s, region_name=REGION)
            ),
        )
        # moto offers G6e in every us-west-2 zone, so the subnet names a zone no account has
        # (synth refuses it; preflight must too).
        cfg = _in_zone(make_cfg(), "usw2-az9")  # account differs from moto's
        checks = run_preflight(clients, cfg, _tools(kubectl_minor="31"))
    by = {c.stage: c for c in checks}
    assert by["credentials"].status == "fail" and "111122223333" in by["credentials"].fix
    quota = by["quota ml.g6e.4xlarge for cluster usage"]
    assert quota.status == "fail" and "--quota-code L-00000000 --desired-value 2" in quota.fix
    assert by["quota ml.c5.4xlarge for cluster usage"].status == "warn"
    offering = by["ml.g6e.4xlarge in usw2-az9"]
    assert offering.status == "fail" and "usw2-az1" in offering.fix  # names AZ ids that offer it
    zones = by["availability zones"]
    assert zones.status == "fail" and "usw2-az4" in (zones.fix or "")
    assert by["kubectl"].status == "fail"  # 1.31 client vs 1.34 cluster
