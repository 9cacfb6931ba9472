"""Synthesize an environment once and read its templates back (shared by the synth tests)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import App
from aws_cdk.assertions import Template

from infra.cdk_context import cdk_json_context
from infra.config import AppConfig, load_config, parse_config
from infra.nag import enable_checks
from stacks.composition import EnvironmentStacks, compose

FIXTURE_CHART = Path(__file__).parent / "fixtures" / "hyperpod-chart"


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
    app = App(context=cdk_json_context(), outdir=str(outdir))
    stacks = compose(app, config, chart_dir=chart_dir)
    enable_checks(app)
    app.synth()
    return Synth(config=config, outdir=outdir, stacks=stacks)


def dev_config() -> AppConfig:
    return load_config("dev")


def existing_cluster_config() -> AppConfig:
    import yaml

    from infra.config.loader import CONFIG_DIR

    raw = yaml.safe_load((CONFIG_DIR / "dev.yaml").read_text())
    raw["existing_cluster"] = {
        "eks_cluster_name": "team-eks",
        "hyperpod_cluster_name": "team-hyperpod",
        "hyperpod_cluster_arn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef123456",
        "kubectl_role_arn": "arn:aws:iam::111122223333:role/team-kubectl",
        "oidc_provider_arn": "arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-west-2."
        "amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE",
    }
    return parse_config(raw, "config/dev.yaml (existing-cluster variant)", "dev")
