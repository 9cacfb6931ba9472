"""A SageMaker client with botocore's Stubber on it, for the Tiered Storage handler's tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import botocore.session
import pytest
from botocore.stub import Stubber


@pytest.fixture(scope="module")
def session() -> Any:
    # One session per module: it caches the parsed service model (creating it takes ~0.4 s).
    return botocore.session.get_session()


@pytest.fixture
def client(session: Any) -> Any:
    return session.create_client(
        "sagemaker",
        region_name="us-west-2",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def stub(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()
