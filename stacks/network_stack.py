"""Network stack: the VPC HyperPod and EKS share."""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from constructs import Construct

from infra.config import AppConfig
from infra.constructs.network import Network
from infra.removal import removal_policy


class NetworkStack(Stack):
    def __init__(self, scope: Construct, id: str, *, config: AppConfig, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        self.network = Network(
            self, "Network", config=config.network, removal_policy=removal_policy(config)
        )
