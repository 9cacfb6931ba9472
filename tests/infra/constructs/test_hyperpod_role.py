"""What the HyperPod instance role may do to the account's network interfaces, as IAM would decide
it from the synthesized policy (dev), modelled by tests/doubles/iam_eval.py: no AWS API evaluates
a policy offline.

HyperPod creates and attaches the nodes' interfaces in the HyperPod subnet with this role, and
the VPC CNI on the nodes adds the Pods' interfaces beside them (AWS's reference HyperPod EKS
roles, awslabs/awsome-distributed-ai ``sagemaker_iam_role``, keep these actions on the instance
role). Any other interface of the account, a database's or a Lambda function's, is out of reach.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.doubles.iam_eval import Request, allows, policy_statements
from tests.support.synth import Synth

EC2 = "arn:aws:ec2:us-west-2:111122223333"
HYPERPOD_SUBNET = f"{EC2}:subnet/subnet-0hyperpod"
OTHER_SUBNET = f"{EC2}:subnet/subnet-0database"
ENI = f"{EC2}:network-interface/eni-0abc"
ENI_ACTIONS = (
    "ec2:DeleteNetworkInterface",
    "ec2:ModifyNetworkInterfaceAttribute",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
    "ec2:DetachNetworkInterface",
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterfacePermission",
    "ec2:CreateTags",
)


@pytest.fixture(scope="module")
def node_role(dev: Synth) -> list[dict[str, Any]]:
    pseudo = {"AWS::Partition": "aws", "AWS::Region": "us-west-2", "AWS::AccountId": "111122223333"}
    stand_ins = {"HyperPodSubnet": "subnet-0hyperpod", "SecurityGroup": "sg-0cluster"}
    return policy_statements(dev.template_json("hyperpod"), "PullImages", pseudo, stand_ins)


@pytest.mark.parametrize("action", ENI_ACTIONS)
def test_node_role_cannot_change_a_network_interface_outside_the_hyperpod_subnet(
    node_role: list[dict[str, Any]], action: str
) -> None:
    assert not allows(node_role, Request(action, ENI, {"ec2:Subnet": OTHER_SUBNET}))


@pytest.mark.parametrize("action", ENI_ACTIONS)
def test_node_role_manages_network_interfaces_of_the_hyperpod_subnet(
    node_role: list[dict[str, Any]], action: str
) -> None:
    assert allows(node_role, Request(action, ENI, {"ec2:Subnet": HYPERPOD_SUBNET}))


def test_node_role_creates_tags_and_attaches_interfaces_in_the_hyperpod_subnet(
    node_role: list[dict[str, Any]],
) -> None:
    """Creating an interface authorizes the new interface, the subnet and the security group;
    tagging on creation has no subnet to check yet; attaching authorizes the instance too."""
    create = [ENI, HYPERPOD_SUBNET, f"{EC2}:security-group/sg-0cluster"]
    assert all(allows(node_role, Request("ec2:CreateNetworkInterface", r)) for r in create)
    assert not allows(node_role, Request("ec2:CreateNetworkInterface", OTHER_SUBNET))
    on_create = {"ec2:CreateAction": "CreateNetworkInterface"}
    assert allows(node_role, Request("ec2:CreateTags", ENI, on_create))
    attach = Request("ec2:AttachNetworkInterface", f"{EC2}:instance/i-0node")
    assert allows(node_role, attach)
