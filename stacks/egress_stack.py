"""Egress stack: the NAT gateways of the created VPC and the private subnets' default routes.

Beside the EKS stack, after the network stack: the control plane is created while the NAT
gateways are, and the HyperPod stack (nodes, the kubectl handler in the private subnets) waits
for both. Not part of an existing VPC or an existing cluster
(docs/architecture.md#deploy-time).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from constructs import Construct

from infra.config import AppConfig
from infra.constructs.network import Egress, Network


class EgressStack(Stack):
    def __init__(
        self, scope: Construct, id: str, *, config: AppConfig, network: Network, **kwargs: Any
    ) -> None:
        super().__init__(scope, id, **kwargs)
        self.egress = Egress(
            self, "Egress", network=network, nat_gateways=config.network.nat_gateways
        )
