"""Platform add-ons stack: everything between the HyperPod nodes and the Kubernetes layer."""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct, IConstruct

from infra.cdk.cluster_types import AnyCluster
from infra.cdk.deps import needs
from infra.config import AppConfig
from infra.constructs.addons import PlatformAddons


class AddonsStack(Stack):
    """EKS add-ons, their IAM roles and the inference operator's TLS bucket.

    Works on a cluster this app created (pass the ``aws_eks_v2.Cluster`` and its OIDC provider)
    and on an imported one (``Cluster.from_cluster_attributes`` and
    ``OpenIdConnectProvider.from_open_id_connect_provider_arn``).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        cluster: AnyCluster,
        oidc_provider: iam.IOpenIdConnectProvider,
        hyperpod_cluster_arn: str,
        nodes_ready: list[IConstruct] | None = None,
        metrics_workspace_arn: str | None = None,
        **stack_kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **stack_kwargs)
        self.platform = PlatformAddons(
            self,
            "Addons",
            config=config,
            cluster=cluster,
            oidc_provider=oidc_provider,
            hyperpod_cluster_arn=hyperpod_cluster_arn,
            metrics_workspace_arn=metrics_workspace_arn,
        )
        if nodes_ready:
            # Add-ons with Deployments stay DEGRADED until nodes (and CoreDNS) are up.
            for addon in self.platform.addons.values():
                needs(addon.resource, *nodes_ready)
