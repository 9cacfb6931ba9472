"""Network stack: the VPC HyperPod and EKS share."""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from constructs import Construct

from infra.cdk.removal import removal_policy
from infra.config import AppConfig
from infra.constructs.network import Network


class NetworkStack(Stack):
    def __init__(self, scope: Construct, id: str, *, config: AppConfig, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        self._azs = list(config.network.availability_zones)
        self.network = Network(
            self, "Network", config=config.network, removal_policy=removal_policy(config)
        )

    @property
    def availability_zones(self) -> list[str]:
        """The configured AZs. The Vpc checks its AZs against this list; CDK's default asks the
        account (a context lookup that needs credentials under the CLI)."""
        return self._azs
