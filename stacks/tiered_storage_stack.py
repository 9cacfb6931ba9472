"""Tiered Storage stack: the custom resource that turns HyperPod managed tiered storage on.

The Provider (functions, state machine) lives in the HyperPod stack and is built while the
cluster is created; this stack holds only the UpdateCluster call and its cluster-scoped IAM
policy, so nothing but the endpoints waits for the ~15 minute update.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from constructs import Construct


class TieredStorageStack(Stack):
    def __init__(self, scope: Construct, id: str, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
