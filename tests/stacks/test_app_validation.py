"""Whole-app checks on the synthesized assembly: cfn-lint, cdk-nag, determinism, pinned IDs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk import Stack
from aws_cdk import aws_s3 as s3

from infra.cdk.context import new_app
from infra.cdk.nag import enable_checks
from infra.cdk.validation import templates_in
from infra.config import load_config
from tests.support import background
from tests.support.synth import Synth, synth

# Stateful resources: a changed logical ID makes CloudFormation replace (and lose) them.
PINNED_LOGICAL_IDS = {
    "eks": {
        "EksClusterB2BDED5B": "AWS::EKS::Cluster",
        "EksSecretsKey89C78FFD": "AWS::KMS::Key",
    },
    "hyperpod": {
        "HyperPodCluster11759092": "AWS::SageMaker::Cluster",
        "LifecycleStorageBucket194C4B86": "AWS::S3::Bucket",
        "LifecycleStorageAccessLogs2426CBB9": "AWS::S3::Bucket",
    },
    "network": {
        "NetworkVpc7FB7348F": "AWS::EC2::VPC",
        "NetworkHyperPodSubnetA76FCEC8": "AWS::EC2::Subnet",
    },
}


@pytest.mark.background
@pytest.mark.parametrize("fixture", ["dev", "existing"])
def test_cfn_lint_has_no_errors(fixture: str, request: pytest.FixtureRequest) -> None:
    result: Synth = request.getfixturevalue(fixture)
    templates = templates_in(result.outdir)
    assert templates
    for template in templates:
        errors = background.lint_errors(template, result.config.region)
        assert errors == [], f"{template.name}: {errors}"


def test_cdk_nag_fails_the_synth_on_an_unacknowledged_finding(tmp_path: Path) -> None:
    """The dev and existing fixtures synthesized, so they have no finding; this proves the
    checks are live: the same wiring rejects a bucket without access logs."""

    app = new_app(str(tmp_path))  # as app.py makes it: the built-in validator off
    s3.Bucket(Stack(app, "Probe"), "Unlogged", enforce_ssl=True)
    enable_checks(app)
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    rules = {v["ruleName"] for p in report["pluginReports"] for v in p["violations"]}
    assert "AwsSolutions-S1" in rules


def test_every_acknowledgement_names_rule_and_reason(dev: Synth) -> None:
    acknowledged = 0
    for stack in dev.stacks.stacks:
        for construct in stack.node.find_all():
            for entry in construct.node.metadata:
                if entry.type != "aws:cdk:acknowledged-rules":
                    continue
                for rule, reason in entry.data.items():
                    acknowledged += 1
                    assert rule.strip(), construct.node.path
                    assert len(reason) > 20, (construct.node.path, rule)
    assert acknowledged > 10


@pytest.mark.parametrize("stack,ids", sorted(PINNED_LOGICAL_IDS.items()))
def test_stateful_logical_ids_are_pinned(dev: Synth, stack: str, ids: dict[str, str]) -> None:
    resources = dev.template_json(stack)["Resources"]
    for logical_id, type_ in ids.items():
        assert resources.get(logical_id, {}).get("Type") == type_, logical_id


def test_cfn_lint_is_the_only_template_validator(dev: Synth) -> None:
    """aws-cdk-lib's built-in validator (cfn-lint's rules in WebAssembly, warnings only) is off:
    it doubled the synth's time for what cfn-lint, above, already checks."""
    report = json.loads((dev.outdir / "validation-report.json").read_text())
    plugins = {r["pluginName"] for r in report["pluginReports"]}
    assert "CloudFormation Validate" not in plugins


def test_synth_is_deterministic(dev: Synth, tmp_path: Path) -> None:
    again = synth(load_config("dev"), tmp_path / "again")
    for template in templates_in(dev.outdir):
        assert (again.outdir / template.name).read_text() == template.read_text(), template.name


def test_every_taggable_resource_carries_project_and_environment(dev: Synth) -> None:
    cluster = dev.template_json("hyperpod")["Resources"]["HyperPodCluster11759092"]
    tags = {t["Key"]: t["Value"] for t in cluster["Properties"]["Tags"]}
    assert tags["project"] == "hyperpod-kvcache"
    assert tags["environment"] == "dev"
