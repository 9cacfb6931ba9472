"""Least privilege that follows the config: the gated-model role trusts only the endpoint
namespaces (on the dev template), and the FSx CSI role's cdk-nag acknowledgement names only what
is attached (a bare Stack with just the add-on: quick, no full synth)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, CfnElement, Stack
from aws_cdk import aws_eks_v2 as eks

from infra.cdk.context import new_app
from infra.cdk.nag import enable_checks, managed_policy_finding, wildcard_finding
from infra.config.addons import FsxCsiConfig
from infra.constructs.addons.storage_addons import FsxCsiDriverAddon
from tests.support.synth import Synth

GATED_POLICY = "AmazonSageMakerHyperPodGatedModelAccess"


def _cfn_json_values(template: dict[str, Any], condition: dict[str, Any]) -> dict[str, Any]:
    """A trust condition whose operators point at CfnJson custom resources, rendered (tokens in
    the keys become ISSUER)."""
    out: dict[str, Any] = {}
    for operator, ref in condition.items():
        custom = template["Resources"][ref["Fn::GetAtt"][0]]
        assert custom["Type"] == "Custom::AWSCDKCfnJson"
        value = custom["Properties"]["Value"]
        text = (
            value
            if isinstance(value, str)
            else "".join(p if isinstance(p, str) else "ISSUER" for p in value["Fn::Join"][1])
        )
        out[operator] = json.loads(text)
    return out


def test_gated_model_role_trusts_only_the_endpoint_namespaces(dev: Synth) -> None:
    template = dev.template_json("addons")
    roles = [
        r
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Role" and GATED_POLICY in json.dumps(r["Properties"])
    ]
    assert len(roles) == 1
    statements = roles[0]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    web = [s for s in statements if s["Action"] == "sts:AssumeRoleWithWebIdentity"]
    assert len(web) == 1
    conditions = _cfn_json_values(template, web[0]["Condition"])
    namespaces = sorted({ep.namespace for ep in dev.config.kvcache.endpoints})
    assert namespaces == ["inference"]  # dev.yaml: the test would pass vacuously without one
    assert conditions == {
        "StringLike": {
            "ISSUER:sub": [
                f"system:serviceaccount:{ns}:hyperpod-inference-service-account*"
                for ns in namespaces
            ]
        },
        "StringEquals": {"ISSUER:aud": "sts.amazonaws.com"},
    }
    assert "system:serviceaccount:*:" not in json.dumps(conditions)
    assert {
        "Effect": "Allow",
        "Action": "sts:AssumeRole",
        "Principal": {"Service": "sagemaker.amazonaws.com"},
    } in statements


def _fsx(dynamic: bool, outdir: Path) -> tuple[App, FsxCsiDriverAddon]:
    app = new_app(str(outdir))  # as app.py makes it: the warnings-only validator off
    stack = Stack(app, "Fsx", env={"account": "111122223333", "region": "us-west-2"})
    cluster = eks.Cluster.from_cluster_attributes(stack, "Cluster", cluster_name="c")
    addon = FsxCsiDriverAddon(
        stack,
        "FsxCsi",
        cluster=cluster,
        settings=FsxCsiConfig(dynamic_provisioning=dynamic),
        existing_cluster=False,
    )
    return app, addon


def _acknowledged(addon: FsxCsiDriverAddon) -> set[str]:
    return {
        rule.removeprefix("Annotation::")
        for entry in addon.role.node.metadata
        if entry.type == "aws:cdk:acknowledged-rules"
        for rule in entry.data
    }


@pytest.mark.parametrize("dynamic", [True, False])
def test_fsx_acknowledgement_follows_dynamic_provisioning(dynamic: bool, tmp_path: Path) -> None:
    app, addon = _fsx(dynamic, tmp_path)
    enable_checks(app)
    app.synth()  # cdk-nag finds nothing unacknowledged either way
    template = json.loads((tmp_path / "Fsx.template.json").read_text())
    cfn_role = addon.role.node.default_child
    assert isinstance(cfn_role, CfnElement)
    role = template["Resources"][Stack.of(addon.role).get_logical_id(cfn_role)]
    attached = "AmazonFSxFullAccess" in json.dumps(role["Properties"].get("ManagedPolicyArns", []))
    assert attached is dynamic
    managed, describe = managed_policy_finding("AmazonFSxFullAccess"), wildcard_finding("*")
    assert _acknowledged(addon) == ({managed} if dynamic else {describe})
