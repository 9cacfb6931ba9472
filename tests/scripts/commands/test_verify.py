"""`hpkv verify`: one JSON object and the exit code, an unknown endpoint refused, and --wait-minutes
waiting for the nodes and the rollout first.

Doubles: botocore's Stubber for SageMaker DescribeCluster and the EKS add-ons, FakeKube for the
cluster, two local OpenAI-compatible servers (FakeVllm) for the cross-Pod test
(tests/support/verify.py)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from k8s.names import curvine_claim
from scripts import cli
from scripts.lib import runtime
from tests.doubles.fake_kube import FakeKube
from tests.support.endpoint_objects import DEPLOYMENTS
from tests.support.verify import (
    CFG,
    ENABLED,
    _clients,
    _cluster,
    _fake_progress,
    _seed_cluster,
    _stubbed_aws,
)


def test_cli_json_and_exit_code(kube: FakeKube, monkeypatch: pytest.MonkeyPatch) -> None:

    _seed_cluster(kube)
    aws = _stubbed_aws()
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: _clients(kube, aws))
    monkeypatch.setattr(runtime, "load_config", lambda env: CFG)
    # No --endpoint/--namespace: the first of kvcache.endpoints, models/vllm-kvcache.
    result = CliRunner().invoke(cli.app, ["verify", "--skip-l2-test", "--json"])
    data = json.loads(result.stdout)
    assert result.exit_code == 0 and data["ok"] is True, result.output
    statuses = {c["stage"]: c["status"] for c in data["checks"]}
    assert statuses["CSIDriver curvine"] == "pass"
    assert statuses[f"PVC models/{curvine_claim(CFG)}"] == "pass"
    assert statuses["Pods carry L2 settings"] == "pass"
    assert statuses["cross-Pod L2"] == "skip"

    unknown = CliRunner().invoke(cli.app, ["verify", "--endpoint", "nope"])
    (line,) = unknown.stderr.splitlines()
    assert unknown.exit_code == 2 and line.startswith("error: --endpoint = nope: allowed: ")
    assert "(models/vllm-kvcache, inference/other-model; namespace/name)" in line


def test_verify_waits_for_nodes_and_rollout_first(
    kube: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:

    _seed_cluster(kube)
    fake = _fake_progress(monkeypatch)
    nodes = [kube.get(f"/api/v1/nodes/hyperpod-i-0{i}") for i in (1, 2)]
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}

    def sleep_and_join(seconds: float) -> None:  # the second node joins after the first poll
        fake.t += seconds
        for node in nodes:
            assert node is not None
            kube.put("/api/v1/nodes", {**node, "status": ready})

    monkeypatch.setattr(runtime.PROGRESS.clock, "sleep", sleep_and_join)
    dep = kube.get(f"{DEPLOYMENTS}/vllm-kvcache")
    assert dep is not None
    want = dep["spec"]["replicas"]
    dep["status"] = {"replicas": want, "updatedReplicas": want, "readyReplicas": want}
    aws = _stubbed_aws(before=[_cluster("InService", ENABLED)])
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: _clients(kube, aws))
    monkeypatch.setattr(runtime, "load_config", lambda env: CFG)
    args = ["verify", "--skip-l2-test", "--json", "--wait-minutes", "10"]
    result = CliRunner().invoke(cli.app, args)
    data = json.loads(result.stdout)
    assert result.exit_code == 0, result.output
    assert data["waited_seconds"] == {"tiered_storage": 0, "gpu_nodes": 15, "rollout": 0}
    assert "GPU nodes Ready: 0/2 GPU nodes Ready (0s elapsed)" in result.stderr
    assert "rollout of models/vllm-kvcache: done after 0s" in result.stderr
