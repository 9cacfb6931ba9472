"""The pipeline section's rules: a pipeline needs its source and promotes another environment."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from infra.config import ConfigError, parse_config
from infra.config.loader import CONFIG_DIR
from tests.support.config import SOURCE, refusal

CONNECTION = (
    "arn:aws:codeconnections:us-west-2:111122223333:connection/0f3d8e2a-5b6c-4d7e-8f90-a1b2c3d4e5f6"
)
SOURCE_SET = {
    "pipeline.enabled": True,
    "pipeline.connection_arn": CONNECTION,
    "pipeline.repository": "example-org/hyperpod-kvcache",
}


def test_a_pipeline_with_its_source_that_promotes_another_environment_is_accepted() -> None:
    assert refusal(SOURCE_SET) is None


def test_no_pipeline_needs_no_source() -> None:
    assert refusal({"pipeline.enabled": False, "pipeline.test_environment": "dev"}) is None


@pytest.mark.parametrize("key", ["connection_arn", "repository"])
def test_an_enabled_pipeline_needs_its_source(key: str) -> None:
    field = f"pipeline.{key}"
    assert refusal({**SOURCE_SET, field: None}) == (
        f"{SOURCE}: {field} = (missing): allowed: a value when pipeline.enabled is true; "
        f"fix: set {field} (see README, CI/CD)"
    )


def test_a_pipeline_cannot_promote_an_environment_to_itself() -> None:
    assert refusal({**SOURCE_SET, "pipeline.test_environment": "dev"}) == (
        f"{SOURCE}: pipeline.test_environment = 'dev': allowed: an environment other than "
        "'dev' (the one the pipeline promotes to); fix: set pipeline.test_environment to the "
        "pre-production environment, e.g. test"
    )


def test_pipeline_needs_its_source() -> None:
    """As in prod.yaml, the file a pipeline is defined in."""
    raw: dict[str, Any] = yaml.safe_load((CONFIG_DIR / "prod.yaml").read_text())
    raw["pipeline"] = {"enabled": True, "repository": "example-org/hyperpod-kvcache"}
    with pytest.raises(ConfigError) as info:
        parse_config(raw, "config/prod.yaml", "prod")
    assert str(info.value) == (
        "config/prod.yaml: pipeline.connection_arn = (missing): allowed: a value when "
        "pipeline.enabled is true; fix: set pipeline.connection_arn (see README, CI/CD)"
    )
