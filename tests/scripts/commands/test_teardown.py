"""`hpkv teardown`: the dry run as one JSON object, and a production environment refused without
--allow-prod.

Doubles: moto and FakeKube, as in ``World`` (tests/support/teardown_world.py); where a test
needs more it says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from infra.config import load_config
from scripts import cli
from scripts.lib import runtime
from scripts.lib.environment import stack_names
from tests.support.config import env_raw, make_cfg
from tests.support.teardown_world import ENV, World


def test_cli_dry_run_json_and_prod_refusal(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: world.clients)
    monkeypatch.setattr(runtime, "load_config", lambda env: world.cfg)
    result = CliRunner().invoke(cli.app, ["teardown", "--json", "--env", ENV])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["dry_run"] is True and len(data["stacks"]) == len(stack_names(world.cfg))
    assert world.timeline == []

    monkeypatch.setattr(
        runtime,
        "load_config",
        lambda env: make_cfg(environment="prod", eks={"endpoint_access": "private"}),
    )
    refused = CliRunner().invoke(cli.app, ["teardown", "--env", "prod", "--yes"])
    assert refused.exit_code == 3 and "--allow-prod" in refused.output
    assert world.timeline == []
    recreate = CliRunner().invoke(cli.app, ["recreate", "--env", "prod"])
    assert recreate.exit_code == 3


def test_a_copy_of_dev_that_keeps_devs_cluster_names_is_refused_before_anything_is_planned(
    world: World, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """config/staging.yaml copied from a dev.yaml that spelled its cluster names: its teardown
    would plan dev's cluster log group and released volumes. One line, exit 2, no call made."""
    dev = env_raw()
    dev["eks"]["cluster_name"] = dev["hyperpod"]["cluster_name"] = "hyperpod-kvcache-dev"
    (tmp_path / "dev.yaml").write_text(yaml.safe_dump(dev))
    (tmp_path / "staging.yaml").write_text(yaml.safe_dump({**dev, "environment": "staging"}))
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: world.clients)
    monkeypatch.setattr(runtime, "load_config", lambda env: load_config(env, tmp_path, tmp_path))
    result = CliRunner().invoke(cli.app, ["teardown", "--json", "--env", "staging"])
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.strip().splitlines()
    assert "config/staging.yaml: eks.cluster_name = 'hyperpod-kvcache-dev'" in line
    assert world.timeline == []
