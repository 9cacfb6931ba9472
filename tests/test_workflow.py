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
