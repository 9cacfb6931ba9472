"""Nodes stack: the node readiness gate and CoreDNS, what everything that runs Pods waits for.

Its own stack so that the add-ons and the Kubernetes layer start as soon as the nodes are up,
without waiting for the Tiered Storage update on the same cluster (tiered_storage_stack.py).

Only the gate's custom resource and its cluster-scoped policy live here; the gate's Provider
(functions, roles, state machine, logs) is built in the HyperPod stack, beside the cluster and
while it is created, as the Tiered Storage Provider is.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct, IConstruct

from infra.cdk.cluster_types import AnyCluster
from infra.cdk.deps import needs
from infra.config import AppConfig
from infra.constructs.eks_cluster import add_coredns
from infra.constructs.hyperpod import instance_groups_hash
from infra.custom_resources.node_gate.construct import NodeGateProvider, NodeReadinessGate


class NodesStack(Stack):
    coredns: eks.CfnAddon | None

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        cluster: AnyCluster,
        hyperpod_cluster_name: str,
        hyperpod_cluster_arn: str,
        provider: NodeGateProvider,
        hyperpod_cluster: IConstruct | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        created = hyperpod_cluster is not None
        # Instances join after the cluster is InService (Continuous provisioning): wait for them.
        self.nodes_ready = NodeReadinessGate(
            self,
            "NodesReadyGate",
            provider=provider,
            cluster_name=hyperpod_cluster_name,
            cluster_arn=hyperpod_cluster_arn,
            fingerprint=instance_groups_hash(config.hyperpod) if created else "",
        )
        self.coredns = None
        if hyperpod_cluster is not None:
            needs(self.nodes_ready.resource, hyperpod_cluster)
            # CoreDNS stays DEGRADED until nodes exist: after the gate.
            self.coredns = add_coredns(self, cluster=cluster, version=config.eks.addons.coredns)
            self.coredns.node.add_dependency(self.nodes_ready)

    @property
    def ready(self) -> list[IConstruct]:
        """What a Pod-running resource waits for: the gate and, on a created cluster, CoreDNS."""
        return [self.nodes_ready.resource, *([self.coredns] if self.coredns else [])]
