"""EKS stack: the control plane, its OIDC provider, access entries and core add-ons."""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from constructs import Construct

from infra.cdk.removal import removal_policy
from infra.config import AppConfig
from infra.constructs.eks_cluster import EksControlPlane
from infra.constructs.network import Network


class EksStack(Stack):
    def __init__(
        self, scope: Construct, id: str, *, config: AppConfig, network: Network, **kwargs: Any
    ) -> None:
        super().__init__(scope, id, **kwargs)
        self.control_plane = EksControlPlane(
            self,
            "Eks",
            config=config.eks,
            vpc=network.vpc,
            control_plane_subnets=network.vpc.private_subnets,
            security_group=network.cluster_security_group,
            removal_policy=removal_policy(config),
        )
        self.cluster = self.control_plane.cluster
