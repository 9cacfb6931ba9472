"""The Curvine namespace's NetworkPolicies, evaluated on the real rendered YAML: a small model of
Kubernetes ingress semantics (tests/doubles/network_policy.py: policies select Pods by label; a
Pod selected by any policy admits only what some selecting policy allows) answers who may reach
which Curvine port."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import pytest

from infra.config import load_config, parse_config
from k8s.admission import NAME_LABEL
from k8s.app import build_charts
from k8s.network_policy import (
    COLLECTOR_NAMESPACE_LABELS,
    COLLECTOR_POD_LABELS,
    collector_cidrs,
)
from tests.doubles.network_policy import CURVINE, allowed, kubelet_probe_passes
from tests.support.config import (
    MANAGED_NAMESPACE,
    TIERS_VARIANT,
    env_raw,
    existing_cluster,
    existing_cluster_config,
    use_existing_cluster,
)

Obj = dict[str, Any]
# Where the add-on runs the inference operator (its chart's shortPrefix plus -system).
OPERATOR = "hyperpod-inference-system"


def _pod_labels(objs: list[Obj], name: str) -> dict[str, str]:
    (o,) = [o for o in objs if o["metadata"]["name"] == name and "template" in o.get("spec", {})]
    labels: dict[str, str] = o["spec"]["template"]["metadata"]["labels"]
    return labels


@pytest.fixture(params=["dev", "test", "prod"])
def objs(request: pytest.FixtureRequest, rendered_envs: dict[str, list[Obj]]) -> list[Obj]:
    return rendered_envs[request.param]


def test_curvine_namespace_denies_ingress_by_default(objs: list[Obj]) -> None:
    deny = [
        o
        for o in objs
        if o["kind"] == "NetworkPolicy"
        and o["metadata"]["namespace"] == CURVINE
        and o["spec"]["podSelector"] == {}
        and not o["spec"].get("ingress")
    ]
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
    targets = [
        (_pod_labels(objs, "curvine-master"), 9000),
        (_pod_labels(objs, "curvine-worker"), 9001),
        (_pod_labels(objs, "curvine-csi-node"), 9002),
    ]
    for target, port in targets:
        assert allowed(
            objs, target, port, "monitoring", COLLECTOR_NAMESPACE_LABELS, COLLECTOR_POD_LABELS
        )
        assert not allowed(objs, target, port, "monitoring", {}, COLLECTOR_POD_LABELS)
        # Another Pod of the collector's namespace is not the collector.
        assert not allowed(
            objs, target, port, "monitoring", COLLECTOR_NAMESPACE_LABELS, {"app": "grafana"}
        )
        assert not allowed(objs, target, port, CURVINE, {}, _pod_labels(objs, "curvine-master"))


def test_metrics_admit_the_managed_collector_by_address(
    rendered_envs: dict[str, list[Obj]],
) -> None:
    """The AMP managed collector scrapes from network interfaces in the VPC's subnets, not from a
    Pod: with observability on, the metrics ports (only they) admit the VPC's CIDR; the Pods'
    own addresses (the HyperPod subnet, a secondary CIDR) are not in it."""

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


PROBES = ("startupProbe", "readinessProbe", "livenessProbe")


def _curvine_probed(objs: list[Obj]) -> list[tuple[str, dict[str, str], Obj]]:
    """(name, Pod labels, container) of every probed container in the Curvine namespace."""
    out = []
    for o in objs:
        if o["metadata"].get("namespace") != CURVINE or "template" not in o.get("spec", {}):
            continue
        template = o["spec"]["template"]
        for c in template["spec"]["containers"]:
            if any(k in c for k in PROBES):
                out.append(
                    (f"{o['metadata']['name']}/{c['name']}", template["metadata"]["labels"], c)
                )
    return out


def test_kubelet_probes_reach_curvine_from_any_node_address(
    rendered_envs: dict[str, list[Obj]],
) -> None:
    """HyperPod nodes carry several network interfaces, and the kubelet's probe leaves from
    whichever address the node's routing picks, not necessarily the one the network policy agent
    admits: every probe of a Curvine container passes under the default-deny from a node
    address on a secondary interface in the HyperPod subnet. Admitting that subnet on the probed
    ports is not how: the Pods of the whole cluster take their addresses from it, and none may
    reach Curvine's RPC."""

    for env in ("dev", "test", "prod"):
        objs, config = rendered_envs[env], load_config(env)
        subnet = list(ipaddress.IPv4Network(config.network.hyperpod_subnet.cidr).hosts())
        agent_ip, secondary, some_pod = str(subnet[9]), str(subnet[200]), str(subnet[4000])
        probed = _curvine_probed(objs)
        assert {name for name, _, _ in probed} >= {
            "curvine-master/master",
            "curvine-worker/worker",
        }, env
        for name, target, c in probed:
            for kind in (k for k in PROBES if k in c):
                assert kubelet_probe_passes(objs, target, c, c[kind], secondary, agent_ip), (
                    f"{env}: {name} {kind} from node address {secondary} is dropped"
                )
        master, worker = _pod_labels(objs, "curvine-master"), _pod_labels(objs, "curvine-worker")
        for target, port in ((master, 8995), (master, 8996), (worker, 8997)):
            assert not allowed(objs, target, port, "", {}, {}, src_ip=some_pod), (env, port)


