"""The handler's boto3 client and its check of the bundled botocore (real botocore models; the
service model of a fake client stands in for an older botocore without the new members)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import botocore
import pytest

from infra.custom_resources.tiered_storage.handler.client import (
    require_tiered_storage_api,
    sagemaker_client,
)
from infra.custom_resources.tiered_storage.handler.errors import HandlerError


def test_the_client_retries_in_standard_mode_with_bounded_timeouts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    client = sagemaker_client()
    assert client.meta.service_model.service_name == "sagemaker"
    config = client.meta.config
    assert config.retries["mode"] == "standard"
    assert config.retries["total_max_attempts"] == 8 + 1  # botocore stores max_attempts + 1
    assert (config.connect_timeout, config.read_timeout) == (10, 30)


def test_the_botocore_in_use_knows_the_tiered_storage_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    require_tiered_storage_api(sagemaker_client())


def _client_with(members: set[str]) -> Any:
    shape = SimpleNamespace(members={m: None for m in members})
    model = SimpleNamespace(
        operation_model=lambda name: SimpleNamespace(
            input_shape=shape if name == "UpdateCluster" else None
        )
    )
    return SimpleNamespace(meta=SimpleNamespace(service_model=model))


@pytest.mark.parametrize(
    "members",
    [{"ClusterName"}, {"ClusterName", "NodeRecovery"}, {"ClusterName", "TieredStorageConfig"}],
)
def test_an_old_botocore_fails_naming_the_fix(members: set[str]) -> None:
    with pytest.raises(HandlerError) as err:
        require_tiered_storage_api(_client_with(members))
    assert str(err.value) == (
        f"botocore {botocore.__version__} in this Lambda has no UpdateCluster."
        "TieredStorageConfig: the function was deployed without its bundled boto3. "
        "Check: synthesize with the virtualenv from requirements.txt and deploy again."
    )


def test_both_members_present_passes() -> None:
    require_tiered_storage_api(_client_with({"TieredStorageConfig", "NodeRecovery"}))
