"""Permissions of the AWS Load Balancer Controller that the inference add-on installs.

Written from what the controller does (kubernetes-sigs/aws-load-balancer-controller, "IAM
permissions" in its install docs): read the network and certificates, create load balancers,
target groups and security groups tagged ``elbv2.k8s.aws/cluster``, and change or delete only
resources carrying that tag. Describe calls have no resource-level permissions.
"""

from __future__ import annotations

from aws_cdk import Aws
from aws_cdk import aws_iam as iam

CLUSTER_TAG = "elbv2.k8s.aws/cluster"
_ACCOUNT = "arn:<AWS::Partition>:{svc}:<AWS::Region>:<AWS::AccountId>:{res}"
# The wildcard resources below as cdk-nag prints them (acknowledged in inference_operator.py).
ALB_WILDCARD_FINDINGS: tuple[str, ...] = (
    "*",
    _ACCOUNT.format(svc="ec2", res="security-group/*"),
    _ACCOUNT.format(svc="ec2", res="vpc/*"),
    *(
        _ACCOUNT.format(svc="elasticloadbalancing", res=res)
        for res in (
            "listener-rule/app/*/*/*",
            "listener-rule/net/*/*/*",
            "listener/app/*/*/*",
            "listener/net/*/*/*",
            "loadbalancer/app/*/*",
            "loadbalancer/net/*/*",
            "targetgroup/*/*",
        )
    ),
)


def _elb(resource: str) -> str:
    return f"arn:{Aws.PARTITION}:elasticloadbalancing:{Aws.REGION}:{Aws.ACCOUNT_ID}:{resource}"


def _ec2(resource: str) -> str:
    return f"arn:{Aws.PARTITION}:ec2:{Aws.REGION}:{Aws.ACCOUNT_ID}:{resource}"


def alb_controller_statements() -> list[iam.PolicyStatement]:
    tagged_by_controller = {"Null": {f"aws:ResourceTag/{CLUSTER_TAG}": "false"}}
    load_balancers = [_elb("loadbalancer/app/*/*"), _elb("loadbalancer/net/*/*")]
    target_groups = [_elb("targetgroup/*/*")]
    listeners = [
        _elb("listener/app/*/*/*"),
        _elb("listener/net/*/*/*"),
        _elb("listener-rule/app/*/*/*"),
        _elb("listener-rule/net/*/*/*"),
    ]
    return [
        iam.PolicyStatement(
            sid="ElbServiceLinkedRole",
            actions=["iam:CreateServiceLinkedRole"],
            resources=["*"],
            conditions={
                "StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}
            },
        ),
        iam.PolicyStatement(
            sid="Discover",
            actions=[
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
                "ec2:DescribeRouteTables",
                "ec2:GetSecurityGroupsForVpc",
                "ec2:DescribeCoipPools",
                "ec2:GetCoipPoolUsage",
                "ec2:DescribeIpamPools",
                "elasticloadbalancing:DescribeLoadBalancers",
                "elasticloadbalancing:DescribeLoadBalancerAttributes",
                "elasticloadbalancing:DescribeListeners",
                "elasticloadbalancing:DescribeListenerAttributes",
                "elasticloadbalancing:DescribeListenerCertificates",
                "elasticloadbalancing:DescribeSSLPolicies",
                "elasticloadbalancing:DescribeRules",
                "elasticloadbalancing:DescribeTargetGroups",
                "elasticloadbalancing:DescribeTargetGroupAttributes",
                "elasticloadbalancing:DescribeTargetHealth",
                "elasticloadbalancing:DescribeTags",
                "elasticloadbalancing:DescribeTrustStores",
                "elasticloadbalancing:DescribeCapacityReservation",
                "acm:ListCertificates",
                "acm:DescribeCertificate",
                "iam:ListServerCertificates",
                "iam:GetServerCertificate",
                "cognito-idp:DescribeUserPoolClient",
                "wafv2:GetWebACL",
                "wafv2:GetWebACLForResource",
                "shield:GetSubscriptionState",
            ],
            resources=["*"],
        ),
        iam.PolicyStatement(
            sid="CreateSecurityGroups",
            actions=["ec2:CreateSecurityGroup"],
            resources=[_ec2("security-group/*"), _ec2("vpc/*")],
        ),
        iam.PolicyStatement(
            sid="TagNewSecurityGroups",
            actions=["ec2:CreateTags"],
            resources=[_ec2("security-group/*")],
            conditions={"StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"}},
        ),
        iam.PolicyStatement(
            sid="ManageOwnSecurityGroups",
            actions=[
                "ec2:CreateTags",
                "ec2:DeleteTags",
                "ec2:AuthorizeSecurityGroupIngress",
                "ec2:RevokeSecurityGroupIngress",
                "ec2:DeleteSecurityGroup",
            ],
            resources=[_ec2("security-group/*")],
            conditions=tagged_by_controller,
        ),
        iam.PolicyStatement(
            # Node security groups are not tagged by the controller but get its ingress rules.
            sid="OpenNodeSecurityGroups",
            actions=["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"],
            resources=[_ec2("security-group/*")],
        ),
        iam.PolicyStatement(
            sid="CreateTaggedLoadBalancers",
            actions=[
                "elasticloadbalancing:CreateLoadBalancer",
                "elasticloadbalancing:CreateTargetGroup",
            ],
            resources=load_balancers + target_groups,
            conditions={"Null": {f"aws:RequestTag/{CLUSTER_TAG}": "false"}},
        ),
        iam.PolicyStatement(
            sid="TagOnCreate",
            actions=["elasticloadbalancing:AddTags"],
            resources=load_balancers + target_groups,
            conditions={
                "StringEquals": {
                    "elasticloadbalancing:CreateAction": ["CreateTargetGroup", "CreateLoadBalancer"]
                }
            },
        ),
        iam.PolicyStatement(
            sid="ManageOwnLoadBalancers",
            actions=[
                "elasticloadbalancing:AddTags",
                "elasticloadbalancing:RemoveTags",
                "elasticloadbalancing:ModifyLoadBalancerAttributes",
                "elasticloadbalancing:SetIpAddressType",
                "elasticloadbalancing:SetSecurityGroups",
                "elasticloadbalancing:SetSubnets",
                "elasticloadbalancing:DeleteLoadBalancer",
                "elasticloadbalancing:ModifyTargetGroup",
                "elasticloadbalancing:ModifyTargetGroupAttributes",
                "elasticloadbalancing:DeleteTargetGroup",
            ],
            resources=load_balancers + target_groups,
            conditions=tagged_by_controller,
        ),
        iam.PolicyStatement(
            sid="RegisterTargets",
            actions=[
                "elasticloadbalancing:RegisterTargets",
                "elasticloadbalancing:DeregisterTargets",
            ],
            resources=target_groups,
        ),
        iam.PolicyStatement(
            sid="ManageListenersAndRules",
            actions=[
                "elasticloadbalancing:CreateListener",
                "elasticloadbalancing:DeleteListener",
                "elasticloadbalancing:CreateRule",
                "elasticloadbalancing:DeleteRule",
                "elasticloadbalancing:ModifyListener",
                "elasticloadbalancing:ModifyListenerAttributes",
                "elasticloadbalancing:AddListenerCertificates",
                "elasticloadbalancing:RemoveListenerCertificates",
                "elasticloadbalancing:ModifyRule",
                "elasticloadbalancing:SetRulePriorities",
                "elasticloadbalancing:SetWebAcl",
                "elasticloadbalancing:AddTags",
                "elasticloadbalancing:RemoveTags",
            ],
            resources=load_balancers + listeners,
        ),
    ]
