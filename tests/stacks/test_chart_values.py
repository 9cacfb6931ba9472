"""The HyperPod dependencies chart is installed with values that leave nothing to its guesses.

The chart goes in before any node exists, so whatever its templates would read from a Node (the
health-monitoring agent's Region, and so the registry of its image) falls back to a hard-coded
Region. The chart's real templates at the pinned commit (the fixture's copies, see
tests/fixtures/hyperpod-chart/SOURCES.md), read by ``chart_fallbacks``, against the values in the
synthesized dev template; ``chart_fallbacks``' verdicts are held to the real ``helm template``
of the same templates (tests/support/helm.py), which, like an install before any node exists,
finds no Node.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from aws_cdk import App, Stack

from infra.constructs.hyperpod import chart_values
from tests.doubles.chart_fallbacks import Fallback, unavoided
from tests.support.helm import template
from tests.support.synth import FIXTURE_CHART, Synth

HMA_HELPERS = FIXTURE_CHART / "charts" / "health-monitoring-agent" / "templates" / "_helpers.tpl"


def synthesized_values(result: Synth) -> dict[str, Any]:
    (chart,) = result.resources("hyperpod", "Custom::AWSCDK-EKS-HelmChart").values()
    values: dict[str, Any] = json.loads(chart["Properties"]["Values"])
    return values


def account_map_regions() -> set[str]:
    """Regions the agent's template maps to an image registry account."""
    text = HMA_HELPERS.read_text()
    block = text[text.index("$regionAccountMap := dict") :].split("-}}", 1)[0]
    return set(re.findall(r'"([a-z]{2}-[a-z]+-\d)"\s+"\d{12}"', block))


def left_to_a_guess(values: dict[str, Any], region: str) -> list[Fallback]:
    """The fallbacks that still run. The agent's last one runs only when ``$accountId`` is
    empty, i.e. when the Region is not a key of its account map: not a value, so checked here."""
    left = []
    for fb, _scope in unavoided(FIXTURE_CHART, values):
        if fb.runs_if == ("not $accountId",) and region in account_map_regions():
            continue
        left.append(fb)
    return left


def describe(fallbacks: list[Fallback]) -> str:
    return "\n".join(
        f"{fb.file}:{fb.line} `{fb.action}` runs; any of these true skips it: "
        f"{', '.join(fb.skipped_if) or '(none: a template variable decides)'}"
        for fb in fallbacks
    )


def test_the_fixture_carries_the_charts_fallbacks() -> None:
    """Without values the agent's Region comes from a Node lookup, then us-east-1: the check
    below has something to catch."""
    left = left_to_a_guess({}, "us-west-2")
    actions = [fb.action for fb in left]
    assert any(a.startswith("$nodes := lookup") for a in actions), describe(left)
    assert '$region = "us-east-1"' in actions, describe(left)
    lookup = next(fb for fb in left if "lookup" in fb.action)
    assert lookup.skipped_if == (".Values.region", "and .Values.global .Values.global.region")


def test_no_chart_value_is_left_to_a_node_lookup_or_a_default_region(dev: Synth) -> None:
    left = left_to_a_guess(synthesized_values(dev), dev.config.region)
    assert not left, describe(left)


def test_the_agent_image_region_is_the_stacks_region(dev: Synth) -> None:
    values = synthesized_values(dev)
    assert values["health-monitoring-agent"] == {"region": dev.config.region}
    assert dev.config.region in account_map_regions()
    # As AWS's Terraform module does, the chart's regional values file goes in too.
    regional = FIXTURE_CHART / "regional-values" / f"values-{dev.config.region}.yaml"
    assert values["gpu-operator"] == yaml.safe_load(regional.read_text())["gpu-operator"]
    assert values["cert-manager"] == {"enabled": False}


def test_an_environment_agnostic_region_is_resolved_by_cloudformation() -> None:
    stack = Stack(App(), "Agnostic")
    values = stack.resolve(stack.to_json_string(chart_values(stack.region, FIXTURE_CHART)))
    assert {"Ref": "AWS::Region"} in values["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else "<region>" for p in values["Fn::Join"][1])
    assert json.loads(text)["health-monitoring-agent"] == {"region": "<region>"}
    assert "gpu-operator" not in json.loads(text)  # no file can be chosen for a token


def _agent_regions(helm: Path, values: dict[str, Any]) -> set[str]:
    """The Regions of the agent's image registry in what ``helm template`` renders."""
    objs = template(helm, FIXTURE_CHART, "hyperpod-dependencies", "kube-system", values)
    images = {
        c["image"]
        for o in objs
        if o["kind"] == "DaemonSet"
        for c in o["spec"]["template"]["spec"]["containers"]
    }
    assert images, "the fixture rendered no agent DaemonSet"
    return {
        re.sub(r"^\d{12}\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com/.*$", r"\1", i) for i in images
    }


@pytest.mark.parametrize(
    ("values", "region"),
    [
        ({}, "us-west-2"),
        ({"health-monitoring-agent": {"region": "us-west-2"}}, "us-west-2"),
        ({"global": {"region": "eu-west-1"}}, "eu-west-1"),
        ({"health-monitoring-agent": {"region": "me-south-1"}}, "me-south-1"),  # not in its map
    ],
    ids=["no-values", "agent-region", "global-region", "unmapped-region"],
)
def test_helm_renders_the_stacks_region_exactly_when_the_model_says_no_guess_is_left(
    helm: Path, values: dict[str, Any], region: str
) -> None:
    """Where ``chart_fallbacks`` finds no fallback left, helm's agent image comes from the
    Region's registry; where it finds one, helm's guess (us-east-1) is what the image gets."""
    rendered = _agent_regions(helm, values)
    if left_to_a_guess(values, region):
        assert rendered == {"us-east-1"} != {region}
    else:
        assert rendered == {region}


def test_helm_renders_the_synthesized_values_with_the_stacks_region(helm: Path, dev: Synth) -> None:
    assert _agent_regions(helm, synthesized_values(dev)) == {dev.config.region}
