"""Observability stack: the AMP workspace, its collector on the EKS cluster, alert rules and the
alert topic (``observability.enabled``)."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra.cdk.cluster_types import AnyCluster
from infra.config import AppConfig
from infra.constructs.network import Network
from infra.constructs.observability import Observability, collector_placement
from infra.environment.amp_workspace import WORKSPACE_ID_OUTPUT, AmpWorkspace


class ObservabilityStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        cluster: AnyCluster,
        network: Network | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        subnets, groups = collector_placement(config, network)
        self.observability = Observability(
            self,
            "Observability",
            config=config,
            cluster_arn=cluster.cluster_arn,
            subnet_ids=subnets,
            security_group_ids=groups,
        )
        CfnOutput(
            self,
            "QueryEndpoint",
            value=self.observability.query_endpoint,
            description="Prometheus query URL (observability.query_endpoint)",
        )
        CfnOutput(self, "AlertTopicArn", value=self.observability.topic.topic_arn)
        workspace = self.observability.workspace
        # What autoscaled endpoints query (their serverAddress; `make manifests` reads it).
        CfnOutput(
            self,
            WORKSPACE_ID_OUTPUT,
            value=workspace.attr_workspace_id,
            description="AMP workspace id (autoscaled endpoints' serverAddress)",
        )
        self.workspace = AmpWorkspace(workspace.attr_workspace_id, config.region)
        self.workspace_arn = workspace.attr_arn
