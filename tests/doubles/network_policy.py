"""Kubernetes NetworkPolicy ingress, as far as the Curvine and endpoint namespaces' policies use
it, and the VPC CNI's network policy agent's view of the kubelet's probes.

Ingress semantics (kubernetes.io/docs/concepts/services-networking/network-policies/): policies
select Pods by label; a Pod selected by no policy admits everything, a Pod selected by any admits
only what some selecting policy allows. A peer is a namespace and Pod selector, or an ipBlock
that matches addresses, never a Pod's labels.
"""

from __future__ import annotations

import ipaddress
from typing import Any

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
    namespace: str = CURVINE,
) -> bool:
    """May a Pod labelled ``src_pod`` in ``src_ns`` (or, with ``src_ip``, a client outside the
    Pod network at that address) open TCP ``port`` on a Pod labelled ``target`` in
    ``namespace`` (Curvine's unless named)?"""
    policies = [
        o
        for o in objs
        if o["kind"] == "NetworkPolicy"
        and o["metadata"]["namespace"] == namespace
        and _matches(o["spec"]["podSelector"], target)
    ]
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
