"""Permissions of the AWS Load Balancer Controller that the inference add-on installs.

Follows the controller's own policy for the version the add-on ships: both pinned add-on
versions install the inference-operator chart (2.0.0 and 2.2.2) whose ``alb`` dependency is the
aws-load-balancer-controller chart 1.13.2, i.e. controller v2.13.2; its policy is
kubernetes-sigs/aws-load-balancer-controller ``docs/install/iam_policy.json`` at tag v2.13.2,
kept byte for byte in tests/fixtures/alb-controller/ (a test compares this policy with it,
statement by statement). Each statement here carries the upstream statement's number in
``UPSTREAM``; where it is narrower, ``narrowings()`` says how and why. Nothing here is broader.

Narrower than upstream, all of it by resource scope or an added condition:
- every resource is in this account and Region;
- security group ingress may be opened or closed, and the controller's own security groups
  deleted, only on security groups of the cluster's VPC (upstream: any security group, and any
  security group another cluster's controller tagged), and security groups may be created only
  in that VPC (upstream: any VPC); config requires the VPC on an existing cluster
  (``existing_cluster.vpc_id``) whenever this role is made. CreateSecurityGroup is scoped by its
  ``vpc`` resource (``vpc/<id>`` instead of ``*``): the Service Authorization Reference lists
  no ``ec2:Vpc`` key for that action (the group does not exist yet), so a condition on it would
  refuse every create; ``ec2:Vpc`` scopes the actions on existing groups;
- listeners and rules may be created, changed or deleted only on load balancers, listeners and
  rules carrying the ``elbv2.k8s.aws/cluster`` tag, which the controller puts on all of them
  (ListenerRulesTagging, on by default in v2.13.2); listener and rule tags follow the same
  tag-on-create / no-retagging conditions upstream uses for load balancers and target groups;
- targets may be registered and deregistered only in target groups carrying that tag (the
  operator's Ingresses get target groups the controller creates; no TargetGroupBinding points
  at a target group made elsewhere);
- no WAF or Shield changes: the operator's Ingresses carry no WAF or Shield annotation, and
  without one the controller v2.13.2 only reads Shield's subscription state
  (pkg/deploy/{wafv2,wafregional,shield}: their synthesizers act only on annotated stacks).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

Conditions = Mapping[str, Any] | None
CONTROLLER_VERSION = "v2.13.2"
CLUSTER_TAG = "elbv2.k8s.aws/cluster"
REQUEST_TAG = f"aws:RequestTag/{CLUSTER_TAG}"
RESOURCE_TAG = f"aws:ResourceTag/{CLUSTER_TAG}"
TAGGED = {"Null": {RESOURCE_TAG: "false"}}
# Tags on resources the controller already tagged, never the cluster tag itself.
RETAG = {"Null": {REQUEST_TAG: "true", RESOURCE_TAG: "false"}}
NO_WAF = (
    "the operator's Ingresses carry no WAF or Shield annotation; the controller then never "
    "associates a web ACL or creates a protection"
)
NOT_OURS = "only on resources carrying the elbv2.k8s.aws/cluster tag the controller puts on them"
IN_VPC = "only on security groups of the cluster's VPC"
RESOURCE_TYPES = "the resource types these actions act on, in this account and Region"


@dataclass(frozen=True)
class Narrowing:
    """One way a statement is narrower than the upstream statement it follows."""

    sid: str
    kind: str  # "actions removed", "resources narrowed" or "condition added"
    detail: str  # the actions, or the condition ("Null aws:ResourceTag/...")
    why: str


DESCRIBE = [
    "ec2:DescribeAccountAttributes",
    "ec2:DescribeAddresses",
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeInternetGateways",
    "ec2:DescribeVpcs",
    "ec2:DescribeVpcPeeringConnections",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeInstances",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeTags",
    "ec2:GetCoipPoolUsage",
    "ec2:DescribeCoipPools",
    "ec2:GetSecurityGroupsForVpc",
    "ec2:DescribeIpamPools",
    "ec2:DescribeRouteTables",
    "elasticloadbalancing:DescribeLoadBalancers",
    "elasticloadbalancing:DescribeLoadBalancerAttributes",
    "elasticloadbalancing:DescribeListeners",
    "elasticloadbalancing:DescribeListenerCertificates",
    "elasticloadbalancing:DescribeSSLPolicies",
    "elasticloadbalancing:DescribeRules",
    "elasticloadbalancing:DescribeTargetGroups",
    "elasticloadbalancing:DescribeTargetGroupAttributes",
    "elasticloadbalancing:DescribeTargetHealth",
    "elasticloadbalancing:DescribeTags",
    "elasticloadbalancing:DescribeTrustStores",
    "elasticloadbalancing:DescribeListenerAttributes",
    "elasticloadbalancing:DescribeCapacityReservation",
]
READ_ADDONS = [
    "cognito-idp:DescribeUserPoolClient",
    "acm:ListCertificates",
    "acm:DescribeCertificate",
    "iam:ListServerCertificates",
    "iam:GetServerCertificate",
    "waf-regional:GetWebACL",
    "waf-regional:GetWebACLForResource",
    "wafv2:GetWebACL",
    "wafv2:GetWebACLForResource",
    "shield:GetSubscriptionState",
    "shield:DescribeProtection",
]
WAF_SHIELD_CHANGES = (
    "waf-regional:AssociateWebACL",
    "waf-regional:DisassociateWebACL",
    "wafv2:AssociateWebACL",
    "wafv2:DisassociateWebACL",
    "shield:CreateProtection",
    "shield:DeleteProtection",
)
MANAGE_TAGGED = [
    "elasticloadbalancing:ModifyLoadBalancerAttributes",
    "elasticloadbalancing:SetIpAddressType",
    "elasticloadbalancing:SetSecurityGroups",
    "elasticloadbalancing:SetSubnets",
    "elasticloadbalancing:DeleteLoadBalancer",
    "elasticloadbalancing:ModifyTargetGroup",
    "elasticloadbalancing:ModifyTargetGroupAttributes",
    "elasticloadbalancing:DeleteTargetGroup",
    "elasticloadbalancing:ModifyListenerAttributes",
    "elasticloadbalancing:ModifyCapacityReservation",
    "elasticloadbalancing:ModifyIpPools",
]
LISTENER_CHANGES = [
    "elasticloadbalancing:ModifyListener",
    "elasticloadbalancing:AddListenerCertificates",
    "elasticloadbalancing:RemoveListenerCertificates",
    "elasticloadbalancing:ModifyRule",
    "elasticloadbalancing:SetRulePriorities",
]

# Our statement -> the upstream statement it follows (1-based, in iam_policy.json's order).
UPSTREAM: dict[str, int] = {
    "ElbServiceLinkedRole": 1,
    "Describe": 2,
    "ReadCertificatesAndProtections": 3,
    "IngressOnVpcSecurityGroups": 4,
    "CreateSecurityGroups": 5,
    "TagNewSecurityGroups": 6,
    "RetagOwnSecurityGroups": 7,
    "ManageOwnSecurityGroups": 8,
    "CreateTaggedLoadBalancers": 9,
    "ManageListenersOfOwnLoadBalancers": 10,
    "RetagOwnLoadBalancers": 11,
    "TagNewListeners": 12,
    "RetagOwnListeners": 12,
    "ManageOwnLoadBalancers": 13,
    "TagNewLoadBalancers": 14,
    "RegisterTargetsInOwnTargetGroups": 15,
    "ChangeOwnListeners": 16,
}


def narrowings() -> list[Narrowing]:
    """Every way ``alb_controller_statements`` is narrower than upstream (the test compares)."""
    out = [
        Narrowing("ReadCertificatesAndProtections", "actions removed", a, NO_WAF)
        for a in WAF_SHIELD_CHANGES
    ]
    out += [
        Narrowing("ChangeOwnListeners", "actions removed", "elasticloadbalancing:SetWebAcl", NO_WAF)
    ]
    out += [
        Narrowing(sid, "resources narrowed", "*", RESOURCE_TYPES)
        for sid in (
            "IngressOnVpcSecurityGroups",
            "CreateSecurityGroups",
            "ManageOwnSecurityGroups",
            "CreateTaggedLoadBalancers",
            "ManageListenersOfOwnLoadBalancers",
            "ManageOwnLoadBalancers",
            "ChangeOwnListeners",
        )
    ]
    out += [
        Narrowing(sid, "condition added", f"Null {RESOURCE_TAG}", NOT_OURS)
        for sid in (
            "ManageListenersOfOwnLoadBalancers",
            "RetagOwnListeners",
            "RegisterTargetsInOwnTargetGroups",
            "ChangeOwnListeners",
        )
    ]
    out += [
        Narrowing("RetagOwnListeners", "condition added", f"Null {REQUEST_TAG}", NOT_OURS),
        Narrowing("TagNewListeners", "condition added", f"Null {REQUEST_TAG}", NOT_OURS),
        Narrowing(
            "TagNewListeners",
            "condition added",
            "StringEquals elasticloadbalancing:CreateAction",
            "tags only as part of creating a listener or rule",
        ),
    ]
    out += [
        Narrowing(sid, "condition added", "ArnEquals ec2:Vpc", IN_VPC)
        for sid in ("IngressOnVpcSecurityGroups", "ManageOwnSecurityGroups")
    ]
    return out


def alb_controller_statements(stack: Stack, vpc_id: str) -> list[iam.PolicyStatement]:
    """The controller's statements in ``stack``'s account and Region. ``vpc_id``: the cluster's
    VPC, which scopes security group creation and changes."""

    def arn(service: str, resource: str) -> str:
        # The stack's own account and Region: literals when the environment is known, which
        # keeps this long policy inside IAM's inline size limit.
        return f"arn:{stack.partition}:{service}:{stack.region}:{stack.account}:{resource}"

    elb = [
        arn("elasticloadbalancing", r)
        for r in (
            "loadbalancer/net/*/*",
            "loadbalancer/app/*/*",
            "targetgroup/*/*",
            "listener/net/*/*/*",
            "listener/app/*/*/*",
            "listener-rule/net/*/*/*",
            "listener-rule/app/*/*/*",
        )
    ]
    load_balancers, target_groups, listeners, rules = elb[0:2], elb[2:3], elb[3:5], elb[5:7]
    security_groups = [arn("ec2", "security-group/*")]
    vpc = arn("ec2", f"vpc/{vpc_id}")
    in_vpc = {"ArnEquals": {"ec2:Vpc": vpc}}
    elb_create = ["CreateTargetGroup", "CreateLoadBalancer"]

    def st(
        sid: str, actions: list[str], resources: list[str], conditions: Conditions = None
    ) -> iam.PolicyStatement:
        return iam.PolicyStatement(
            sid=sid, actions=actions, resources=resources, conditions=conditions
        )

    return [
        st(
            "ElbServiceLinkedRole",
            ["iam:CreateServiceLinkedRole"],
            ["*"],
            {"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}},
        ),
        # Describe and read calls have no resource-level permissions.
        st("Describe", DESCRIBE, ["*"]),
        st("ReadCertificatesAndProtections", READ_ADDONS, ["*"]),
        # The node security groups are not the controller's, but receive its ingress rules.
        st(
            "IngressOnVpcSecurityGroups",
            ["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"],
            security_groups,
            in_vpc,
        ),
        # The new group has no ec2:Vpc key yet: the VPC is the action's resource.
        st("CreateSecurityGroups", ["ec2:CreateSecurityGroup"], [*security_groups, vpc]),
        st(
            "TagNewSecurityGroups",
            ["ec2:CreateTags"],
            security_groups,
            {
                "StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"},
                "Null": {REQUEST_TAG: "false"},
            },
        ),
        st("RetagOwnSecurityGroups", ["ec2:CreateTags", "ec2:DeleteTags"], security_groups, RETAG),
        st(
            "ManageOwnSecurityGroups",
            [
                "ec2:AuthorizeSecurityGroupIngress",
                "ec2:RevokeSecurityGroupIngress",
                "ec2:DeleteSecurityGroup",
            ],
            security_groups,
            {**TAGGED, **in_vpc},
        ),
        st(
            "CreateTaggedLoadBalancers",
            ["elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"],
            [*load_balancers, *target_groups],
            {"Null": {REQUEST_TAG: "false"}},
        ),
        st(
            "ManageListenersOfOwnLoadBalancers",
            [
                "elasticloadbalancing:CreateListener",
                "elasticloadbalancing:DeleteListener",
                "elasticloadbalancing:CreateRule",
                "elasticloadbalancing:DeleteRule",
            ],
            [*load_balancers, *listeners, *rules],
            TAGGED,
        ),
        st(
            "RetagOwnLoadBalancers",
            ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            [*target_groups, *load_balancers],
            RETAG,
        ),
        st(
            "TagNewListeners",
            ["elasticloadbalancing:AddTags"],
            [*listeners, *rules],
            {
                "StringEquals": {
                    "elasticloadbalancing:CreateAction": ["CreateListener", "CreateRule"]
                },
                "Null": {REQUEST_TAG: "false"},
            },
        ),
        st(
            "RetagOwnListeners",
            ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            [*listeners, *rules],
            RETAG,
        ),
        st(
            "ManageOwnLoadBalancers",
            MANAGE_TAGGED,
            [*load_balancers, *target_groups, *listeners],
            TAGGED,
        ),
        st(
            "TagNewLoadBalancers",
            ["elasticloadbalancing:AddTags"],
            [*target_groups, *load_balancers],
            {
                "StringEquals": {"elasticloadbalancing:CreateAction": elb_create},
                "Null": {REQUEST_TAG: "false"},
            },
        ),
        st(
            "RegisterTargetsInOwnTargetGroups",
            ["elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets"],
            target_groups,
            TAGGED,
        ),
        st("ChangeOwnListeners", LISTENER_CHANGES, [*listeners, *rules], TAGGED),
    ]
