"""HyperPod stack: the HyperPod cluster on the EKS cluster (or the existing clusters, imported),
and the Providers of the custom resources the nodes and tiered-storage stacks hold.

Two modes, one interface for the stacks above it (``eks_cluster``, ``oidc_provider``,
``hyperpod_cluster_name``, ``hyperpod_cluster_arn``):
- created: lifecycle scripts, instance role, dependencies chart, the cluster
  (infra/constructs/created_cluster.py);
- existing (``existing_cluster`` in config): the clusters are imported and only a kubectl
  provider for the imported EKS cluster is created (infra/constructs/existing_cluster.py).

The node readiness gate and CoreDNS are in the nodes stack, the Tiered Storage custom resource in
the tiered-storage stack; their Providers are built here, beside the cluster: this stack ends with
the cluster, so neither waits for the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.cdk.cluster_types import AnyCluster
from infra.config import AppConfig
from infra.constructs.created_cluster import CreatedCluster
from infra.constructs.existing_cluster import ExistingCluster
from infra.constructs.hyperpod import HyperPodCluster, LifecycleScripts
from infra.constructs.network import Network
from infra.custom_resources.node_gate.construct import NodeGateProvider
from infra.custom_resources.tiered_storage.construct import TieredStorageProvider
from stacks.eks_stack import EksStack


class HyperPodStack(Stack):
    eks_cluster: AnyCluster
    oidc_provider: iam.IOpenIdConnectProvider
    hyperpod_cluster_name: str
    hyperpod_cluster_arn: str
    hyperpod: HyperPodCluster | None = None

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        chart_dir: Path,
        network: Network | None = None,
        eks_stack: EksStack | None = None,
        egress: Construct | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        # Id "Default": CDK leaves that path component out of logical IDs, so the resources
        # keep the IDs they had when this stack built them itself.
        self.cluster: ExistingCluster | CreatedCluster
        if config.existing_cluster is not None:
            self.cluster = ExistingCluster(
                self,
                "Default",
                existing=config.existing_cluster,
                kubernetes_version=config.eks.kubernetes_version,
            )
        else:
            assert network is not None and eks_stack is not None
            # At the top: a pipeline names the step that publishes the scripts after this path.
            lifecycle = LifecycleScripts(self, "Lifecycle", retain=config.retain_stateful_resources)
            self.cluster = CreatedCluster(
                self,
                "Default",
                config=config,
                network=network,
                control_plane=eks_stack.control_plane,
                lifecycle=lifecycle,
                chart_dir=chart_dir,
                egress=egress,
            )
            self.hyperpod = self.cluster.hyperpod
        self.eks_cluster = self.cluster.eks_cluster
        self.oidc_provider = self.cluster.oidc_provider
        self.hyperpod_cluster_name = self.cluster.hyperpod_cluster_name
        self.hyperpod_cluster_arn = self.cluster.hyperpod_cluster_arn
        # The Providers of the Tiered Storage and node gate custom resources (in the
        # tiered-storage and nodes stacks): they reference no cluster, so they are built while
        # it is created.
        self.tiered_storage_provider = TieredStorageProvider(self, "TieredStorage")
        self.node_gate_provider = NodeGateProvider(self, "NodesReadyGate")
