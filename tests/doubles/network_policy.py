"""Kubernetes NetworkPolicy ingress, and the VPC CNI's network policy agent's view of the
kubelet's probes.

Ingress semantics (kubernetes.io/docs/concepts/services-networking/network-policies/ and the
NetworkPolicy API reference, networking.k8s.io/v1): a policy takes part in a Pod's ingress when
its ``podSelector`` selects the Pod and its ``policyTypes`` hold ``Ingress`` (left out, they
always do); a Pod selected by no such policy admits everything, a Pod selected by any admits only
what some rule of them allows. A rule without ``from`` (or with an empty one) admits every
source, one without ``ports`` every port; a port without ``protocol`` is TCP, one without
``port`` every port of its protocol, ``endPort`` makes a range. A peer is a namespace and/or Pod
selector (a Pod selector alone: the policy's namespace), or an ``ipBlock`` (``cidr`` less its
``except`` ranges) that matches addresses, never a Pod's labels. Selectors read ``matchLabels``
and ``matchExpressions`` (In, NotIn, Exists, DoesNotExist).

What this does not model is refused (``Unmodelled``) rather than guessed: a named port (it needs
the target Pod's ports), another selector operator, an unknown field of a policy, rule or peer.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from tests.doubles.label_selector import selects

Obj = dict[str, Any]
CURVINE = "curvine"
SPEC_FIELDS = {"podSelector", "policyTypes", "ingress", "egress"}
RULE_FIELDS = {"from", "ports"}
PEER_FIELDS = {"podSelector", "namespaceSelector", "ipBlock"}
PORT_FIELDS = {"port", "protocol", "endPort"}


class Unmodelled(NotImplementedError):
    """A NetworkPolicy feature this model does not evaluate."""


def _matches(selector: dict[str, Any] | None, lbls: dict[str, str]) -> bool:
    return selects(selector, lbls, Unmodelled)


def _known(obj: dict[str, Any], fields: set[str], what: str) -> dict[str, Any]:
    unknown = set(obj) - fields
    if unknown:
        raise Unmodelled(f"{what} fields {sorted(unknown)}")
    return obj


def _port_matches(rule_ports: list[Obj] | None, port: int) -> bool:
    """Does a rule's ``ports`` admit TCP ``port``?"""
    if not rule_ports:
        return True
    for rp in rule_ports:
        _known(rp, PORT_FIELDS, "NetworkPolicy port")
        if rp.get("protocol", "TCP") != "TCP":
            continue
        number = rp.get("port")
        if number is None:
            return True
        if isinstance(number, str):
            raise Unmodelled(f"named port {number!r} (the target Pod's ports are not modelled)")
        if number <= port <= rp.get("endPort", number):
            return True
    return False


def _in_block(block: Obj, src_ip: str) -> bool:
    addr = ipaddress.ip_address(src_ip)
    net = ipaddress.ip_network(block["cidr"])
    if addr.version != net.version or addr not in net:
        return False
    return not any(addr in ipaddress.ip_network(e) for e in block.get("except") or [])


def _ingress_policies(objs: list[Obj], namespace: str, target: dict[str, str]) -> list[Obj]:
    """The NetworkPolicies that decide ingress to a Pod labelled ``target`` in ``namespace``."""
    out = []
    for o in objs:
        if o["kind"] != "NetworkPolicy" or o["metadata"]["namespace"] != namespace:
            continue
        spec = _known(o["spec"], SPEC_FIELDS, "NetworkPolicy spec")
        if "Ingress" not in spec.get("policyTypes", ["Ingress"]):
            continue
        if _matches(spec["podSelector"], target):
            out.append(o)
    return out


def allowed(
    objs: list[Obj],
    target: dict[str, str],
    port: int,
    src_ns: str,
    src_ns_labels: dict[str, str],
    src_pod: dict[str, str],
    src_ip: str | None = None,
    namespace: str = CURVINE,
) -> bool:
    """May a Pod labelled ``src_pod`` in ``src_ns`` (or, with ``src_ip``, a client outside the
    Pod network at that address) open TCP ``port`` on a Pod labelled ``target`` in
    ``namespace`` (Curvine's unless named)?"""
    policies = _ingress_policies(objs, namespace, target)
    if not policies:
        return True
    for p in policies:
        for rule in p["spec"].get("ingress") or []:
            _known(rule, RULE_FIELDS, "NetworkPolicy ingress rule")
            if not _port_matches(rule.get("ports"), port):
                continue
            peers = rule.get("from") or []
            if not peers:
                return True  # no from: every source
            for peer in peers:
                _known(peer, PEER_FIELDS, "NetworkPolicy peer")
                if "ipBlock" in peer:  # matches addresses, never a Pod's labels
                    if src_ip is not None and _in_block(peer["ipBlock"], src_ip):
                        return True
                    continue
                if src_ip is not None:
                    continue
                if "namespaceSelector" in peer:
                    ns_ok = _matches(peer["namespaceSelector"], src_ns_labels)
                else:
                    ns_ok = src_ns == namespace
                if ns_ok and _matches(peer.get("podSelector"), src_pod):
                    return True
    return False


def _probe_port(container: Obj, action: Obj) -> int:
    """The container port a tcpSocket/httpGet/grpc probe connects to (a number or a name)."""
    port = action["port"]
    if isinstance(port, int):
        return port
    (number,) = [p["containerPort"] for p in container["ports"] if p.get("name") == port]
    return int(number)


def kubelet_probe_passes(
    objs: list[Obj],
    target: dict[str, str],
    container: Obj,
    probe: Obj,
    node_ip: str,
    agent_ip: str,
) -> bool:
    """Does the kubelet's ``probe`` of ``container`` (in a Curvine Pod labelled ``target``)
    reach it when the kubelet's connection leaves the node from ``node_ip``?

    An exec probe runs inside the container: its connect stays on the Pod's loopback and never
    crosses the Pod's host-side interface, where the VPC CNI's network policy agent attaches its
    filters. A tcpSocket, httpGet or grpc probe connects from the node: the agent admits one node
    address whatever the policies say, the IMDS ``local-ipv4`` it read at start
    (aws/aws-network-policy-agent, main.go and pkg/fwruleprocessor/fw_rule_processor.go, tags
    v1.2.7 to v1.4.1: a /32 of that address added to every policy's map), ``agent_ip`` here;
    any other address of the node only where a NetworkPolicy admits it."""
    if "exec" in probe:
        return True
    (kind,) = [k for k in ("tcpSocket", "httpGet", "grpc") if k in probe]
    port = _probe_port(container, probe[kind])
    return node_ip == agent_ip or allowed(objs, target, port, "", {}, {}, src_ip=node_ip)
