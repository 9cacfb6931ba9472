"""Who reaches and who administers the EKS control plane: the public endpoint's CIDRs, where the
kubectl handler runs, and the creating principal's cluster-admin access, from the eks section.

The construct alone in a bare stack (a VPC of its own), synthesized by CDK: no AWS call.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Annotations, Match, Template

from infra.cdk.context import new_app
from infra.config.eks import EksConfig
from infra.constructs.eks_cluster import EksControlPlane

ADMIN = "arn:aws:iam::111122223333:role/PlatformAdmin"
ENV = {"account": "111122223333", "region": "us-west-2"}


def control_plane(**eks: Any) -> tuple[Stack, dict[str, Any]]:
    app = new_app()
    stack = Stack(app, "Eks", env=ENV)
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2)
    EksControlPlane(
        stack,
        "ControlPlane",
        config=EksConfig(**eks),
        vpc=vpc,
        control_plane_subnets=list(vpc.private_subnets),
        security_group=ec2.SecurityGroup(stack, "Sg", vpc=vpc),
        removal_policy=RemovalPolicy.DESTROY,
    )
    template = Template.from_stack(stack).to_json()
    (cluster,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::EKS::Cluster"]
    return stack, {"cluster": cluster["Properties"], "template": template}


def kubectl_handler(template: dict[str, Any]) -> dict[str, Any]:
    (handler,) = [
        r["Properties"]
        for k, r in template["Resources"].items()
        if r["Type"] == "AWS::Lambda::Function" and "KubectlProviderHandler" in k
    ]
    return handler


@pytest.mark.parametrize(
    ("admins", "setting", "creator_admin"),
    [
        ((), None, True),
        ((ADMIN,), None, False),
        ((), False, False),
        ((), True, True),
        ((ADMIN,), False, False),
        ((ADMIN,), True, True),
    ],
)
def test_the_creator_admin_setting_decides_the_creator_whatever_the_admin_list(
    admins: tuple[str, ...], setting: bool | None, creator_admin: bool
) -> None:
    """The deploy role keeps cluster-admin only while no admin principal is configured, unless
    ``eks.bootstrap_creator_admin`` says otherwise: both of its values hold on both sides of the
    boundary the default turns on (the admin list empty or not), since a cluster created with
    or without the creator's access must keep it (a change would replace the cluster). The
    admin list alone decides the access entries."""
    _, out = control_plane(admin_principal_arns=list(admins), bootstrap_creator_admin=setting)
    access = out["cluster"]["AccessConfig"]
    assert access["BootstrapClusterCreatorAdminPermissions"] is creator_admin
    entries = [
        r["Properties"]
        for r in out["template"]["Resources"].values()
        if r["Type"] == "AWS::EKS::AccessEntry"
    ]
    named = [e for e in entries if isinstance(e["PrincipalArn"], str)]
    assert [e["PrincipalArn"] for e in named] == list(admins)
    for e in named:
        (policy,) = e["AccessPolicies"]
        assert json.dumps(policy["PolicyArn"]).endswith(
            ':eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"]]}'
        )
        assert policy["AccessScope"] == {"Type": "cluster"}


def test_a_public_endpoint_admits_only_the_listed_networks_and_kubectl_still_reaches_it() -> None:
    """The handler that applies manifests runs in the private subnets, where the private
    endpoint answers, so listing only the operators' networks does not lock the deploy out."""
    _, out = control_plane(public_access_cidrs=["203.0.113.0/24"])
    vpc = out["cluster"]["ResourcesVpcConfig"]
    assert vpc["EndpointPublicAccess"] is True
    assert vpc["EndpointPrivateAccess"] is True
    assert vpc["PublicAccessCidrs"] == ["203.0.113.0/24"]
    assert "VpcConfig" in kubectl_handler(out["template"])


def test_leaving_the_public_cidrs_unset_warns_that_the_endpoint_is_open_to_anyone() -> None:
    stack, out = control_plane()
    assert out["cluster"]["ResourcesVpcConfig"]["PublicAccessCidrs"] == ["0.0.0.0/0"]
    Annotations.from_stack(stack).has_warning(
        "*", Match.string_like_regexp("eks.public_access_cidrs is not set.*0.0.0.0/0")
    )
    quiet, _ = control_plane(public_access_cidrs=["0.0.0.0/0"])
    Annotations.from_stack(quiet).has_no_warning("*", Match.string_like_regexp("public_access"))
