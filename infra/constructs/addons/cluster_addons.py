"""Add-ons without AWS permissions: cert-manager and metrics-server."""

from __future__ import annotations

from constructs import Construct

from infra.cdk.cluster_types import AnyCluster
from infra.config.addons import CertManagerConfig
from infra.constructs.addons.base import EksAddon

# HyperPod taints nodes while deep health checks run (AWS docs, "Amazon EKS support in SageMaker
# HyperPod": effect NoSchedule, key sagemaker.amazonaws.com/node-health-status, value
# Unschedulable) and asks cluster plugins to tolerate it; on a fresh cluster every node may carry
# it, and cert-manager must still start because the inference operator waits for it.
HYPERPOD_HEALTH_CHECK_TOLERATION = {
    "key": "sagemaker.amazonaws.com/node-health-status",
    "operator": "Equal",
    "value": "Unschedulable",
    "effect": "NoSchedule",
}


class CertManagerAddon(EksAddon):
    ADDON_NAME = "cert-manager"

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: AnyCluster,
        settings: CertManagerConfig,
        existing_cluster: bool,
    ) -> None:
        if settings.adopted:  # the owner's configuration, not ours
            super().__init__(
                scope, id, cluster=cluster, settings=settings, existing_cluster=existing_cluster
            )
            return
        tolerations = [HYPERPOD_HEALTH_CHECK_TOLERATION]
        super().__init__(
            scope,
            id,
            cluster=cluster,
            settings=settings,
            existing_cluster=existing_cluster,
            # Keys of the add-on's configuration schema: the controller at the top level, then
            # its webhook and cainjector Deployments.
            configuration_values={
                "tolerations": tolerations,
                "webhook": {"tolerations": tolerations},
                "cainjector": {"tolerations": tolerations},
            },
        )


class MetricsServerAddon(EksAddon):
    ADDON_NAME = "metrics-server"
