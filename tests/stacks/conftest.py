"""Fixtures of the stack tests."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import parse_config
from tests.support import background
from tests.support.config import SOURCE, with_overrides
from tests.support.pipeline import synth_pipeline
from tests.support.synth import Synth, synth


@pytest.fixture(scope="session")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """prod's delivery pipeline, synthesized once (tests/support/pipeline.py)."""
    return synth_pipeline(tmp_path_factory.mktemp("pipeline"))


@pytest.fixture(scope="session")
def autoscaled(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """dev with its endpoint autoscaled on requests waiting (1-2 replicas), synthesized once."""
    auto = {"kvcache.endpoints.0.autoscaling": {"max_replicas": 2}}
    config = parse_config(with_overrides(auto), f"{SOURCE} (autoscaled)", "dev")
    result = synth(config, tmp_path_factory.mktemp("autoscaled"))
    background.lint_soon(result.outdir, result.config.region)
    return result
