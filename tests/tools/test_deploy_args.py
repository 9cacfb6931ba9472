"""`make deploy` imports adopted add-ons. Double: none (config parsing, and `make -n`, which
prints the deploy recipe without running it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from infra.config import parse_config
from tests.support.config import EXISTING_GROUPS, QUICK_INSTALL_CLUSTER
from tools.deploy_args import IMPORT_EXISTING, deploy_args, main

REPO = Path(__file__).resolve().parents[2]


def _raw(addons: dict[str, object]) -> dict[str, object]:
    return {
        "environment": "qi",
        "account": "111122223333",
        "existing_cluster": dict(QUICK_INSTALL_CLUSTER),
        "hyperpod": EXISTING_GROUPS,
        "addons": addons,
    }


def test_adopt_adds_the_import_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "qi.yaml").write_text(yaml.safe_dump(_raw({"cert_manager": {"mode": "adopt"}})))
    assert main(["--env", "qi", "--config-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.split() == [IMPORT_EXISTING]


def test_create_and_skip_add_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "qi.yaml").write_text(yaml.safe_dump(_raw({"cert_manager": {"mode": "skip"}})))
    assert main(["--env", "qi", "--config-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.split() == []
    assert deploy_args(parse_config(_raw({"s3_csi": {"mode": "create"}}), "t")) == []


def test_a_bad_config_stops_the_deploy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "qi.yaml").write_text(yaml.safe_dump(_raw({"cert_manager": {"mode": "own"}})))
    assert main(["--env", "qi", "--config-dir", str(tmp_path)]) == 2
    assert "addons.cert_manager.mode" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_deploy_passes_the_flags_to_cdk_deploy() -> None:
    """The recipe as make would run it (``-n``: printed, not run)."""
    printed = subprocess.run(
        ["make", "-n", "deploy", "ENV=qi"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    recipe = printed[printed.index("import=$(") :]
    assert "-m tools.deploy_args --env qi) &&" in recipe
    assert "npx cdk deploy --all --concurrency 4 -c env=qi $import " in recipe
