"""The NetworkPolicy double answers as Kubernetes' ingress semantics do where a policy could
use them, and refuses what it does not evaluate (a named port, an unknown selector operator),
so no test passes on a policy it misreads.

Double under test: ``tests.doubles.network_policy.allowed``, on crafted policies."""

from __future__ import annotations

from typing import Any

import pytest

from tests.doubles.network_policy import Unmodelled, allowed

Obj = dict[str, Any]
NS = "curvine"
TARGET = {"app": "master", "tier": "meta"}
CLIENT = {"app": "client"}


def policy(spec: Obj) -> Obj:
    return {"kind": "NetworkPolicy", "metadata": {"name": "p", "namespace": NS}, "spec": spec}


def ingress(*rules: Obj, selector: Obj | None = None, **spec: Any) -> list[Obj]:
    return [policy({"podSelector": selector or {}, "ingress": list(rules), **spec})]


def may(objs: list[Obj], port: int = 8995, src: dict[str, str] = CLIENT, **kw: Any) -> bool:
    return allowed(objs, TARGET, port, kw.pop("ns", NS), kw.pop("ns_labels", {}), src, **kw)


def test_match_expressions_select_the_pods_a_policy_isolates() -> None:
    """A policy selecting other Pods by expression leaves this one open; one selecting it
    isolates it."""
    deny = [{"key": "app", "operator": "NotIn", "values": ["master"]}]
    assert may([policy({"podSelector": {"matchExpressions": deny}, "policyTypes": ["Ingress"]})])
    mine = [
        {"key": "tier", "operator": "In", "values": ["meta"]},
        {"key": "app", "operator": "Exists"},
    ]
    assert not may(
        [policy({"podSelector": {"matchExpressions": mine}, "policyTypes": ["Ingress"]})]
    )


def test_a_peer_selects_by_expression_too() -> None:
    peer = {
        "podSelector": {
            "matchExpressions": [{"key": "app", "operator": "In", "values": ["client"]}]
        }
    }
    objs = ingress({"from": [peer]})
    assert may(objs) and not may(objs, src={"app": "other"})
    gone = {"podSelector": {"matchExpressions": [{"key": "canary", "operator": "DoesNotExist"}]}}
    assert not may(ingress({"from": [gone]}), src={"canary": "1"})


def test_a_rule_without_from_admits_every_source() -> None:
    objs = ingress({"ports": [{"port": 8995}]})
    assert may(objs, ns="elsewhere") and may(objs, src_ip="192.0.2.1")
    assert not may(objs, port=8996)


def test_an_egress_only_policy_does_not_isolate_ingress() -> None:
    assert may([policy({"podSelector": {}, "policyTypes": ["Egress"], "egress": []})])
    assert not may([policy({"podSelector": {}})])  # policyTypes left out: Ingress


def test_ports_match_by_protocol_and_range() -> None:
    objs = ingress({"ports": [{"port": 9000, "endPort": 9003}, {"port": 8995, "protocol": "UDP"}]})
    assert may(objs, port=9002) and not may(objs, port=9004) and not may(objs, port=8995)
    assert may(ingress({"ports": [{"protocol": "TCP"}]}), port=1234)


def test_an_ip_block_admits_its_range_less_its_exceptions() -> None:
    block = {"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.1.0/24"]}}
    objs = ingress({"from": [block]})
    assert may(objs, src_ip="10.0.2.7")
    assert not may(objs, src_ip="10.0.1.7")
    assert not may(objs)  # a Pod's labels never match an ipBlock


@pytest.mark.parametrize(
    ("objs", "feature"),
    [
        (ingress({"ports": [{"port": "rpc"}]}), "named port"),
        (
            ingress(
                {
                    "from": [
                        {
                            "podSelector": {
                                "matchExpressions": [
                                    {"key": "a", "operator": "Gt", "values": ["1"]}
                                ]
                            }
                        }
                    ]
                }
            ),
            "operator",
        ),
        (ingress({"from": [{"serviceAccountSelector": {}}]}), "peer fields"),
    ],
    ids=["named-port", "operator", "peer-field"],
)
def test_what_it_does_not_evaluate_is_refused(objs: list[Obj], feature: str) -> None:
    with pytest.raises(Unmodelled, match=feature):
        may(objs)
