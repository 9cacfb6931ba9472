"""The delivery pipeline stack: stages and their order, the approval before prod, the synth
step running the README's commands, the nightly recreate and the GitHub deploy role."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from aws_cdk import Environment

import app
from infra.cdk.context import new_app
from infra.cdk.validation import errors_only, lint_template
from infra.config import ConfigError, load_config, loader, parse_config
from infra.config.rules_pipeline import check_pipeline_reaches_test
from infra.constructs.pipeline import ENVIRONMENT_STACKS
from infra.environment.layout import STACK_SUFFIXES, dependencies
from stacks.pipeline_stack import PipelineStack
from tests.support.config import env_raw
from tests.support.pipeline import nightly_statements, prod_with_pipeline

OFFICE = "203.0.113.0/24"


def stages(template: dict[str, Any]) -> list[dict[str, Any]]:
    pipelines = [
        r for r in template["Resources"].values() if r["Type"] == "AWS::CodePipeline::Pipeline"
    ]
    assert len(pipelines) == 1
    result: list[dict[str, Any]] = pipelines[0]["Properties"]["Stages"]
    return result


def action_names(stage: dict[str, Any]) -> list[str]:
    return [a["Name"] for a in sorted(stage["Actions"], key=lambda a: a["RunOrder"])]


def test_stage_order_ends_with_approval_then_prod(pipeline: dict[str, Any]) -> None:
    names = [s["Name"] for s in stages(pipeline["template"])]
    assert names[:3] == ["Source", "Build", "UpdatePipeline"]
    assert names[-2:] == ["Test", "Prod"]


def test_test_stage_deploys_in_order_then_verifies(pipeline: dict[str, Any]) -> None:
    """Each stack after the stacks infra/environment/layout.py says it needs, independent stacks
    side by side (the same run order), the verification last."""
    test = next(s for s in stages(pipeline["template"]) if s["Name"] == "Test")
    actions = sorted(test["Actions"], key=lambda a: a["RunOrder"])
    run_order: dict[tuple[str, str], int] = {}
    for a in actions:
        if a["ActionTypeId"]["Provider"] == "CloudFormation":
            config = a["Configuration"]
            run_order[(config["StackName"], config["ActionMode"])] = a["RunOrder"]
    prefix = "hyperpod-kvcache-test-"
    deployed = {
        name.removeprefix(prefix) for name, mode in run_order if mode == "CHANGE_SET_REPLACE"
    }
    assert deployed == set(STACK_SUFFIXES)
    for suffix, deps in dependencies(deployed).items():
        for dep in deps:
            prepare = run_order[(prefix + suffix, "CHANGE_SET_REPLACE")]
            assert prepare > run_order[(prefix + dep, "CHANGE_SET_EXECUTE")], (suffix, dep)
    execute = {s: run_order[(prefix + s, "CHANGE_SET_EXECUTE")] for s in deployed}
    assert execute["nodes"] == execute["tiered-storage"]  # side by side after the cluster
    assert execute["addons"] == execute["kvcache"]
    assert actions[-1]["Name"] == "VerifyTest"


def test_manual_approval_comes_before_any_prod_deploy(pipeline: dict[str, Any]) -> None:
    prod = next(s for s in stages(pipeline["template"]) if s["Name"] == "Prod")
    actions = sorted(prod["Actions"], key=lambda a: a["RunOrder"])
    approval = [a for a in actions if a["ActionTypeId"]["Category"] == "Approval"]
    assert [a["Name"] for a in approval] == ["PromoteToProd"]
    first_deploy = min(a["RunOrder"] for a in actions if a["ActionTypeId"]["Category"] == "Deploy")
    assert approval[0]["RunOrder"] < first_deploy


def _buildspec(template: dict[str, Any], marker: str) -> str:
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::CodeBuild::Project":
            spec = json.dumps(resource["Properties"]["Source"].get("BuildSpec", ""))
            if marker in spec:
                return spec
    raise AssertionError(f"no CodeBuild project runs {marker!r}")


def test_synth_step_runs_the_readme_commands(pipeline: dict[str, Any], repo_root: Path) -> None:
    spec = _buildspec(pipeline["template"], "make pipeline-synth")
    readme = (repo_root / "README.md").read_text()
    for command in ("make test", "make synth"):
        assert command in readme
        assert command in spec
    assert spec.index("make test") < spec.index("make pipeline-synth ENV=prod")


def test_nightly_recreate_is_scheduled(pipeline: dict[str, Any]) -> None:
    rules = [
        r["Properties"]
        for r in pipeline["template"]["Resources"].values()
        if r["Type"] == "AWS::Events::Rule"
        and r["Properties"].get("ScheduleExpression") == "cron(0 3 * * ? *)"
    ]
    assert len(rules) == 1
    spec = _buildspec(pipeline["template"], "scripts recreate")
    assert "--env test --yes" in spec


def test_github_deploy_role_trusts_only_the_branch(pipeline: dict[str, Any]) -> None:
    roles = [
        r["Properties"]
        for r in pipeline["template"]["Resources"].values()
        if r["Type"] == "AWS::IAM::Role"
        and r["Properties"].get("RoleName") == "hyperpod-kvcache-github-deploy"
    ]
    assert len(roles) == 1
    condition = roles[0]["AssumeRolePolicyDocument"]["Statement"][0]["Condition"]
    assert condition["StringEquals"] == {
        "token.actions.githubusercontent.com:aud": "sts.amazonaws.com",
        "token.actions.githubusercontent.com:sub": "repo:example-org/hyperpod-kvcache:ref:"
        "refs/heads/main",
    }


def test_pipeline_template_passes_cfn_lint(pipeline: dict[str, Any]) -> None:
    assert errors_only(lint_template(pipeline["path"], ["us-west-2"])) == []


def test_no_schedule_unless_enabled(tmp_path: Path) -> None:
    config = parse_config(prod_with_pipeline(), "config/prod.yaml", "prod")
    app = new_app(str(tmp_path))
    stack = PipelineStack(
        app,
        "p",
        config=config,
        test_config=load_config("test"),
        env=Environment(account=config.account, region=config.region),
    )
    assert stack.delivery.nightly is None


def _resources(statement: dict[str, Any]) -> list[str]:
    res = statement["Resource"]
    return [json.dumps(r) for r in (res if isinstance(res, list) else [res])]


def test_nightly_role_deletes_only_the_test_environment(pipeline: dict[str, Any]) -> None:
    assert ENVIRONMENT_STACKS == STACK_SUFFIXES
    test = load_config("test")
    by_sid = nightly_statements(pipeline["template"])
    stacks = " ".join(_resources(by_sid["DeleteEnvironmentStacks"]))
    for suffix in STACK_SUFFIXES:
        assert f"stack/{test.stack_prefix}-{suffix}/*" in stacks
    assert f"{test.stack_prefix}-*" not in stacks  # would match test2, test-west, testbox
    for sid in ("SweepTaggedVolumes", "SweepClusterVolumes"):
        assert by_sid[sid]["Action"] == "ec2:DeleteVolume" and by_sid[sid]["Condition"]
    tagged = by_sid["SweepTaggedVolumes"]["Condition"]["StringEquals"]
    assert tagged == {
        "aws:ResourceTag/project": test.project,
        "aws:ResourceTag/environment": test.environment,
    }
    groups = " ".join(_resources(by_sid["SweepLogGroups"]))
    assert f"log-group:*{test.stack_prefix}*" not in groups
    assert f"/aws/eks/{test.eks.cluster_name}/cluster:*" in groups
    others = [s for s in by_sid.values() if "ec2:DeleteVolume" in json.dumps(s.get("Action"))]
    assert all(s.get("Condition") for s in others)


def test_nightly_role_deletes_network_leftovers_only_by_tag(pipeline: dict[str, Any]) -> None:
    """Every EC2 delete is conditioned; GuardDuty's endpoint and security group by the tag
    GuardDuty puts on them; no network-interface delete at all (ENIs carry no tags, and the VPC
    id changes with every recreate)."""
    by_sid = nightly_statements(pipeline["template"])
    deletes = [s for s in by_sid.values() if "ec2:Delete" in json.dumps(s.get("Action"))]
    assert deletes and all(s.get("Condition") for s in deletes)
    assert "ec2:DeleteNetworkInterface" not in json.dumps(list(by_sid.values()))
    sweep = by_sid["SweepGuardDutyNetworkLeftovers"]
    assert sorted(sweep["Action"]) == ["ec2:DeleteSecurityGroup", "ec2:DeleteVpcEndpoints"]
    assert sweep["Condition"] == {"StringEquals": {"aws:ResourceTag/GuardDutyManaged": "true"}}
    assert all(r.endswith(('vpc-endpoint/*"', 'security-group/*"')) for r in _resources(sweep))


def _test_env(**eks: Any) -> dict[str, Any]:
    raw = env_raw("test")
    raw["eks"] = {**raw["eks"], **eks}
    return raw


def test_a_narrowed_test_endpoint_with_the_nightly_recreate_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """config/test.yaml advises narrowing eks.public_access_cidrs; the nightly recreate and
    the verify step call that endpoint from CodeBuild outside the VPC (the recreate deletes the
    VPC), so the pipeline's synth refuses the pair before it builds anything."""
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / "prod.yaml").write_text(yaml.safe_dump(prod_with_pipeline(nightly_recreate=True)))
    (folder / "test.yaml").write_text(yaml.safe_dump(_test_env(public_access_cidrs=[OFFICE])))
    monkeypatch.setattr(loader, "CONFIG_DIR", folder)
    with pytest.raises(SystemExit) as done:
        app.main(["-c", "env=prod", "-c", "pipeline=true", "--outdir", str(tmp_path / "out")])
    assert done.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"error: config/test.yaml: eks.public_access_cidrs = ['{OFFICE}']: allowed: [] or a "
        "list with 0.0.0.0/0 while config/prod.yaml's pipeline.nightly_recreate and "
        "pipeline.verify_test_environment call the cluster's API: CodeBuild runs them outside "
        "the VPC, since the nightly recreate deletes the test environment's VPC, and reaches "
        "the public API endpoint from CodeBuild's addresses; fix: remove "
        "eks.public_access_cidrs from config/test.yaml, or set pipeline.nightly_recreate and "
        "pipeline.verify_test_environment to false in config/prod.yaml"
    )
    assert not (tmp_path / "out" / "manifest.json").exists()


