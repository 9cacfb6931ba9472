"""`make pipeline-synth`, which `make help` offers, on the shipped config: it synthesizes the
pipeline when the environment defines one, and otherwise says in one line what it needs, before
it deletes anything in cdk.out/.

Double: a virtualenv folder of this test (VENV=...), never the repository's .venv: its install
stamp is newer than every prerequisite and its `python` runs this interpreter."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from infra.config import load_config
from tools.pipeline_ready import main

ROOT = Path(__file__).resolve().parents[2]


def _venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    stamp = venv / ".installed"
    stamp.touch()
    newest = max(
        p.stat().st_mtime for p in [*ROOT.glob("requirements*.txt"), ROOT / "pyproject.toml"]
    )
    os.utime(stamp, (newest + 60, newest + 60))
    return venv


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_pipeline_synth_on_the_shipped_prod_config_builds_or_says_what_it_needs(
    tmp_path: Path,
) -> None:
    out = tmp_path / "cdk.out"
    out.mkdir()
    (out / "manifest.json").write_text("{}")  # a user's earlier synth
    env = {**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
    proc = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "pipeline-synth",
            "ENV=prod",
            f"VENV={_venv(tmp_path)}",
            f"OUT={out}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env=env,
    )
    if load_config("prod").pipeline.enabled:
        assert proc.returncode == 0, proc.stderr
        assert list(out.glob("*pipeline*.template.json")), sorted(p.name for p in out.iterdir())
        return
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert "config/prod.yaml" in errors[0] and "pipeline.enabled" in errors[0]
    assert "connection_arn" in errors[0] and "repository" in errors[0]
    assert proc.returncode == 2  # GNU make's code for a failed recipe
    assert (out / "manifest.json").is_file(), "the earlier synth was deleted"


def test_a_config_without_a_pipeline_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert not load_config("dev").pipeline.enabled
    assert main(["--env", "dev"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "config/dev.yaml" in err


def test_an_invalid_environment_name_exits_2_with_the_config_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--env", "nosuch"]) == 2
    assert capsys.readouterr().err.startswith("error: ")
