"""`tools/ci_env.py`: what the CI deploy job reads from config (the role, region and cluster)."""

from __future__ import annotations

import pytest

from tools.ci_env import main as ci_env


def test_ci_env_prints_the_role_named_in_config(capsys: pytest.CaptureFixture[str]) -> None:
    # prod.yaml ships without a deploy role: the job must fail with one clear line.
    assert ci_env(["--env", "test", "--pipeline-env", "prod"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: config/prod.yaml: pipeline.github_actions.deploy_role_name")
    assert "\n" not in err
