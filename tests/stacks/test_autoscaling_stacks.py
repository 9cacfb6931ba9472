"""Autoscaling in the synthesized templates (aws_cdk.assertions on the session's synths, cfn-lint
in the background): KEDA's role may query the observability workspace and nothing else, and an
autoscaled endpoint's serverAddress is that workspace, carried across stacks by CloudFormation
exports, so the add-ons and endpoints stacks deploy after the observability stack."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match

from infra.environment.layout import dependencies
from tests.support import background
from tests.support.schemas import crd_schema, strict, validate
from tests.support.synth import Synth

APS = ["aps:GetLabels", "aps:GetMetricMetadata", "aps:GetSeries", "aps:QueryMetrics"]


def _exported(s: Synth, import_value: dict[str, Any]) -> Any:
    """What the observability stack exports under the name ``import_value`` imports."""
    name = import_value["Fn::ImportValue"]
    outputs = s.template_json("observability")["Outputs"].values()
    (value,) = [o["Value"] for o in outputs if o.get("Export", {}).get("Name") == name]
    return value


def _workspace_id(s: Synth) -> str:
    (lid,) = s.resources("observability", "AWS::APS::Workspace")
    return lid


def _statements(s: Synth, suffix: str) -> list[dict[str, Any]]:
    return [
        st
        for p in s.resources(suffix, "AWS::IAM::Policy").values()
        for st in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(st: dict[str, Any]) -> list[str]:
    return [st["Action"]] if isinstance(st["Action"], str) else list(st["Action"])


@pytest.mark.parametrize("variant", ["dev", "autoscaled"])
def test_keda_may_query_the_observability_workspace_only(
    variant: str, request: pytest.FixtureRequest
) -> None:
    s: Synth = request.getfixturevalue(variant)
    s.template("addons").has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {"Sid": "PrometheusQueries", "Action": APS, "Effect": "Allow"}
                        )
                    ]
                )
            }
        },
    )
    aps = [st for st in _statements(s, "addons") if any(a.startswith("aps:") for a in _actions(st))]
    assert len(aps) == 1, aps
    assert sorted(_actions(aps[0])) == APS
    resource = aps[0]["Resource"]
    assert _exported(s, resource) == {"Fn::GetAtt": [_workspace_id(s), "Arn"]}


def _endpoint_manifest(s: Synth) -> list[Any]:
    """The endpoints stack's manifest property, an Fn::Join of literal JSON and imports."""
    resources = s.template_json("endpoints")["Resources"].values()
    joins = [
        v
        for r in resources
        for v in r.get("Properties", {}).values()
        if isinstance(v, dict) and "Fn::Join" in v and "InferenceEndpointConfig" in json.dumps(v)
    ]
    assert len(joins) == 1, joins
    parts: list[Any] = joins[0]["Fn::Join"][1]
    return parts


def test_the_server_address_is_the_observability_workspace(autoscaled: Synth) -> None:
    """Substituting what CloudFormation would import gives an object the pinned CRD takes."""
    parts = _endpoint_manifest(autoscaled)
    imports = [p for p in parts if isinstance(p, dict)]
    assert len(imports) == 1, imports
    assert _exported(autoscaled, imports[0]) == {
        "Fn::GetAtt": [_workspace_id(autoscaled), "WorkspaceId"]
    }
    workspace_id = "ws-3f1c2b9e-8d4a-4e6f-9a1b-2c3d4e5f6a7b"
    text = "".join(workspace_id if isinstance(p, dict) else p for p in parts)
    (iec,) = [o for o in json.loads(text) if o["kind"] == "InferenceEndpointConfig"]
    config = autoscaled.config
    validate(iec, strict(crd_schema(config.addons.inference_operator.operator.crd_path, "v1")))
    assert iec["spec"]["autoScalingSpec"]["prometheusTrigger"]["serverAddress"] == (
        f"https://aps-workspaces.{config.region}.amazonaws.com/workspaces/{workspace_id}"
    )


def test_the_workspace_id_is_an_output_for_make_manifests(autoscaled: Synth) -> None:
    autoscaled.template("observability").has_output(
        "WorkspaceId", {"Value": {"Fn::GetAtt": [_workspace_id(autoscaled), "WorkspaceId"]}}
    )


def test_the_stacks_that_name_the_workspace_deploy_after_it(autoscaled: Synth) -> None:
    """The order teardown reads (infra/environment/layout.py) is the one CDK's imports impose."""
    graph = dependencies(autoscaled.stacks.by_suffix)
    for suffix in ("addons", "endpoints"):
        assert "observability" in graph[suffix]
        stack = autoscaled.stacks.by_suffix[suffix]
        assert autoscaled.stacks.by_suffix["observability"] in stack.dependencies


@pytest.mark.background
def test_the_autoscaled_templates_pass_cfn_lint(autoscaled: Synth) -> None:
    templates = sorted(autoscaled.outdir.glob("*.template.json"))
    assert templates
    for template in templates:
        assert background.lint_errors(template, autoscaled.config.region) == [], template.name
