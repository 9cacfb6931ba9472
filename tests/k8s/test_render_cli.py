"""`make manifests` (``python -m k8s.render``): what it writes, prints and refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from k8s import render as render_module
from k8s.render import main


@pytest.fixture(autouse=True)
def locks_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """render() also writes the environment's lock; keep it out of the repository's k8s/locks."""
    real = render_module.render
    monkeypatch.setattr(render_module, "render",
                        lambda env, out: real(env, out, lock_dir=tmp_path / "locks"))  # fmt: skip


def test_it_writes_the_environment_and_prints_each_file_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "dist"
    assert main(["--env", "dev", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    manifests = sorted(str(p) for p in out.glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(printed) == manifests and len(manifests) > 5
    assert (out / "kustomization.yaml").is_file() and (out / "README.md").is_file()


def test_without_out_it_writes_dist_env_under_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["--env", "test"]) == 0
    assert (tmp_path / "dist" / "test" / "kustomization.yaml").is_file()
    assert all(line.startswith("dist/test/") for line in capsys.readouterr().out.splitlines())


def test_an_unknown_environment_is_one_line_on_stderr_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--env", "nosuch", "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("config: env = 'nosuch': allowed: dev, prod, test; fix: name one of")
    assert not any(tmp_path.glob("*.yaml"))
