"""Synthesize an environment and read its templates back (shared by the synth tests)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import CfnResource, Stack
from aws_cdk.assertions import Template
from constructs import IConstruct

from infra.cdk.context import new_app
from infra.cdk.deps import NEEDS_METADATA
from infra.cdk.nag import enable_checks
from infra.config import AppConfig
from stacks.composition import EnvironmentStacks, compose
from tests.support.once_per_run import once_per_run

FIXTURE_CHART = Path(__file__).parents[1] / "fixtures" / "hyperpod-chart"


@dataclass
class Synth:
    config: AppConfig
    outdir: Path
    chart_dir: Path | None = FIXTURE_CHART
    composed: EnvironmentStacks | None = field(default=None, repr=False)

    @property
    def stacks(self) -> EnvironmentStacks:
        """The construct tree of the synthesized stacks. A process that reads an assembly another
        xdist worker synthesized (``synth_once``) composes the same config again, without
        writing it: composition is deterministic (test_synth_is_deterministic)."""
        if self.composed is None:
            app = new_app(str(self.outdir.with_name(f"{self.outdir.name}-tree")))
            self.composed = compose(app, self.config, chart_dir=self.chart_dir)
            enable_checks(app)
        return self.composed

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
    return Synth(config=config, outdir=outdir, chart_dir=chart_dir, composed=stacks)


# This process's answers of synth_once, so a fixture made again (a parametrized session fixture
# switching back, a module fixture in another module) keeps its construct tree.
_synthesized: dict[str, Synth] = {}


def synth_once(
    name: str,
    config: AppConfig,
    factory: pytest.TempPathFactory,
    chart_dir: Path | None = FIXTURE_CHART,
) -> Synth:
    """``config`` synthesized once per run (tests/support/once_per_run.py): by the first xdist
    worker asking, read back by the others. The folder is named by ``name`` and a digest of what
    is synthesized, so one name cannot hand out another config's templates."""
    inputs = f"{config.model_dump_json()}\n{chart_dir}".encode()
    key = f"{name}-{hashlib.sha256(inputs).hexdigest()[:12]}"
    if key not in _synthesized:
        made: list[Synth] = []
        outdir = once_per_run(key, factory, lambda out: made.append(synth(config, out, chart_dir)))
        _synthesized[key] = made[0] if made else Synth(config, outdir, chart_dir)
    return _synthesized[key]


# What the layout tests read off a synthesized resource.
TIERED = "Custom::HyperPodTieredStorage"


def needs_of(resource: dict[str, Any]) -> set[str]:
    """The logical IDs a resource's ``needs`` metadata names (infra/cdk/deps.py)."""
    return {n["logicalId"] for n in resource.get("Metadata", {}).get(NEEDS_METADATA, [])}


def logical_id(construct: IConstruct) -> str:
    """The logical ID of the first CloudFormation resource under ``construct``."""
    resource = next(c for c in construct.node.find_all() if isinstance(c, CfnResource))
    return str(Stack.of(resource).resolve(resource.logical_id))
