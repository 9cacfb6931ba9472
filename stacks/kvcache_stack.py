"""The Kubernetes layer but the endpoints (stacks/endpoints_stack.py): Kyverno (Helm), the
cdk8s charts of ``k8s.app`` and, with ``kvcache.l2_backend: fsx_lustre``, the FSx for Lustre file
system the L2 PersistentVolume names (infra/constructs/kubernetes_layer.py).

The file system lives here, beside the manifests that carry its id, DNS name and mount name: a
change that replaces it (its subnet, security group or KMS key) changes those values, and
CloudFormation refuses to change an export another stack imports. In one stack the update
creates the new file system, applies the PersistentVolume and claim named after it (the old ones
are pruned) and only then deletes the old file system.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from constructs import Construct, IConstruct

from infra.cdk.cluster_types import AnyCluster, as_icluster
from infra.config import AppConfig
from infra.constructs.kubernetes_layer import KubernetesLayer
from infra.constructs.network import Network
from infra.constructs.owned_layer import owned_manifests
from infra.environment.amp_workspace import AmpWorkspace


class KvCacheStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        cluster: AnyCluster,
        network: Network | None = None,
        skip: frozenset[str] = frozenset(),
        nodes_ready: list[IConstruct] | None = None,
        workspace: AmpWorkspace | None = None,
        **stack_kwargs: Any,
    ) -> None:
        """``network``: the created network (None on an existing cluster: the file system's
        placement comes from ``kvcache.fsx``). ``skip``: chart names another stack deploys.
        ``workspace``: the observability stack's, for the endpoints chart (deployed by the
        endpoints stack, so only that stack refers to it)."""
        super().__init__(scope, id, **stack_kwargs)
        target = as_icluster(cluster)
        # Id "Default": CDK leaves that path component out of logical IDs, so the layer's
        # resources keep the IDs they had when this stack built them itself. The owned-manifest
        # Provider stays at the top: its function's description names its construct path.
        self.layer = KubernetesLayer(
            self,
            "Default",
            config=config,
            cluster=target,
            owned=owned_manifests(self, config, target),
            network=network,
            skip=skip,
            nodes_ready=nodes_ready,
            workspace=workspace,
        )
        self.l2_file_system = self.layer.l2_file_system
        self.charts = self.layer.charts
        self.manifests = self.layer.manifests
        self.kyverno = self.layer.kyverno
