"""The add-ons stack on an existing (imported) cluster, with adopt and skip modes.

Double: none. The cluster comes from ``Cluster.from_cluster_attributes`` and the OIDC provider
from ``OpenIdConnectProvider.from_open_id_connect_provider_arn`` as the app does in
existing-cluster mode; synthesized once per module.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

from infra.cdk.context import new_app
from infra.config import parse_config
from infra.constructs.addons.inference_operator import execution_role_name
from stacks.addons_stack import AddonsStack
from tests.support.config import EXISTING_GROUPS, existing_cluster

CLUSTER = existing_cluster()
ISSUER = CLUSTER["oidc_provider_arn"].split(":oidc-provider/")[1]


@pytest.fixture(scope="module")
def resources() -> dict[str, dict[str, Any]]:
    config = parse_config(
        {
            "account": "111122223333",
            "existing_cluster": CLUSTER,
            "hyperpod": EXISTING_GROUPS,
            "addons": {
                "cert_manager": {"mode": "adopt"},
                "metrics_server": {"mode": "skip"},
                "inference_operator": {"alb_enabled": False},
            },
        },
        "test",
        "test",
    )
    app = new_app()
    stack = cdk.Stack(
        app, "Imports", env=cdk.Environment(account=config.account, region=config.region)
    )
    cdk.CfnWaitConditionHandle(stack, "NotEmpty")  # an empty stack fails CloudFormation's checks
    assert config.existing_cluster is not None
    cluster = eks.Cluster.from_cluster_attributes(
        stack, "Cluster", cluster_name=config.existing_cluster.eks_cluster_name
    )
    provider = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
        stack, "Oidc", config.existing_cluster.oidc_provider_arn or ""
    )
    addons = AddonsStack(
        app,
        "Addons",
        config=config,
        cluster=cluster,
        oidc_provider=provider,
        hyperpod_cluster_arn=config.existing_cluster.hyperpod_cluster_arn,
        env=cdk.Environment(account=config.account, region=config.region),
    )
    return dict(Template.from_stack(addons).to_json()["Resources"])


def addon(resources: dict[str, dict[str, Any]], name: str) -> dict[str, Any] | None:
    found = [
        r
        for r in resources.values()
        if r["Type"] == "AWS::EKS::Addon" and r["Properties"]["AddonName"] == name
    ]
    return found[0] if found else None


def test_create_on_existing_cluster_fails_rather_than_overwrites(resources: Any) -> None:
    s3 = addon(resources, "aws-mountpoint-s3-csi-driver")
    assert s3 is not None
    assert s3["Properties"]["ResolveConflicts"] == "NONE"
    assert s3["Properties"]["ClusterName"] == CLUSTER["eks_cluster_name"]
    assert "DeletionPolicy" not in s3


def test_adopted_addon_preserves_and_is_retained(resources: Any) -> None:
    cert = addon(resources, "cert-manager")
    assert cert is not None
    assert cert["Properties"]["ResolveConflicts"] == "PRESERVE"
    assert cert["DeletionPolicy"] == "Retain"
    assert cert["UpdateReplacePolicy"] == "Retain"


def test_skipped_addon_is_absent_and_not_a_dependency(resources: Any) -> None:
    assert addon(resources, "metrics-server") is None
    inference = addon(resources, "amazon-sagemaker-hyperpod-inference")
    assert inference is not None
    assert len(inference["DependsOn"]) == 3  # cert-manager, S3 CSI, FSx CSI


def test_irsa_trust_uses_the_imported_issuer(resources: Any) -> None:
    conditions = [
        r
        for r in resources.values()
        if r["Type"] == "Custom::AWSCDKCfnJson"
        and "ebs-csi-controller-sa" in json.dumps(r["Properties"]["Value"])
    ]
    assert len(conditions) == 1
    # A literal provider ARN gives a literal issuer: the keys are plain strings.
    assert json.loads(conditions[0]["Properties"]["Value"]) == {
        f"{ISSUER}:sub": "system:serviceaccount:kube-system:ebs-csi-controller-sa",
        f"{ISSUER}:aud": "sts.amazonaws.com",
    }


def test_alb_disabled_has_no_role(resources: Any) -> None:
    inference = addon(resources, "amazon-sagemaker-hyperpod-inference")
    assert inference is not None
    text = json.dumps(inference["Properties"]["ConfigurationValues"])
    assert '\\"alb\\":{\\"enabled\\":false}' in text
    assert not any("aws-load-balancer-controller" in json.dumps(r) for r in resources.values())


@pytest.mark.parametrize(
    "unique", ["a", "hyperpod-kvcache-averyveryverylongenvironmentname-ap-southeast-2"]
)
def test_execution_role_name_fits_and_keeps_prefix(unique: str) -> None:
    name = execution_role_name(unique)
    assert name.startswith("SageMakerHyperPodInference-")
    assert len(name) <= 64
    assert execution_role_name(unique) == name
