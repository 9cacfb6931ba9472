"""Tiered Storage stack: the custom resource that turns HyperPod managed tiered storage on.

The Provider (functions, state machine) lives in the HyperPod stack and is built while the
cluster is created; this stack holds only the UpdateCluster call and its cluster-scoped IAM
policy, so nothing but the endpoints waits for the ~15 minute update.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from constructs import Construct, IConstruct

from infra.cdk.deps import needs
from infra.config import AppConfig
from infra.constructs.hyperpod import instance_groups_hash
from infra.custom_resources.tiered_storage.construct import TieredStorage, TieredStorageProvider


class TieredStorageStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        provider: TieredStorageProvider,
        hyperpod_cluster_name: str,
        hyperpod_cluster_arn: str,
        hyperpod_cluster: IConstruct | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        # The single owner of TieredStorageConfig; on an existing cluster it restores the
        # previous setting when the stack is deleted.
        self.tiered_storage = TieredStorage(
            self,
            "TieredStorage",
            provider=provider,
            cluster_name=hyperpod_cluster_name,
            cluster_arn=hyperpod_cluster_arn,
            config=config.tiered_storage,
            instance_groups_hash=instance_groups_hash(config.hyperpod),
            restore_on_delete=config.existing_cluster is not None,
        )
        if hyperpod_cluster is not None:
            # Re-asserted after every cluster update (the hash changes with the groups).
            needs(self.tiered_storage.resource, hyperpod_cluster)
