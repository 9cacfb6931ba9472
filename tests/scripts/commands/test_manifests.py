"""`hpkv manifests` (what `make manifests` runs): what it writes, prints and refuses, and where
the lock goes.

No double: the charts are rendered by cdk8s and the real renderer into a temporary folder, with the
lock redirected there so the committed lock stays as is."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from k8s import render as render_module
from k8s.render import KYVERNO_VALUES
from scripts.cli import app


@pytest.fixture(autouse=True)
def locks_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command also writes the environment's lock; keep it out of the repository's k8s/locks."""
    monkeypatch.setattr(render_module, "LOCK_DIR", tmp_path / "locks")


def test_it_writes_the_environment_and_prints_each_file_written(
    tmp_path: Path,
) -> None:
    out = tmp_path / "dist"
    result = CliRunner().invoke(app, ["manifests", "--env", "dev", "--out", str(out)])
    assert result.exit_code == 0, result.output
    printed = result.stdout.splitlines()
    manifests = sorted(
        str(p) for p in out.glob("*.yaml") if p.name not in ("kustomization.yaml", KYVERNO_VALUES)
    )
    assert sorted(printed) == manifests and len(manifests) > 5
    assert (out / "kustomization.yaml").is_file() and (out / "README.md").is_file()


def test_without_out_it_writes_dist_env_under_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["manifests", "--env", "test"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "dist" / "test" / "kustomization.yaml").is_file()
    printed = result.stdout.splitlines()
    assert printed and all(line.startswith("dist/test/") for line in printed)


def test_an_unknown_environment_is_one_line_on_stderr_and_exit_2(
    tmp_path: Path,
) -> None:
    result = CliRunner().invoke(app, ["manifests", "--env", "nosuch", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: config: env = 'nosuch': allowed: dev, prod, test; fix: name one")
    assert not any(tmp_path.glob("*.yaml"))


def test_without_env_it_writes_dev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["manifests"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "dist" / "dev" / "kustomization.yaml").is_file()


def test_help_says_what_it_does() -> None:
    result = CliRunner().invoke(app, ["manifests", "--help"])
    assert result.exit_code == 0
    assert "Write the Kubernetes layer as plain YAML for kubectl or GitOps" in result.stdout
