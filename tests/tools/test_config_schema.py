"""config/schema.json is the config model's JSON Schema, current, and named by every config file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from infra.config.loader import CONFIG_DIR, available_environments
from tools import config_schema


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(config_schema.SCHEMA.read_text())
    return data


def test_schema_file_is_generated_from_the_model(schema: dict[str, Any]) -> None:
    assert schema == config_schema.schema(), "config/schema.json is stale: run `make docs`"
    assert config_schema.main(["--check"]) == 0


def test_check_fails_on_a_stale_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "schema.json"
    stale.write_text("{}\n")
    monkeypatch.setattr(config_schema, "SCHEMA", stale)
    assert config_schema.main(["--check"]) == 1
    assert config_schema.main([]) == 0 and config_schema.main(["--check"]) == 0


@pytest.mark.parametrize("env", available_environments())
def test_each_config_names_the_schema_and_validates(env: str, schema: dict[str, Any]) -> None:
    path = CONFIG_DIR / f"{env}.yaml"
    assert path.read_text().splitlines()[0] == config_schema.MODELINE
    jsonschema.Draft202012Validator(schema).validate(yaml.safe_load(path.read_text()))


def test_schema_rejects_an_unknown_key_and_a_bad_enum(schema: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    base = yaml.safe_load((CONFIG_DIR / "dev.yaml").read_text())
    assert validator.is_valid(base)
    assert not validator.is_valid({**base, "tierd_storage": {"mode": "Enable"}})
    assert not validator.is_valid({**base, "tiered_storage": {"mode": "enable"}})
