"""The only place a boto3 client is made (tests pass their own to the entry points)."""

from __future__ import annotations

from typing import Any

import boto3
import botocore
from botocore.config import Config

from .errors import HandlerError

# Standard mode retries throttling and 5xx inside each call with exponential backoff.
RETRIES = {"mode": "standard", "max_attempts": 8}


def sagemaker_client() -> Any:
    return boto3.client(
        "sagemaker",
        config=Config(retries=RETRIES, connect_timeout=10, read_timeout=30),
    )


def require_tiered_storage_api(client: Any) -> None:
    """Fail clearly if the botocore in use predates TieredStorageConfig (bundling went wrong)."""
    shape = client.meta.service_model.operation_model("UpdateCluster").input_shape
    if "TieredStorageConfig" not in shape.members or "NodeRecovery" not in shape.members:
        raise HandlerError(
            f"botocore {botocore.__version__} in this Lambda has no UpdateCluster."
            "TieredStorageConfig: the function was deployed without its bundled boto3. "
            "Check: synthesize with the virtualenv from requirements.txt and deploy again."
        )
