"""Fixtures of the stack tests."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.pipeline import synth_pipeline


@pytest.fixture(scope="session")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """prod's delivery pipeline, synthesized once (tests/support/pipeline.py)."""
    return synth_pipeline(tmp_path_factory.mktemp("pipeline"))
