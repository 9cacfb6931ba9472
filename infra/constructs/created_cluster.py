"""A HyperPod cluster the app creates on its own EKS control plane: the lifecycle scripts, the
instances' execution role, the HyperPod dependencies chart and the cluster, which waits for all
three (and for the NAT gateways, when the app creates them).

The same interface as infra/constructs/existing_cluster.py for the stacks above it:
``eks_cluster``, ``oidc_provider``, ``hyperpod_cluster_name``, ``hyperpod_cluster_arn``.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.cdk.deps import needs
from infra.config import AppConfig
from infra.constructs.eks_cluster import EksControlPlane
from infra.constructs.hyperpod import (
    HyperPodCluster,
    HyperPodDependencies,
    HyperPodExecutionRole,
    LifecycleScripts,
)
from infra.constructs.network import Network


class CreatedCluster(Construct):
    """The HyperPod cluster and what its nodes need before they join (``lifecycle``: the
    lifecycle scripts' bucket and upload)."""

    eks_cluster: eks.Cluster
    oidc_provider: iam.IOpenIdConnectProvider
    hyperpod_cluster_name: str
    hyperpod_cluster_arn: str

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        network: Network,
        control_plane: EksControlPlane,
        lifecycle: LifecycleScripts,
        chart_dir: Path,
        egress: Construct | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.lifecycle = lifecycle
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
            cluster=control_plane.cluster,
            config=config.hyperpod.dependencies_chart,
            chart_dir=chart_dir,
        )
        self.hyperpod = HyperPodCluster(
            self,
            "HyperPod",
            config=config.hyperpod,
            eks_cluster=control_plane.cluster,
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
        if egress is not None:
            # Nodes reach the internet through the NAT gateways, and the kubectl handler that
            # installs the chart runs in the private subnets.
            needs(self.hyperpod.cluster, egress)
            if self.dependencies_chart.chart is not None:
                needs(self.dependencies_chart.chart, egress)
        self.eks_cluster = control_plane.cluster
        self.oidc_provider = iam.OpenIdConnectProvider.from_open_id_connect_provider_arn(
            self, "OidcProvider", control_plane.oidc_provider.oidc_provider_arn
        )
        self.hyperpod_cluster_name = config.hyperpod.cluster_name
        self.hyperpod_cluster_arn = self.hyperpod.cluster.attr_cluster_arn