def test_the_probe_model_drops_a_tcp_probe_from_a_second_node_address(
    rendered: list[Obj],
) -> None:
    """The model is not vacuous: a tcpSocket probe of the master's RPC port passes from the
    agent's address and is dropped from any other node address."""
    master = _pod_labels(rendered, "curvine-master")
    c = {"name": "master", "ports": [{"name": "rpc", "containerPort": 8995}]}
    probe = {"tcpSocket": {"port": "rpc"}}
    assert kubelet_probe_passes(rendered, master, c, probe, "10.1.0.10", "10.1.0.10")
    assert not kubelet_probe_passes(rendered, master, c, probe, "10.1.0.201", "10.1.0.10")


PORTS = (8995, 8996, 8997, 9000, 9001, 9002)


def test_each_curvine_pod_admits_exactly_its_own_ports(objs: list[Obj]) -> None:
    """The whole matrix: which port of which Pod a Curvine Pod (and the collector) may open. A
    policy that selected the wrong Pods would open one Pod's ports on another."""
    master, worker = _pod_labels(objs, "curvine-master"), _pod_labels(objs, "curvine-worker")
    fuse = _pod_labels(objs, "curvine-csi-node")
    expected_from_master = {"master": {8995, 8996}, "worker": {8997}, "fuse": set()}
    expected_from_collector = {"master": {9000}, "worker": {9001}, "fuse": {9002}}
    for name, target in (("master", master), ("worker", worker), ("fuse", fuse)):
        from_master = {p for p in PORTS if allowed(objs, target, p, CURVINE, {}, master)}
        assert from_master == expected_from_master[name], name
        from_collector = {
            p
            for p in PORTS
            if allowed(objs, target, p, "m", COLLECTOR_NAMESPACE_LABELS, COLLECTOR_POD_LABELS)
        }
        assert from_collector == expected_from_collector[name], name


def test_the_policies_as_kubectl_lists_them(objs: list[Obj]) -> None:
    """Names are what `kubectl get networkpolicy` shows and what a re-apply replaces (a renamed
    policy would be a second one); every peer names a selector (the API refuses an empty peer),
    every port is TCP."""
    policies = {
        o["metadata"]["name"]: o
        for o in objs
        if o["kind"] == "NetworkPolicy" and o["metadata"]["namespace"] == CURVINE
    }
    assert set(policies) == {
        "curvine-default-deny-ingress",
        "curvine-master-ingress",
        "curvine-worker-ingress",
        "curvine-fuse-metrics-ingress",
    }
    selects = {
        "curvine-default-deny-ingress": {},
        "curvine-master-ingress": _pod_labels(objs, "curvine-master"),
        "curvine-worker-ingress": _pod_labels(objs, "curvine-worker"),
        "curvine-fuse-metrics-ingress": _pod_labels(objs, "curvine-csi-node"),
    }
    for name, o in policies.items():
        assert o["metadata"]["labels"]["app.kubernetes.io/component"] == "network-policy"
        match = o["spec"]["podSelector"].get("matchLabels", {})
        assert match.items() <= selects[name].items() and (match or name.endswith("deny-ingress"))
        for rule in o["spec"].get("ingress", []):
            for peer in rule["from"]:
                assert set(peer) & {"podSelector", "namespaceSelector", "ipBlock"}, (name, peer)
                if "namespaceSelector" in peer:
                    assert peer["podSelector"] == {"matchLabels": COLLECTOR_POD_LABELS}
            assert all(p.get("protocol", "TCP") == "TCP" for p in rule["ports"]), name
    rpc = policies["curvine-master-ingress"]["spec"]["ingress"][0]
    assert rpc["from"] == [{"podSelector": {}}]  # every Pod of the namespace, only it


