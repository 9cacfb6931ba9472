"""The GitHub Actions workflow parses and runs the README's commands; deploys use OIDC."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config.loader import available_environments

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    return data


def runs(job: dict[str, Any]) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def test_pull_requests_run_the_readme_commands_for_every_environment(
    workflow: dict[str, Any],
) -> None:
    readme = (ROOT / "README.md").read_text()
    commands = runs(workflow["jobs"]["test"])
    assert "make test" in commands and "make test" in readme
    expected = [f"make synth ENV={env}" for env in available_environments()]
    assert sorted(c for c in commands if c.startswith("make synth")) == expected
    assert "make synth" in readme
    # `on:` parses as True in YAML 1.1
    assert "pull_request" in workflow[True]


def test_main_deploys_through_oidc_without_keys(workflow: dict[str, Any]) -> None:
    job = workflow["jobs"]["deploy-test"]
    assert job["permissions"]["id-token"] == "write"
    assert "refs/heads/main" in job["if"]
    creds = next(s for s in job["steps"] if "configure-aws-credentials" in s.get("uses", ""))
    assert creds["with"]["role-to-assume"] == "${{ steps.target.outputs.role_arn }}"
    text = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    assert "AWS_ACCESS_KEY_ID" not in text and "secrets." not in text
    assert "make deploy ENV=test" in runs(job)


def test_pull_requests_run_make_lint_with_node_for_its_synth(workflow: dict[str, Any]) -> None:
    """`make lint` (ruff, ruff format, mypy, checkov) runs on every pull request; it synthesizes
    dev first when cdk.out/ is missing, which needs Node.js (jsii) beside Python."""
    jobs = [job for job in workflow["jobs"].values() if "make lint" in runs(job)]
    assert jobs, "no job runs make lint"
    (job,) = jobs
    assert "if" not in job, "make lint must run on pull requests too"
    uses = [step.get("uses", "") for step in job["steps"]]
    assert any(u.startswith("actions/setup-python") for u in uses)
    assert any(u.startswith("actions/setup-node") for u in uses)
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    for tool in ("ruff check", "ruff format --check", "mypy", "checkov"):
        assert tool in recipe, f"make lint does not run {tool}"


def test_the_test_job_installs_promtool_and_shellcheck_before_the_tests(
    workflow: dict[str, Any],
) -> None:
    """Their tests skip, saying why, where the tools are absent: CI must have them so the alert
    rules are evaluated and the lifecycle script is linted."""
    commands = runs(workflow["jobs"]["test"])
    install = next((i for i, c in enumerate(commands) if "apt-get install" in c), None)
    assert install is not None, "the test job installs nothing with apt-get"
    packages = commands[install].split("apt-get install", 1)[1].split()
    assert {"prometheus", "shellcheck"} <= set(packages)
    assert install < commands.index("make test")


def test_ci_run_lints_what_it_synthesized() -> None:
    """`.ci/run` (a clean clone's CI entry point) runs the tests and the runtime layers (the
    server layer one image at a time, for every image with server requirements), synthesizes
    the default environment, and lints it."""
    lines = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip().startswith("make ")
    ]
    assert lines == [
        "make test",
        "make test-runtime",
        'make test-server SERVER_IMAGES="$image"',
        "make synth",
        "make lint",
    ]
    assert (
        "for requirements in tests/server/requirements/*.txt; do"
        in (ROOT / ".ci" / "run").read_text()
    )
