"""HyperPod execution role: parity with AWS's reference role and ECR pulls off ``*``."""

from __future__ import annotations

import json
from typing import Any

from tests.doubles.iam_eval import Request, allows, import_names, policy_statements
from tests.support.synth import Synth


def statements(dev: Synth) -> dict[str, dict[str, Any]]:
    policies = [
        v["Properties"]["PolicyDocument"]["Statement"]
        for k, v in dev.resources("hyperpod", "AWS::IAM::Policy").items()
        if k.startswith("ExecutionRoleInline")
    ]
    assert len(policies) == 1
    return {s["Sid"]: s for s in policies[0]}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_only_ecr_login_is_on_every_resource(dev: Synth) -> None:
    by_sid = statements(dev)
    for sid, statement in by_sid.items():
        if "*" in as_list(statement["Resource"]):
            assert not [a for a in as_list(statement["Action"]) if a.startswith("ecr:")] or (
                as_list(statement["Action"]) == ["ecr:GetAuthorizationToken"]
            ), f"{sid} grants ECR actions other than GetAuthorizationToken on *"
    pulls = by_sid["PullImages"]
    assert "ecr:BatchGetImage" in pulls["Action"]
    # This Region's registries only.
    assert f":ecr:{dev.config.region}:*:repository/*" in json.dumps(pulls["Resource"])


def test_parity_with_the_reference_role(dev: Synth) -> None:
    by_sid = statements(dev)
    assert "ec2:DescribeInstanceTypes" in by_sid["DescribeNetwork"]["Action"]
    attach = by_sid["AttachEnisToNodes"]
    assert set(attach["Action"]) == {"ec2:AttachNetworkInterface", "ec2:DetachNetworkInterface"}
    assert ":instance/*" in json.dumps(attach["Resource"])
    # The VPC CNI also tags ENIs it did not create (the node's primary one): tagging an existing
    # ENI is not limited to CreateNetworkInterface, only to the HyperPod subnet.
    tag_existing = by_sid["TagEnisInHyperPodSubnet"]
    assert tag_existing["Action"] == "ec2:CreateTags"
    assert set(tag_existing["Condition"]) == {"ArnEquals"}
    assert set(tag_existing["Condition"]["ArnEquals"]) == {"ec2:Subnet"}


SUBNET = "subnet-0hyperpod"
SERVICE_ACCOUNT = "999988887777"  # the account SageMaker runs HyperPod's instances in


def _attach(dev: Synth, instance_account: str, subnet: str) -> bool:
    """AttachNetworkInterface as EC2 authorizes it: on the instance and on the interface
    (in this account, with the subnet it sits in); allowed only when both are."""
    region, account = dev.config.region, dev.config.account
    pseudo = {"AWS::Partition": "aws", "AWS::Region": region, "AWS::AccountId": account}
    template = dev.template_json("hyperpod")
    imports = {
        name: SUBNET if "Subnet" in name else "sg-0cluster"
        for name in import_names(template["Resources"])
    }
    role = policy_statements(template, "AttachEnisToNodes", pseudo, imports)
    ec2 = f"arn:aws:ec2:{region}"
    return all(
        allows(role, r)
        for r in (
            Request("ec2:AttachNetworkInterface", f"{ec2}:{instance_account}:instance/i-0node"),
            Request(
                "ec2:AttachNetworkInterface",
                f"{ec2}:{account}:network-interface/eni-0pod",
                {"ec2:Subnet": f"{ec2}:{account}:subnet/{subnet}"},
            ),
        )
    )


def test_enis_of_the_hyperpod_subnet_attach_to_nodes_in_the_service_owned_account(
    dev: Synth,
) -> None:
    """HyperPod's instances are not in this account (the VPC CNI meets their subnets
    cross-account), so the instance side names no account; the interface side still holds
    attaches to the HyperPod subnet's interfaces."""
    assert _attach(dev, SERVICE_ACCOUNT, SUBNET)
    assert _attach(dev, dev.config.account, SUBNET)
    assert not _attach(dev, SERVICE_ACCOUNT, "subnet-0elsewhere")
