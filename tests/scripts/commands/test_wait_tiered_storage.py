"""`hpkv wait-tiered-storage`: follows DescribeCluster until the config reads back, and a timeout is
one JSON object.

Doubles: botocore's Stubber for SageMaker DescribeCluster and the EKS add-ons, FakeKube for the
cluster, two local OpenAI-compatible servers (FakeVllm) for the cross-Pod test
(tests/support/verify.py)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from scripts import cli
from scripts.lib import runtime
from tests.doubles.fake_kube import FakeKube
from tests.support.logs import line_saying
from tests.support.verify import CFG, ENABLED, _clients, _cluster, _fake_progress, _stubbed_aws


def test_wait_tiered_storage_follows_describe_cluster(
    kube: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:

    _fake_progress(monkeypatch)
    before = [_cluster("InService", None), _cluster("Updating", ENABLED)]
    aws = _stubbed_aws(before=before)  # then InService with the config
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: _clients(kube, aws))
    monkeypatch.setattr(runtime, "load_config", lambda env: CFG)
    result = CliRunner().invoke(cli.app, ["wait-tiered-storage", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["seconds"] == 60  # two 30 s polls of fake time
    assert data["state"].startswith("InService; Mode=Enable 20%")
    # Progress on stderr: the cluster, each state it passed through with its mode, then done.
    lines = result.stderr.splitlines()
    line_saying(lines[1], "hyperpod-kvcache", "InService", "None")
    line_saying(lines[2], "hyperpod-kvcache", "Updating", "Enable", "20%")
    line_saying(lines[-1], "hyperpod-kvcache", "done", "1m00s")


def test_wait_tiered_storage_times_out_in_one_json_object(
    kube: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:

    _fake_progress(monkeypatch)
    aws = _stubbed_aws(before=[_cluster("Updating", None)] * 2)
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: _clients(kube, aws))
    monkeypatch.setattr(runtime, "load_config", lambda env: CFG)
    args = ["wait-tiered-storage", "--json", "--timeout-minutes", "1", "--interval-seconds", "60"]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 4
    data = json.loads(result.stdout)
    assert data["error"].startswith("timed out after 1m00s waiting for Tiered Storage")
    assert "(last state: Updating; Mode=None" in data["error"]
