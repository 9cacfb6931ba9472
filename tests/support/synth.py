"""Synthesize an environment and read its templates back (shared by the synth tests)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import CfnResource, Stack
from aws_cdk.assertions import Template
from constructs import IConstruct

from infra.cdk.context import new_app
from infra.cdk.deps import NEEDS_METADATA
from infra.cdk.nag import enable_checks
from infra.config import AppConfig
from stacks.composition import EnvironmentStacks, compose

FIXTURE_CHART = Path(__file__).parents[1] / "fixtures" / "hyperpod-chart"


@dataclass
class Synth:
    config: AppConfig
    outdir: Path
    stacks: EnvironmentStacks

    def template_json(self, suffix: str) -> dict[str, Any]:
        path = self.outdir / f"{self.config.stack_prefix}-{suffix}.template.json"
        data: dict[str, Any] = json.loads(path.read_text())
        return data

    def template(self, suffix: str) -> Template:
        return Template.from_json(self.template_json(suffix))

    def resources(self, suffix: str, type_: str) -> dict[str, dict[str, Any]]:
        return {
            k: v for k, v in self.template_json(suffix)["Resources"].items() if v["Type"] == type_
        }


def synth(config: AppConfig, outdir: Path, chart_dir: Path | None = FIXTURE_CHART) -> Synth:
    app = new_app(str(outdir))
    stacks = compose(app, config, chart_dir=chart_dir)
    enable_checks(app)
    app.synth()
    return Synth(config=config, outdir=outdir, stacks=stacks)


# What the layout tests read off a synthesized resource.
TIERED = "Custom::HyperPodTieredStorage"


def needs_of(resource: dict[str, Any]) -> set[str]:
    """The logical IDs a resource's ``needs`` metadata names (infra/cdk/deps.py)."""
    return {n["logicalId"] for n in resource.get("Metadata", {}).get(NEEDS_METADATA, [])}


def logical_id(construct: IConstruct) -> str:
    """The logical ID of the first CloudFormation resource under ``construct``."""
    resource = next(c for c in construct.node.find_all() if isinstance(c, CfnResource))
    return str(Stack.of(resource).resolve(resource.logical_id))
