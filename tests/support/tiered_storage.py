"""What the Stubber-based tests of the Tiered Storage handler share: the clock, the expected
calls, and on_event/is_complete as the Provider framework calls them."""

from __future__ import annotations

from typing import Any

from botocore.stub import Stubber

from infra.custom_resources.tiered_storage.handler import index
from tests.doubles.tiered_storage_events import CLUSTER, CLUSTER_ARN

NOW = 1_800_000_000.0
KEEP_ID = f"tiered-storage:{CLUSTER}:keep"


def expect_describe(stub: Stubber, answer: dict[str, Any], cluster: str = CLUSTER) -> None:
    stub.add_response("describe_cluster", answer, {"ClusterName": cluster})


def expect_update(stub: Stubber, tiered: dict[str, Any], node_recovery: str = "Automatic") -> None:
    stub.add_response(
        "update_cluster",
        {"ClusterArn": CLUSTER_ARN},
        {"ClusterName": CLUSTER, "TieredStorageConfig": tiered, "NodeRecovery": node_recovery},
    )


def on_event(client: Any, e: dict[str, Any], now: float = NOW) -> dict[str, Any]:
    return index.on_event(e, None, client=client, now=now)


def is_complete(client: Any, e: dict[str, Any], now: float = NOW + 60) -> bool:
    answer = index.is_complete(e, None, client=client, now=now)
    assert set(answer) == {"IsComplete"}  # Data is not allowed while IsComplete is False
    return bool(answer["IsComplete"])


def started(e: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """The event is_complete receives: the request merged with on_event's answer."""
    return {**e, **result}
