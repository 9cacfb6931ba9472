"""What preflight's tests answer with: quotas, tools, EKS's versions.

Doubles: moto for STS and EC2 instance-type offerings (by AZ id); botocore's Stubber for Service
Quotas (moto 5.2 has no ListServiceQuotas) and for EKS DescribeCluster, DescribeClusterVersions and
DescribeAddonVersions (moto 5.2.5 implements neither version API: it answers 404 "Not yet
implemented", pinned by the moto tests); a fake tool runner for kubectl/helm/node
(tests/support/preflight.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.stub import Stubber
from moto import mock_aws

from infra.config import AppConfig
from infra.config.addons import ADDON_KEYS
from scripts.lib.clients import Clients
from scripts.lib.preflight.run import run_preflight
from scripts.lib.preflight.versions import (
    ADDON_NAMES,
    CORE_ADDON_NAMES,
)

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
    ends = {
        "1.33": datetime(2026, 7, 29, tzinfo=UTC),
        "1.34": datetime(2026, 12, 2, tzinfo=UTC),
        "1.35": datetime(2027, 3, 27, tzinfo=UTC),
    }
    return {
        "clusterVersions": [
            {"clusterVersion": m, "versionStatus": v, "endOfStandardSupportDate": ends[m]}
            for m, v in status.items()
        ]
    }


STANDARD = {"1.33": "EXTENDED_SUPPORT", "1.34": "STANDARD_SUPPORT", "1.35": "STANDARD_SUPPORT"}


def eks_offering(
    cfg: AppConfig,
    offered: dict[str, list[str]] | None = None,
    status: dict[str, str] = STANDARD,
    minor: str = "1.34",
) -> tuple[Any, Stubber]:
    """EKS for a cluster not created yet: DescribeClusterVersions, then DescribeAddonVersions for
    every pinned add-on, each offering the pinned version unless ``offered`` says otherwise."""
    eks = boto3.client("eks", region_name=REGION)
    stub = Stubber(eks)
    stub.add_client_error("describe_cluster", "ResourceNotFoundException", http_status_code=404)
    stub.add_response("describe_cluster_versions", cluster_versions(status), {})
    for name, version in pinned_addons(cfg).items():
        versions = (offered or {}).get(name, [version])
        addons = [{"addonName": name, "addonVersions": [{"addonVersion": v} for v in versions]}]
        stub.add_response(
            "describe_addon_versions",
            {"addons": addons if versions else []},
            {"addonName": name, "kubernetesVersion": minor},
        )
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
