"""Fixtures of the preflight tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws


@pytest.fixture
def aws() -> Iterator[None]:
    """moto for every AWS call the test does not stub."""
    with mock_aws():
        yield