def test_an_existing_cluster_admits_the_collector_from_its_subnets() -> None:

    raw = env_raw()
    raw["observability"] = {
        **raw.get("observability", {}),
        "enabled": True,
        "scraper_subnet_ids": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
        "scraper_security_group_ids": ["sg-0123456789abcdef0"],
        "scraper_source_cidrs": ["10.1.0.0/24", "10.1.1.0/24"],
    }
    use_existing_cluster(raw, existing_cluster())
    assert collector_cidrs(parse_config(raw, "x", "dev")) == ["10.1.0.0/24", "10.1.1.0/24"]


ENDPOINT_NS = "inference"
ENDPOINT_POD = {"app": "qwen3-8b"}  # the operator's Pod labels (tests/k8s/fixtures)


def _endpoint_allowed(objs: list[Obj], port: int, **src: Any) -> bool:
    return allowed(
        objs,
        ENDPOINT_POD,
        port,
        src.get("ns", ""),
        {NAME_LABEL: src["ns"], **src.get("ns_labels", {})} if "ns" in src else {},
        src.get("pod", {}),
        src_ip=src.get("ip"),
        namespace=ENDPOINT_NS,
    )


@pytest.mark.parametrize("env", ["dev", "test", "prod"])
def test_endpoint_pods_take_the_router_the_operator_the_alb_and_the_collector(
    rendered_envs: dict[str, list[Obj]], env: str
) -> None:
    """The router and the endpoint's other Pods (its namespace), the operator's controller (its
    namespace), the ALB's targets and the AMP collector (VPC addresses) and the kubelet's probes
    from any HyperPod node address reach the endpoint Pods, on any port: the load balancer's
    target port (the reverse-proxy sidecar) is not published by the operator."""
    objs, config = rendered_envs[env], load_config(env)
    endpoint = next(e for e in config.kvcache.endpoints if e.namespace == ENDPOINT_NS)
    vpc = str(next(ipaddress.IPv4Network(config.network.primary_cidr).hosts()))
    node_secondary = str(list(ipaddress.IPv4Network(config.network.hyperpod_subnet.cidr))[200])
    for port in (endpoint.container_port, endpoint.metrics_port, 8080):
        assert _endpoint_allowed(objs, port, ns=ENDPOINT_NS, pod={"app": "router"})
        assert _endpoint_allowed(objs, port, ns=OPERATOR, pod={"control-plane": "x"})
        assert _endpoint_allowed(
            objs,
            port,
            ns="monitoring",
            ns_labels=COLLECTOR_NAMESPACE_LABELS,
            pod=COLLECTOR_POD_LABELS,
        )
        assert _endpoint_allowed(objs, port, ip=vpc)
        assert _endpoint_allowed(objs, port, ip=node_secondary)


@pytest.mark.parametrize("env", ["dev", "test", "prod"])
def test_endpoint_pods_refuse_other_namespaces_and_addresses_outside_the_vpc(
    rendered_envs: dict[str, list[Obj]], env: str
) -> None:
    objs, config = rendered_envs[env], load_config(env)
    port = config.kvcache.endpoints[0].container_port
    for ns in ("default", CURVINE, "kyverno"):
        assert not _endpoint_allowed(objs, port, ns=ns, pod={"app": "anything"}), ns
    for outside in ("192.168.10.5", "172.31.0.9", "203.0.113.7"):
        assert not _endpoint_allowed(objs, port, ip=outside), outside


def test_an_existing_cluster_gets_no_endpoint_policy(tmp_path: Path) -> None:
    """Its nodes' and load balancers' networks are not in the config: a policy built on the
    config's CIDRs could cut the kubelet's probes and the load balancer off."""
    config = existing_cluster_config()
    objs = [o for c in build_charts(config).ordered for o in c[1].to_json()]
    assert not [
        o
        for o in objs
        if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "endpoint-ingress"
    ]


def test_a_namespace_of_managed_tier_endpoints_is_fenced_too(
    rendered_envs: dict[str, list[Obj]],
) -> None:
    """Endpoints on tieredstorage or none only: the same ingress fence as the others."""
    objs = rendered_envs[TIERS_VARIANT]
    target = {"app": "qwen3-8b-ts"}

    def reaches(**src: Any) -> bool:
        ns = src.get("ns", "")
        return allowed(
            objs,
            target,
            8000,
            ns,
            {NAME_LABEL: ns} if ns else {},
            src.get("pod", {}),
            src_ip=src.get("ip"),
            namespace=MANAGED_NAMESPACE,
        )

    assert reaches(ns=MANAGED_NAMESPACE, pod={"app": "router"})
    assert reaches(ns=OPERATOR, pod={"control-plane": "x"})
    assert not reaches(ns="default", pod={"app": "anything"})
    assert not reaches(ip="203.0.113.7")
