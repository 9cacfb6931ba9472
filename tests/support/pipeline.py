"""The delivery pipeline as the pipeline tests synthesize it (prod, with the nightly recreate
and the GitHub deploy role), and what they read off its template."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_cdk import Environment

from infra.cdk.context import new_app
from infra.cdk.nag import enable_checks
from infra.config import load_config, parse_config
from stacks.pipeline_stack import PipelineStack
from tests.support.config import env_raw

PIPELINE_STACK = "hyperpod-kvcache-pipeline"
CONNECTION = (
    "arn:aws:codeconnections:us-west-2:111122223333:connection/12345678-1234-1234-1234-123456789012"
)


def prod_with_pipeline(**pipeline: Any) -> dict[str, Any]:
    raw = env_raw("prod")
    raw["pipeline"] = {
        "enabled": True,
        "connection_arn": CONNECTION,
        "repository": "example-org/hyperpod-kvcache",
        **pipeline,
    }
    return raw


def synth_pipeline(outdir: Path) -> None:
    """prod's pipeline with the nightly recreate and a GitHub deploy role, synthesized into
    ``outdir`` with cdk-nag on."""
    config = parse_config(
        prod_with_pipeline(
            nightly_recreate=True,
            github_actions={"deploy_role_name": "hyperpod-kvcache-github-deploy"},
        ),
        "config/prod.yaml",
        "prod",
    )
    app = new_app(str(outdir))
    PipelineStack(
        app,
        PIPELINE_STACK,
        config=config,
        test_config=load_config("test"),
        env=Environment(account=config.account, region=config.region),
    )
    enable_checks(app)  # raises on any unacknowledged cdk-nag finding
    app.synth()


def pipeline_files(outdir: Path) -> dict[str, Any]:
    """What the pipeline tests read of ``synth_pipeline``'s assembly: its template path, the
    template and the outdir."""
    path = outdir / f"{PIPELINE_STACK}.template.json"
    return {"path": path, "template": json.loads(path.read_text()), "outdir": outdir}


def nightly_statements(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    policies = [
        r["Properties"]["PolicyDocument"]["Statement"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy"
        and any(
            s.get("Sid") == "SweepLogGroups" for s in r["Properties"]["PolicyDocument"]["Statement"]
        )
    ]
    assert len(policies) == 1
    return {s.get("Sid", ""): s for s in policies[0]}
