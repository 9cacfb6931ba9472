"""An autoscaled endpoint's InferenceEndpointConfig, as the API server would take it: validated
strictly against the CRD of the pinned operator (k8s/schemas, jsonschema, no double), with the
fields KEDA acts on checked for what the config asked. The deployed workspace's id comes from
the observability stack's outputs, read with CloudFormation ``DescribeStacks`` on moto (it
implements DescribeStacks with Outputs; the stack is created from a template whose output is the
literal value a deploy reports)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import boto3
import cdk8s
import jsonschema
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from infra.config import AppConfig, parse_config
from infra.config.operator_versions import OPERATORS
from infra.environment.amp_workspace import (
    WORKSPACE_ID_OUTPUT,
    AmpWorkspace,
    WorkspaceUnknown,
    deployed_workspace,
    observability_stack_name,
)
from k8s import render as render_module
from k8s.endpoints import EndpointsChart
from k8s.render import render_config
from scripts import cli
from scripts.lib import runtime
from tests.support.config import SOURCE, with_overrides
from tests.support.schemas import crd_schema, strict, validate

AT = "kvcache.endpoints.0.autoscaling"
WORKSPACE = AmpWorkspace("ws-3f1c2b9e-8d4a-4e6f-9a1b-2c3d4e5f6a7b", "us-west-2")


def _config(**autoscaling: Any) -> AppConfig:
    replicas = autoscaling.pop("replicas", 2)
    overrides = {AT: {"max_replicas": 2, **autoscaling}, "kvcache.endpoints.0.replicas": replicas}
    return parse_config(with_overrides(overrides), SOURCE)


def _iec(config: AppConfig, workspace: AmpWorkspace | None = WORKSPACE) -> dict[str, Any]:
    (obj,) = EndpointsChart(cdk8s.App(), "endpoints", config=config, workspace=workspace).to_json()
    return dict(obj)


def _pinned(config: AppConfig) -> dict[str, Any]:
    return strict(crd_schema(config.addons.inference_operator.operator.crd_path, "v1"))


@pytest.mark.parametrize("signal", ["requests_waiting", "kv_cache_usage", "ttft_p95"])
def test_the_pinned_operators_crd_takes_every_signal(signal: str) -> None:
    config = _config(signal=signal)
    iec = _iec(config)
    validate(iec, _pinned(config))
    spec = iec["spec"]["autoScalingSpec"]
    trigger = spec["prometheusTrigger"]
    assert trigger["metricType"] == ("Value" if signal == "ttft_p95" else "Average")
    assert 'namespace="inference",endpoint="qwen3-8b"' in trigger["query"]
    assert trigger["useCachedMetrics"] is True


@pytest.mark.parametrize("signal", ["requests_waiting", "kv_cache_usage", "ttft_p95"])
def test_the_operator_3_3_crd_takes_the_autoscaled_endpoint_too(signal: str) -> None:
    """An add-on upgraded under the app (operator 3.3) keeps taking what the app renders."""
    validate(_iec(_config(signal=signal)), strict(crd_schema(OPERATORS["3.3"].crd_path, "v1")))


def test_the_spec_carries_the_configured_bounds_timings_and_target() -> None:
    config = _config(
        min_replicas=1,
        target=3,
        polling_interval_seconds=15,
        cooldown_seconds=120,
        initial_cooldown_seconds=60,
        scale_up_stabilization_seconds=30,
        scale_down_stabilization_seconds=600,
        replicas=1,
    )
    spec = _iec(config)["spec"]
    assert spec["replicas"] == 1  # the count it starts with
    assert spec["autoScalingSpec"] == {
        "minReplicaCount": 1,
        "maxReplicaCount": 2,
        "pollingInterval": 15,
        "cooldownPeriod": 120,
        "initialCooldownPeriod": 60,
        "scaleUpStabilizationTime": 30,
        "scaleDownStabilizationTime": 600,
        "prometheusTrigger": {
            "name": "requests-waiting",
            "serverAddress": WORKSPACE.query_address,
            "query": 'sum(vllm:num_requests_waiting{namespace="inference",endpoint="qwen3-8b"})',
            "targetValue": 3,
            "metricType": "Average",
            "useCachedMetrics": True,
        },
    }


def test_an_endpoint_without_autoscaling_has_no_spec_and_keeps_its_replicas() -> None:
    """Absent, not empty: the API server would default an empty autoScalingSpec's fields
    (min 1, max 5) and the operator would make a ScaledObject of it."""
    config = parse_config(with_overrides({"kvcache.endpoints.0.replicas": 2}), SOURCE)
    spec = _iec(config, workspace=None)["spec"]
    assert "autoScalingSpec" not in spec
    assert spec["replicas"] == 2


def test_the_server_address_is_what_keda_can_append_its_query_path_to() -> None:
    """KEDA requests <serverAddress>/api/v1/query: the address is the workspace's root, not
    the PrometheusEndpoint attribute (which ends in '/') nor its /api/v1 path; the pinned CRD's
    pattern refuses both, and the rendered one passes it."""
    pattern = _pinned(_config())["properties"]["spec"]["properties"]["autoScalingSpec"][
        "properties"
    ]["prometheusTrigger"]["properties"]["serverAddress"]["pattern"]
    address = _iec(_config())["spec"]["autoScalingSpec"]["prometheusTrigger"]["serverAddress"]
    assert re.search(pattern, address)
    assert address + "/api/v1/query" == (
        f"https://aps-workspaces.us-west-2.amazonaws.com/workspaces/{WORKSPACE.workspace_id}"
        "/api/v1/query"
    )
    for refused in (address + "/", address + "/api/v1"):
        assert not re.search(pattern, refused)


def test_operator_3_0s_crd_refuses_the_address_which_is_why_config_refuses_that_pin() -> None:
    iec = _iec(_config())
    with pytest.raises(jsonschema.ValidationError, match="does not match"):
        validate(iec, strict(crd_schema(OPERATORS["3.0"].crd_path, "v1")))


def test_rendering_an_autoscaled_endpoint_without_the_workspace_writes_nothing(
    tmp_path: Path,
) -> None:
    with pytest.raises(WorkspaceUnknown, match="fix: `make manifests ENV=dev`"):
        render_config(_config(), tmp_path / "dist", tmp_path / "locks")
    assert not (tmp_path / "dist").exists()


def _stack(config: AppConfig, outputs: dict[str, str]) -> None:
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {k: {"Value": v} for k, v in outputs.items()},
    }
    boto3.client("cloudformation", region_name=config.region).create_stack(
        StackName=observability_stack_name(config), TemplateBody=json.dumps(template)
    )


@mock_aws
def test_make_manifests_names_the_deployed_workspace(tmp_path: Path) -> None:
    config = _config()
    _stack(config, {WORKSPACE_ID_OUTPUT: WORKSPACE.workspace_id})
    workspace = deployed_workspace(config)
    assert workspace == WORKSPACE
    render_config(config, tmp_path / "dist", tmp_path / "locks", workspace=workspace)
    text = (tmp_path / "dist" / "60-endpoints.yaml").read_text()
    assert f"serverAddress: {WORKSPACE.query_address}\n" in text


@mock_aws
def test_an_undeployed_or_older_observability_stack_is_one_line_saying_to_deploy() -> None:
    config = _config()
    with pytest.raises(WorkspaceUnknown, match="the stack does not exist; fix: deploy it first"):
        deployed_workspace(config)
    _stack(config, {"AlertTopicArn": "arn:aws:sns:us-west-2:111122223333:t"})
    with pytest.raises(WorkspaceUnknown, match=f"no output {WORKSPACE_ID_OUTPUT}; fix: deploy"):
        deployed_workspace(config)


def test_the_pinned_crd_has_no_fallback_so_none_is_rendered() -> None:
    """KEDA's ``fallback`` (hold a replica count while the metrics store fails) has no field in
    the operator's autoScalingSpec: the API server would refuse it, which is why an outage
    freezes the count instead (docs/autoscaling.md)."""
    config = _config()
    iec = _iec(config)
    assert "fallback" not in iec["spec"]["autoScalingSpec"]
    iec["spec"]["autoScalingSpec"]["fallback"] = {"failureThreshold": 3, "replicas": 2}
    with pytest.raises(jsonschema.ValidationError, match="fallback"):
        validate(iec, _pinned(config))


@pytest.fixture
def autoscaled_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`--env dev` loads dev with an autoscaled endpoint; the lock goes to a temporary folder."""
    monkeypatch.setattr(runtime, "load_config", lambda env: _config())
    monkeypatch.setattr(render_module, "LOCK_DIR", tmp_path / "locks")


@mock_aws
@pytest.mark.usefixtures("autoscaled_env")
def test_hpkv_manifests_reads_the_workspace_and_before_a_deploy_exits_2(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    result = CliRunner().invoke(cli.app, ["manifests", "--env", "dev", "--out", str(out)])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert "the stack does not exist" in line and "make deploy ENV=dev" in line
    assert result.stdout == "" and not out.exists()
    _stack(_config(), {WORKSPACE_ID_OUTPUT: WORKSPACE.workspace_id})
    result = CliRunner().invoke(cli.app, ["manifests", "--env", "dev", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert WORKSPACE.query_address in (out / "60-endpoints.yaml").read_text()
