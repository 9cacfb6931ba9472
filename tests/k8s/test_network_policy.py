"""The Curvine namespace's NetworkPolicies, evaluated on the real rendered YAML: a small model of
Kubernetes ingress semantics (policies select Pods by label; a Pod selected by any policy admits
only what some selecting policy allows) answers who may reach which Curvine port."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from k8s.network_policy import COLLECTOR_NAMESPACE_LABELS, COLLECTOR_POD_LABELS

Obj = dict[str, Any]
CURVINE = "curvine"


def _matches(selector: dict[str, Any] | None, lbls: dict[str, str]) -> bool:
    want = (selector or {}).get("matchLabels", {})
    return all(lbls.get(k) == v for k, v in want.items())


def allowed(
    objs: list[Obj],
    target: dict[str, str],
    port: int,
    src_ns: str,
    src_ns_labels: dict[str, str],
    src_pod: dict[str, str],
    src_ip: str | None = None,
) -> bool:
    """May a Pod labelled ``src_pod`` in ``src_ns`` (or, with ``src_ip``, a client outside the
    Pod network at that address) open TCP ``port`` on a Curvine Pod labelled ``target``?"""
    policies = [o for o in objs if o["kind"] == "NetworkPolicy"
                and o["metadata"]["namespace"] == CURVINE
                and _matches(o["spec"]["podSelector"], target)]  # fmt: skip
    if not policies:
        return True
    for p in policies:
        for rule in p["spec"].get("ingress", []):
            if rule.get("ports") and not any(rp.get("port") == port for rp in rule["ports"]):
                continue
            for peer in rule.get("from", []):
                if "ipBlock" in peer:  # matches addresses, never a Pod's labels
                    net = ipaddress.IPv4Network(peer["ipBlock"]["cidr"])
                    if src_ip is not None and ipaddress.IPv4Address(src_ip) in net:
                        return True
                    continue
                if src_ip is not None:
                    continue
                if "namespaceSelector" in peer:
                    ns_ok = _matches(peer["namespaceSelector"], src_ns_labels)
                else:
                    ns_ok = src_ns == CURVINE
                if ns_ok and _matches(peer.get("podSelector"), src_pod):
                    return True
    return False


def _pod_labels(objs: list[Obj], name: str) -> dict[str, str]:
    (o,) = [o for o in objs if o["metadata"]["name"] == name and "template" in o.get("spec", {})]
    labels: dict[str, str] = o["spec"]["template"]["metadata"]["labels"]
    return labels


@pytest.fixture(params=["dev", "test", "prod"])
def objs(request: pytest.FixtureRequest, rendered_envs: dict[str, list[Obj]]) -> list[Obj]:
    return rendered_envs[request.param]


def test_curvine_namespace_denies_ingress_by_default(objs: list[Obj]) -> None:
    deny = [o for o in objs if o["kind"] == "NetworkPolicy"
            and o["metadata"]["namespace"] == CURVINE
            and o["spec"]["podSelector"] == {} and not o["spec"].get("ingress")]  # fmt: skip
    assert deny and deny[0]["spec"]["policyTypes"] == ["Ingress"]


def test_rpc_only_from_curvine_pods(objs: list[Obj]) -> None:
    master, worker = _pod_labels(objs, "curvine-master"), _pod_labels(objs, "curvine-worker")
    fuse = _pod_labels(objs, "curvine-csi-node")
    controller = _pod_labels(objs, "curvine-csi-controller")
    # Curvine's own clients reach the master and worker RPC ports.
    for src in (fuse, controller, worker, master):
        assert allowed(objs, master, 8995, CURVINE, {}, src)
    assert allowed(objs, worker, 8997, CURVINE, {}, fuse)
    # The Raft journal is between masters only.
    assert allowed(objs, master, 8996, CURVINE, {}, master)
    assert not allowed(objs, master, 8996, CURVINE, {}, fuse)
    # Nothing outside the namespace: endpoint Pods use the FUSE mount, not RPC.
    for ns in ("inference", "default", "kyverno"):
        ns_labels = {"kubernetes.io/metadata.name": ns}
        for target, port in ((master, 8995), (master, 8996), (worker, 8997)):
            assert not allowed(objs, target, port, ns, ns_labels, {"app": "vllm"})


def test_metrics_only_from_the_collector(objs: list[Obj]) -> None:
    targets = [(_pod_labels(objs, "curvine-master"), 9000),
               (_pod_labels(objs, "curvine-worker"), 9001),
               (_pod_labels(objs, "curvine-csi-node"), 9002)]  # fmt: skip
    for target, port in targets:
        assert allowed(objs, target, port, "monitoring", COLLECTOR_NAMESPACE_LABELS,
                       COLLECTOR_POD_LABELS)  # fmt: skip
        assert not allowed(objs, target, port, "monitoring", {}, COLLECTOR_POD_LABELS)
        assert not allowed(objs, target, port, CURVINE, {}, _pod_labels(objs, "curvine-master"))


def test_metrics_admit_the_managed_collector_by_address(
    rendered_envs: dict[str, list[Obj]],
) -> None:
    """The AMP managed collector scrapes from network interfaces in the VPC's subnets, not from a
    Pod: with observability on, the metrics ports (only they) admit the VPC's CIDR; the Pods'
    own addresses (the HyperPod subnet, a secondary CIDR) are not in it."""
    from infra.config import load_config

    for env, objs in rendered_envs.items():
        if env not in ("dev", "test", "prod"):
            continue
        config = load_config(env)
        inside = str(next(ipaddress.IPv4Network(config.network.primary_cidr).hosts()))
        pod_ip = str(next(ipaddress.IPv4Network(config.network.hyperpod_subnet.cidr).hosts()))
        master = _pod_labels(objs, "curvine-master")
        worker = _pod_labels(objs, "curvine-worker")
        fuse = _pod_labels(objs, "curvine-csi-node")
        on = config.observability.enabled
        for target, port in ((master, 9000), (worker, 9001), (fuse, 9002)):
            assert allowed(objs, target, port, "", {}, {}, src_ip=inside) is on, (env, port)
            assert not allowed(objs, target, port, "", {}, {}, src_ip=pod_ip), (env, port)
        for target, port in ((master, 8995), (master, 8996), (worker, 8997)):
            assert not allowed(objs, target, port, "", {}, {}, src_ip=inside), (env, port)
