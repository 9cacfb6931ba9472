"""`hpkv patch`: --dry-run prints the JSON Patch and changes nothing, an unknown endpoint or one
without L2 is a usage error naming the configured ones.

Double: FakeKube (local in-memory API server) behind the official kubernetes client; AWS is never
reached (a client that fails the test if asked)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from typer.testing import CliRunner

from scripts import cli
from scripts.lib import runtime
from scripts.lib.patch import compute_patch
from tests.doubles.fake_kube import FakeKube
from tests.support.endpoint_objects import recorded_cfg
from tests.support.patch import CFG, SETTINGS, _no_aws, _seed


def test_dry_run_cli_prints_ops_and_changes_nothing(
    kube: FakeKube, deployment: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:

    clients = _seed(kube, copy.deepcopy(deployment))
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: clients)
    monkeypatch.setattr(runtime, "load_config", lambda env: CFG)
    # No --endpoint: the first of kvcache.endpoints (the recorded one).
    result = CliRunner().invoke(cli.app, ["patch", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["deployment"] == "vllm-kvcache"
    assert data["ops"] == compute_patch(deployment, SETTINGS) and len(data["ops"]) >= 5
    assert kube.writes() == []


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--endpoint", "nope"], "--endpoint = nope"),
        (
            ["--endpoint", "vllm-kvcache", "-n", "inference"],
            "--endpoint with --namespace = 'vllm-kvcache in inference'",
        ),
        (["-n", "nope"], "--namespace = nope"),
    ],
)
def test_unknown_endpoint_is_a_usage_error_naming_the_configured_ones(
    monkeypatch: pytest.MonkeyPatch, args: list[str], named: str
) -> None:
    """The option that matched nothing, its value, and every configured endpoint."""
    monkeypatch.setattr(runtime, "load_config", lambda env: CFG)
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: _no_aws("clients"))
    result = CliRunner().invoke(cli.app, ["patch", "--dry-run", *args])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: {named}: allowed: "), line
    assert "(models/vllm-kvcache, inference/other-model; namespace/name)" in line


def test_patch_refuses_an_endpoint_without_l2(monkeypatch: pytest.MonkeyPatch) -> None:

    no_l2 = recorded_cfg()
    endpoints = (no_l2.kvcache.endpoints[0].model_copy(update={"l2_backend": "none"}),)
    no_l2 = no_l2.model_copy(
        update={"kvcache": no_l2.kvcache.model_copy(update={"endpoints": endpoints})}
    )
    monkeypatch.setattr(runtime, "load_config", lambda env: no_l2)
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: _no_aws("clients"))
    result = CliRunner().invoke(cli.app, ["patch", "--dry-run"])
    assert result.exit_code == 2 and "l2_backend is none" in result.stderr
