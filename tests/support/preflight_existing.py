"""An existing cluster as preflight's tests describe it to AWS.

Doubles: moto for STS, IAM (roles, OIDC providers) and EC2
(subnets, route tables, NAT and internet gateways, VPC endpoints: all in moto's EC2);
botocore's Stubber for EKS (moto 5.2 has no ListAddons, DescribeAddon, DescribeAddonVersions,
DescribeClusterVersions or access-entry APIs, so DescribeCluster is stubbed with them) and
SageMaker DescribeCluster (moto's HyperPod model rejects ml.g6e types); a fake tool runner for
kubectl/helm/node."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.stub import Stubber
from kubernetes import client as k8s

from infra.config import AppConfig
from infra.config.addons import ADDON_KEYS, AddonsConfig
from scripts.lib.checks import Check
from scripts.lib.clients import Clients, KubeFactory
from scripts.lib.errors import OperationError
from scripts.lib.preflight.run import run_preflight
from scripts.lib.preflight.versions import ADDON_NAMES
from tests.support.config import QUICK_INSTALL_CLUSTER, make_cfg
from tests.support.preflight import STANDARD, _tools, cluster_versions

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
# What Quick Install installs (the AWS walk-through lists these five).
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
        **QUICK_INSTALL_CLUSTER,
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
                {
                    "addons": [
                        {
                            "addonName": name,
                            "addonVersions": [{"addonVersion": v} for v in versions],
                        }
                    ]
                },
                {"addonName": name, "kubernetesVersion": "1.34"},
            )
            continue
        stub.add_response(
            "describe_addon",
            {
                "addon": {
                    "addonName": name,
                    "clusterName": "hyperpod-cluster-eks",
                    **INSTALLED[name],
                }
            },
            {"clusterName": "hyperpod-cluster-eks", "addonName": name},
        )


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


def _no_kube() -> k8s.ApiClient:
    raise OperationError("no Kubernetes access: not given to this test")


def _run(cfg: AppConfig, eks: Any, sm: Any, kube: KubeFactory = _no_kube) -> dict[str, Check]:
    """The rows by stage; ``kube`` serves the Kubernetes API (none unless a test gives one)."""
    doubles = {"eks": eks, "sagemaker": sm}
    clients = Clients(
        REGION,
        aws_factory=lambda s: doubles.get(s) or boto3.client(s, region_name=REGION),
        kube_factory=kube,
    )
    return {c.stage: c for c in run_preflight(clients, cfg, _tools())}
