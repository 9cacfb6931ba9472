"""HyperPod stack: the HyperPod cluster on the EKS cluster (or the existing clusters, imported),
and the Providers of the custom resources the nodes and tiered-storage stacks hold.

Two modes, one interface for the stacks above it (``eks_cluster``, ``oidc_provider``,
``hyperpod_cluster_name``, ``hyperpod_cluster_arn``):
- created: lifecycle scripts, instance role, dependencies chart, the cluster;
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

from infra.cluster_types import AnyCluster
from infra.config import AppConfig
from infra.constructs.existing_cluster import ExistingCluster
from infra.constructs.hyperpod import (
    HyperPodCluster,
    HyperPodDependencies,
    HyperPodExecutionRole,
    LifecycleScripts,
)
from infra.constructs.network import Network
from infra.custom_resources.node_gate.construct import NodeGateProvider
from infra.custom_resources.tiered_storage.construct import TieredStorageProvider
from infra.deps import needs
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
        if config.existing_cluster is not None:
            # Id "Default": CDK leaves that path component out of logical IDs, so its resources
            # keep the IDs they had when this stack built them itself.
            existing = ExistingCluster(
                self,
                "Default",
                existing=config.existing_cluster,
                kubernetes_version=config.eks.kubernetes_version,
            )
            self.eks_cluster = existing.eks_cluster
            self.oidc_provider = existing.oidc_provider
            self.hyperpod_cluster_name = existing.hyperpod_cluster_name
            self.hyperpod_cluster_arn = existing.hyperpod_cluster_arn
        else:
            assert network is not None and eks_stack is not None
            self._create(config, network, eks_stack, chart_dir)
            if egress is not None:
                # Nodes reach the internet through the NAT gateways, and the kubectl handler that
                # installs the chart runs in the private subnets.
                assert self.hyperpod is not None
                needs(self.hyperpod.cluster, egress)
                if self.dependencies_chart.chart is not None:
                    needs(self.dependencies_chart.chart, egress)
        # The Providers of the Tiered Storage and node gate custom resources (in the
        # tiered-storage and nodes stacks): they reference no cluster, so they are built while
        # it is created.
        self.tiered_storage_provider = TieredStorageProvider(self, "TieredStorage")
        self.node_gate_provider = NodeGateProvider(self, "NodesReadyGate")

    def _create(
        self, config: AppConfig, network: Network, eks_stack: EksStack, chart_dir: Path
    ) -> None:
        retain = config.retain_stateful_resources
        self.lifecycle = LifecycleScripts(self, "Lifecycle", retain=retain)
        self.execution_role = HyperPodExecutionRole(
            self,
            "ExecutionRole",
            lifecycle_bucket=self.lifecycle.bucket,
            subnet=network.hyperpod_subnet,
            security_group=network.cluster_security_group,
        )
        self.dependencies_chart = HyperPodDependencies(
            self,
            "Dependencies",
            cluster=eks_stack.cluster,
            config=config.hyperpod.dependencies_chart,
            chart_dir=chart_dir,
        )
        self.hyperpod = HyperPodCluster(
            self,
            "HyperPod",
            config=config.hyperpod,
            eks_cluster=eks_stack.cluster,
            execution_role=self.execution_role.role,
            lifecycle_s3_uri=self.lifecycle.s3_uri,
            subnet=network.hyperpod_subnet,
            security_group=network.cluster_security_group,
        )
        # Nodes need the scripts uploaded, the chart installed and the CNI running.
        self.hyperpod.cluster.node.add_dependency(self.lifecycle.deployment)
        self.hyperpod.cluster.node.add_dependency(self.execution_role)
        if self.dependencies_chart.chart is not None:
            self.hyperpod.cluster.node.add_dependency(self.dependencies_chart.chart)
        self.eks_cluster = eks_stack.cluster
        self.oidc_provider = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
            self, "OidcProvider", eks_stack.control_plane.oidc_provider.oidc_provider_arn
        )
        self.hyperpod_cluster_name = config.hyperpod.cluster_name
        self.hyperpod_cluster_arn = self.hyperpod.cluster.attr_cluster_arn
