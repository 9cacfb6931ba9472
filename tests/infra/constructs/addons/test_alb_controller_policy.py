"""The AWS Load Balancer Controller's role against the controller's own policy (upstream, kept in
tests/fixtures/alb-controller/), statement by statement, and what IAM would let it do.

The role's policy is read from the synthesized templates (dev: a VPC this app creates; existing:
the VPC ``existing_cluster.vpc_id`` names, which config requires with this role). IAM's
evaluation is modelled by tests/doubles/iam_eval.py (Allow statements and the condition operators
these policies use): no AWS API can evaluate a policy offline, and IAM's policy simulator needs an
account.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from infra.constructs.addons.alb_controller_policy import (
    CLUSTER_TAG,
    UPSTREAM,
    Narrowing,
    narrowings,
)
from tests.doubles.iam_eval import Request, allows, covers, policy_statements
from tests.support.synth import Synth

UPSTREAM_FILE = Path(__file__).parents[3] / "fixtures" / "alb-controller" / "iam_policy.json"
UPSTREAM_SHA256 = "16f232c9d9f79366fe949c4550ad517a202380058a9e48d45a4e215044a20a6a"
VPC = "vpc-0cluster"
ELB = "arn:aws:elasticloadbalancing:us-west-2:111122223333"
EC2 = "arn:aws:ec2:us-west-2:111122223333"
VPC_ARN = f"{EC2}:vpc/{VPC}"
TAG_VALUE = "hyperpod-kvcache-dev"


def _listed(value: Any) -> list[str]:
    return value if isinstance(value, list) else [value]


def alb_statements(synth: Synth) -> list[dict[str, Any]]:
    """The ALB controller role's statements, intrinsics replaced by this environment's values
    (the VPC's export by ``VPC``)."""
    pseudo = {
        "AWS::Partition": "aws",
        "AWS::Region": synth.config.region,
        "AWS::AccountId": synth.config.account,
    }
    return policy_statements(
        synth.template_json("addons"), "ManageOwnLoadBalancers", pseudo, {"Vpc": VPC}
    )


def _general(resource: str) -> str:
    """Account and Region made wildcards, as upstream writes them."""
    return resource.replace(":us-west-2:111122223333:", ":*:*:")


def _conditions(statement: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (op, key, json.dumps(sorted(_listed(v))))
        for op, block in statement.get("Condition", {}).items()
        for key, v in block.items()
    }


def differences(ours: list[dict[str, Any]], upstream: list[dict[str, Any]]) -> set[tuple[str, ...]]:
    """(sid, kind, detail) of every way our statements differ from the upstream statement each
    follows; a broader grant is a ("sid", "BROADER", what) entry, which nothing may declare."""
    out: set[tuple[str, ...]] = set()
    for s in ours:
        sid = s["Sid"]
        up = upstream[UPSTREAM[sid] - 1]
        for action in set(_listed(s["Action"])) - set(_listed(up["Action"])):
            out.add((sid, "BROADER", f"action {action}"))
        theirs = _listed(up["Resource"])
        mine = sorted({_general(r) for r in _listed(s["Resource"])})
        for r in _listed(s["Resource"]):
            if not any(covers(t, r) for t in theirs):
                out.add((sid, "BROADER", f"resource {r}"))
        if mine != sorted(theirs):
            out.add((sid, "resources narrowed", ",".join(sorted(theirs))))
        for op, key, values in _conditions(up) - _conditions(s):
            out.add((sid, "BROADER", f"condition {op} {key} {values} dropped"))
        for op, key, _ in _conditions(s) - _conditions(up):
            out.add((sid, "condition added", f"{op} {key}"))
    for number, up in enumerate(upstream, start=1):
        followers = [s for s in ours if UPSTREAM[s["Sid"]] == number]
        if not followers:
            out.add((f"upstream statement {number}", "statement removed", ""))
            continue
        granted = {a for s in followers for a in _listed(s["Action"])}
        for action in set(_listed(up["Action"])) - granted:
            out.add((followers[0]["Sid"], "actions removed", action))
    return out


def declared() -> set[tuple[str, ...]]:
    return {(n.sid, n.kind, n.detail) for n in narrowings()}


def test_upstream_policy_is_the_pinned_controllers_file() -> None:
    assert hashlib.sha256(UPSTREAM_FILE.read_bytes()).hexdigest() == UPSTREAM_SHA256


@pytest.mark.parametrize("env", ["dev", "existing"])
def test_alb_controller_policy_differs_from_upstream_only_where_it_says_it_narrows(
    env: str, request: pytest.FixtureRequest
) -> None:
    ours = alb_statements(request.getfixturevalue(env))
    upstream = json.loads(UPSTREAM_FILE.read_text())["Statement"]
    got = differences(ours, upstream)
    want = declared()
    assert not [d for d in got if d[1] == "BROADER"], sorted(got)
    assert got == want, (
        f"undeclared: {sorted(got - want)}; declared but not there: {sorted(want - got)}"
    )
    assert all(isinstance(n, Narrowing) and n.why for n in narrowings())


@pytest.fixture(scope="module")
def dev_alb(dev: Synth) -> list[dict[str, Any]]:
    return alb_statements(dev)


OWN = {f"aws:ResourceTag/{CLUSTER_TAG}": TAG_VALUE}


@pytest.mark.parametrize(
    ("action", "resource", "context"),
    [
        (
            "ec2:AuthorizeSecurityGroupIngress",
            f"{EC2}:security-group/sg-0node",
            {"ec2:Vpc": VPC_ARN},
        ),
        ("ec2:CreateSecurityGroup", VPC_ARN, {}),
        ("ec2:DeleteSecurityGroup", f"{EC2}:security-group/sg-0ours", {"ec2:Vpc": VPC_ARN, **OWN}),
        (
            "elasticloadbalancing:CreateLoadBalancer",
            f"{ELB}:loadbalancer/app/k8s-x/1",
            {f"aws:RequestTag/{CLUSTER_TAG}": TAG_VALUE},
        ),
        ("elasticloadbalancing:CreateListener", f"{ELB}:loadbalancer/app/k8s-x/1", OWN),
        (
            "elasticloadbalancing:AddTags",
            f"{ELB}:listener/app/k8s-x/1/2",
            {
                "elasticloadbalancing:CreateAction": "CreateListener",
                f"aws:RequestTag/{CLUSTER_TAG}": TAG_VALUE,
            },
        ),
        ("elasticloadbalancing:DeleteListener", f"{ELB}:listener/app/k8s-x/1/2", OWN),
        ("elasticloadbalancing:ModifyRule", f"{ELB}:listener-rule/app/k8s-x/1/2/3", OWN),
        ("elasticloadbalancing:RegisterTargets", f"{ELB}:targetgroup/k8s-x/1", OWN),
        ("elasticloadbalancing:DeleteLoadBalancer", f"{ELB}:loadbalancer/app/k8s-x/1", OWN),
    ],
)
def test_alb_controller_may_manage_what_it_created(
    dev_alb: list[dict[str, Any]], action: str, resource: str, context: dict[str, str]
) -> None:
    assert allows(dev_alb, Request(action, resource, context))


@pytest.mark.parametrize(
    ("action", "resource", "context"),
    [
        # a security group of another VPC (a database's, a peered workload's)
        (
            "ec2:AuthorizeSecurityGroupIngress",
            f"{EC2}:security-group/sg-0db",
            {"ec2:Vpc": f"{EC2}:vpc/vpc-0other"},
        ),
        (
            "ec2:RevokeSecurityGroupIngress",
            f"{EC2}:security-group/sg-0db",
            {"ec2:Vpc": f"{EC2}:vpc/vpc-0other"},
        ),
        # a security group another cluster's controller made (tagged) in its own VPC
        (
            "ec2:DeleteSecurityGroup",
            f"{EC2}:security-group/sg-0theirs",
            {"ec2:Vpc": f"{EC2}:vpc/vpc-0other", **OWN},
        ),
        (
            "ec2:AuthorizeSecurityGroupIngress",
            f"{EC2}:security-group/sg-0theirs",
            {"ec2:Vpc": f"{EC2}:vpc/vpc-0other", **OWN},
        ),
        # listeners and rules of a load balancer someone else runs in the account
        ("elasticloadbalancing:DeleteListener", f"{ELB}:listener/app/payments/1/2", {}),
        ("elasticloadbalancing:ModifyListener", f"{ELB}:listener/app/payments/1/2", {}),
        ("elasticloadbalancing:CreateRule", f"{ELB}:listener/app/payments/1/2", {}),
        ("elasticloadbalancing:DeleteRule", f"{ELB}:listener-rule/app/payments/1/2/3", {}),
        # its targets
        ("elasticloadbalancing:DeregisterTargets", f"{ELB}:targetgroup/payments/1", {}),
        # adopting a foreign load balancer or listener by tagging it as the controller's
        (
            "elasticloadbalancing:AddTags",
            f"{ELB}:loadbalancer/app/payments/1",
            {f"aws:RequestTag/{CLUSTER_TAG}": TAG_VALUE},
        ),
        (
            "elasticloadbalancing:AddTags",
            f"{ELB}:listener/app/payments/1/2",
            {f"aws:RequestTag/{CLUSTER_TAG}": TAG_VALUE},
        ),
        # WAF and Shield changes
        ("wafv2:AssociateWebACL", f"{ELB}:loadbalancer/app/k8s-x/1", {}),
        ("shield:DeleteProtection", "arn:aws:shield::111122223333:protection/p", {}),
        # another Region or account
        (
            "elasticloadbalancing:DeleteLoadBalancer",
            "arn:aws:elasticloadbalancing:eu-west-1:111122223333:loadbalancer/app/k8s-x/1",
            OWN,
        ),
    ],
)
def test_alb_controller_cannot_touch_what_is_not_its_own(
    dev_alb: list[dict[str, Any]], action: str, resource: str, context: dict[str, str]
) -> None:
    assert not allows(dev_alb, Request(action, resource, context))


def _create_security_group(vpc_arn: str) -> list[Request]:
    """CreateSecurityGroup as EC2 authorizes it (the Service Authorization Reference): on the
    new group (``security-group*``: tag keys only, no ``ec2:Vpc``) and on the VPC it goes in;
    the call is allowed only when both are."""
    tags = {f"aws:RequestTag/{CLUSTER_TAG}": TAG_VALUE}
    return [
        Request("ec2:CreateSecurityGroup", f"{EC2}:security-group/*", tags),
        Request("ec2:CreateSecurityGroup", vpc_arn, {}),
    ]


@pytest.mark.parametrize("env", ["dev", "existing"])
def test_alb_controller_creates_and_changes_security_groups_only_in_the_clusters_vpc(
    env: str, request: pytest.FixtureRequest
) -> None:
    """dev: the VPC the app creates; existing: the cluster's VPC from config. Another VPC of the
    account (a database's, another cluster's) is refused, its controller's groups included."""
    s: Synth = request.getfixturevalue(env)
    statements = alb_statements(s)
    ours = (
        VPC_ARN
        if s.config.existing_cluster is None
        else f"{EC2}:vpc/{s.config.existing_cluster.vpc_id}"
    )
    other = f"{EC2}:vpc/vpc-0other"
    assert all(allows(statements, r) for r in _create_security_group(ours))
    assert not all(allows(statements, r) for r in _create_security_group(other))
    for vpc, allowed in ((ours, True), (other, False)):
        for action in ("ec2:DeleteSecurityGroup", "ec2:AuthorizeSecurityGroupIngress"):
            group = Request(action, f"{EC2}:security-group/sg-0k8s", {"ec2:Vpc": vpc, **OWN})
            assert allows(statements, group) is allowed, (action, vpc)
