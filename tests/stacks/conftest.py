"""Fixtures of the stack tests, each synthesized once per run (tests/support/once_per_run.py)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import parse_config
from tests.support import background
from tests.support.config import SOURCE, with_overrides
from tests.support.once_per_run import once_per_run
from tests.support.pipeline import pipeline_files, synth_pipeline
from tests.support.synth import Synth, synth_once


@pytest.fixture(scope="session")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """prod's delivery pipeline (tests/support/pipeline.py)."""
    return pipeline_files(once_per_run("pipeline", tmp_path_factory, synth_pipeline))


@pytest.fixture(scope="session")
def autoscaled(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """dev with its endpoint autoscaled on requests waiting (1-2 replicas)."""
    auto = {"kvcache.endpoints.0.autoscaling": {"max_replicas": 2}}
    config = parse_config(with_overrides(auto), f"{SOURCE} (autoscaled)", "dev")
    result = synth_once("autoscaled", config, tmp_path_factory)
    background.lint_soon(result.outdir, result.config.region)
    return result
