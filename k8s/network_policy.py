"""NetworkPolicies of the Curvine namespace: deny all ingress, then admit Curvine's RPC from
Curvine's own Pods and its metrics from the collector. The endpoint namespaces' policy is at the
end (``endpoint_network_policies``).

Who talks to Curvine, from what we render: masters to masters (journal), workers to masters,
the CSI controller to masters (``curvine-cli fs mkdir``), and the CSI node plugin, whose embedded
FUSE client reads and writes through masters and workers. All of these run in the Curvine
namespace on the Pod network (none uses hostNetwork). The inference Pods and the evictor in the
endpoint namespaces reach the cache only through the FUSE mount that the node plugin serves on
their node, so no packet from an endpoint namespace is addressed to Curvine: those namespaces
are not admitted. If a client ever connects directly (a native Curvine connector in vLLM), add
its namespace to ``rpc_peers`` below.

No node address is admitted. The kubelet's probes of master and worker run inside their
containers (k8s/curvine.py), so they never cross the Pod's interface where the VPC CNI's network
policy agent filters; the agent admits only the one node address it read from IMDS, and HyperPod
nodes carry several. Admitting the HyperPod subnet for node traffic would admit every Pod of the
cluster too: the VPC CNI gives Pods addresses from the same subnet.

Enforcement needs a network policy engine (on EKS: the VPC CNI with network policy enabled).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import cdk8s
from constructs import Construct

from infra.config import AppConfig
from infra.config.operator_versions import OPERATOR_NAMESPACE
from k8s.admission import NAME_LABEL
from k8s.common import k8s_for, meta
from k8s.csi import NODE_WL
from k8s.curvine import (
    JOURNAL_PORT,
    MASTER_WEB_PORT,
    MASTER_WL,
    RPC_PORT,
    WORKER_RPC_PORT,
    WORKER_WEB_PORT,
    WORKER_WL,
    fuse_web_port,
)
from k8s.kube_api import KubeApi
from k8s.names import Workload, labels

if TYPE_CHECKING:
    from k8s.kube_api import kube

# The metrics collector that may scrape Curvine: Pods labelled COLLECTOR_POD_LABELS in a
# namespace labelled COLLECTOR_NAMESPACE_LABELS. Nothing installs it yet; a collector added later
# must carry these labels (or change them here).
COLLECTOR_NAMESPACE_LABELS = {"hyperpod-kvcache/metrics-collector": "true"}
COLLECTOR_POD_LABELS = {"hyperpod-kvcache/metrics-collector": "true"}

DEFAULT_DENY = "curvine-default-deny-ingress"


def collector_cidrs(config: AppConfig) -> list[str]:
    """Where the AMP managed collector (observability) connects from: its network interfaces sit
    in the cluster's subnets, outside the Pod network, so a pod or namespace selector cannot
    admit it."""
    obs = config.observability
    if not obs.enabled:
        return []
    if config.existing_cluster is None:
        return [config.network.primary_cidr]
    return list(obs.scraper_source_cidrs)


def _tcp(k8s: KubeApi, *numbers: int) -> list[kube.NetworkPolicyPort]:
    return [
        k8s.NetworkPolicyPort(protocol="TCP", port=k8s.IntOrString.from_number(n)) for n in numbers
    ]


class NetworkPolicyChart(cdk8s.Chart):
    def __init__(self, scope: Construct, id: str, *, config: AppConfig):
        super().__init__(scope, id, disable_resource_name_hashes=True)
        k8s = k8s_for(config)
        ns = config.kvcache.curvine.namespace

        def policy(
            name: str, target: Workload | None, rules: list[kube.NetworkPolicyIngressRule]
        ) -> None:
            k8s.KubeNetworkPolicy(
                self,
                name,
                metadata=meta(k8s, name, namespace=ns, labels=labels(name, "network-policy")),
                spec=k8s.NetworkPolicySpec(
                    pod_selector=k8s.LabelSelector(
                        match_labels=target.match_labels if target else None
                    ),
                    policy_types=["Ingress"],
                    ingress=rules or None,
                ),
            )

        def from_pods(*workloads: Workload) -> list[kube.NetworkPolicyPeer]:
            # A podSelector without namespaceSelector means "in this namespace".
            return [
                k8s.NetworkPolicyPeer(pod_selector=k8s.LabelSelector(match_labels=w.match_labels))
                for w in workloads
            ]

        # Every Pod of the Curvine namespace (an empty podSelector): its own clients.
        rpc_peers = [k8s.NetworkPolicyPeer(pod_selector=k8s.LabelSelector())]
        collector = [
            k8s.NetworkPolicyPeer(
                namespace_selector=k8s.LabelSelector(match_labels=COLLECTOR_NAMESPACE_LABELS),
                pod_selector=k8s.LabelSelector(match_labels=COLLECTOR_POD_LABELS),
            )
        ]
        collector += [
            k8s.NetworkPolicyPeer(ip_block=k8s.IpBlock(cidr=c)) for c in collector_cidrs(config)
        ]

        def rule(
            peers: list[kube.NetworkPolicyPeer], *numbers: int
        ) -> kube.NetworkPolicyIngressRule:
            return k8s.NetworkPolicyIngressRule(from_=peers, ports=_tcp(k8s, *numbers))

        policy(DEFAULT_DENY, None, [])
        policy(
            "curvine-master-ingress",
            MASTER_WL,
            [
                rule(rpc_peers, RPC_PORT),
                rule(from_pods(MASTER_WL), JOURNAL_PORT),  # the Raft journal: masters only
                rule(collector, MASTER_WEB_PORT),
            ],
        )
        policy(
            "curvine-worker-ingress",
            WORKER_WL,
            [
                rule(rpc_peers, WORKER_RPC_PORT),
                rule(collector, WORKER_WEB_PORT),
            ],
        )
        policy(
            "curvine-fuse-metrics-ingress",
            NODE_WL,
            [rule(collector, fuse_web_port(config.kvcache.curvine))],
        )


ENDPOINT_INGRESS = "endpoint-ingress"


def endpoint_source_cidrs(config: AppConfig) -> list[str]:
    """Addresses the endpoint Pods must accept traffic from, outside the Pod network: the ALB's
    targets and the AMP collector sit in the VPC's subnets, and the kubelet's probes leave a
    HyperPod node from any of its addresses in the HyperPod subnet."""
    net = config.network
    return sorted({net.primary_cidr, net.hyperpod_subnet.cidr, *collector_cidrs(config)})


def endpoint_network_policies(scope: Construct, k8s: KubeApi, config: AppConfig) -> None:
    """One ingress policy per endpoint namespace of a cluster the app creates (on an existing
    cluster the config does not know the networks its nodes and load balancers use).

    Admitted, on every port: the namespace's own Pods (the operator renders the endpoint's Pods
    there); the operator's namespace (its controller; the operator's chart does not publish
    where it runs the router, nor the port its load balancer and reverse-proxy sidecar use, so
    no port is narrowed); the in-cluster collector; and ``endpoint_source_cidrs``. Refused:
    every other address (peered VPCs, VPNs, transit gateways) and, where the engine tells Pods
    from addresses, the Pods of any other namespace. The VPC CNI's agent matches a Pod by its
    address, which the HyperPod subnet contains: there the policy keeps out non-VPC sources.
    """
    if config.existing_cluster is not None:
        return
    namespaces = sorted({e.namespace for e in config.kvcache.endpoints})
    peers = [
        k8s.NetworkPolicyPeer(pod_selector=k8s.LabelSelector()),
        k8s.NetworkPolicyPeer(
            namespace_selector=k8s.LabelSelector(match_labels={NAME_LABEL: OPERATOR_NAMESPACE})
        ),
        k8s.NetworkPolicyPeer(
            namespace_selector=k8s.LabelSelector(match_labels=COLLECTOR_NAMESPACE_LABELS),
            pod_selector=k8s.LabelSelector(match_labels=COLLECTOR_POD_LABELS),
        ),
        *(
            k8s.NetworkPolicyPeer(ip_block=k8s.IpBlock(cidr=c))
            for c in endpoint_source_cidrs(config)
        ),
    ]
    for ns in namespaces:
        k8s.KubeNetworkPolicy(
            scope,
            f"{ns}-{ENDPOINT_INGRESS}",
            metadata=meta(
                k8s,
                ENDPOINT_INGRESS,
                namespace=ns,
                labels=labels(ENDPOINT_INGRESS, "network-policy"),
            ),
            spec=k8s.NetworkPolicySpec(
                pod_selector=k8s.LabelSelector(),
                policy_types=["Ingress"],
                ingress=[k8s.NetworkPolicyIngressRule(from_=peers)],
            ),
        )