@pytest.mark.parametrize(
    ("pipeline", "eks", "field"),
    [
        ({}, {"public_access_cidrs": [OFFICE]}, "eks.public_access_cidrs"),
        (
            {"verify_test_environment": False, "nightly_recreate": True},
            {"endpoint_access": "private"},
            "eks.endpoint_access",
        ),
        ({"verify_test_environment": False}, {"public_access_cidrs": [OFFICE]}, None),
        ({}, {"public_access_cidrs": [OFFICE, "0.0.0.0/0"]}, None),
        ({"nightly_recreate": True}, {"public_access_cidrs": []}, None),
    ],
)
def test_the_test_endpoint_must_answer_the_pipelines_codebuild_steps(
    pipeline: dict[str, Any], eks: dict[str, Any], field: str | None
) -> None:
    config = parse_config(prod_with_pipeline(**pipeline), "config/prod.yaml", "prod")
    test = parse_config(_test_env(**eks), "config/test.yaml", "test")
    if field is None:
        check_pipeline_reaches_test(config, test)
        return
    with pytest.raises(ConfigError) as err:
        check_pipeline_reaches_test(config, test)
    assert err.value.field == field and err.value.source == "config/test.yaml"
    assert "\n" not in str(err.value)


def _ci_versions(repo_root: Path) -> dict[str, str]:
    """The Python and Node.js CI tests with (every job of .github/workflows/ci.yml agrees)."""
    workflow = yaml.safe_load((repo_root / ".github" / "workflows" / "ci.yml").read_text())
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    found = {
        kind: {
            s["with"][f"{kind}-version"]
            for s in steps
            if s.get("uses", "").startswith(f"actions/setup-{kind}@")
        }
        for kind in ("python", "node")
    }
    assert all(len(v) == 1 for v in found.values()), found
    return {"python": found["python"].pop(), "nodejs": found["node"].pop()}


def test_every_build_pins_the_python_and_node_the_project_is_tested_with(
    pipeline: dict[str, Any], repo_root: Path
) -> None:
    """The nightly run, the synth step (make test, make synth) and the verify step: each
    buildspec's runtime-versions are CI's, and Python is the one pyproject.toml targets."""
    want = _ci_versions(repo_root)
    pyproject = tomllib.loads((repo_root / "pyproject.toml").read_text())
    assert want["python"] == pyproject["tool"]["mypy"]["python_version"]
    specs = {
        name: json.loads(r["Properties"]["Source"]["BuildSpec"])
        for name, r in pipeline["template"]["Resources"].items()
        if r["Type"] == "AWS::CodeBuild::Project"
        and isinstance(r["Properties"]["Source"].get("BuildSpec"), str)
    }
    commands = {name: json.dumps(spec) for name, spec in specs.items()}
    for step in ("scripts recreate", "make test", "scripts verify"):
        assert any(step in c for c in commands.values()), step
    for name, spec in specs.items():
        assert spec["phases"]["install"]["runtime-versions"] == want, name
