"""`make manifests` (``python -m k8s.render``): what it writes, prints and refuses, and the lock
it records."""

from __future__ import annotations

from pathlib import Path

import pytest

from k8s import render as render_module
from k8s.render import LOCK_DIR, main, render
from k8s.render import __doc__ as RENDER_DOC


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
    printed = capsys.readouterr().out.splitlines()
    assert printed and all(line.startswith("dist/test/") for line in printed)


def test_an_unknown_environment_is_one_line_on_stderr_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--env", "nosuch", "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("config: env = 'nosuch': allowed: dev, prod, test; fix: name one of")
    assert not any(tmp_path.glob("*.yaml"))


def test_without_env_it_writes_dev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([]) == 0
    assert (tmp_path / "dist" / "dev" / "kustomization.yaml").is_file()


def test_help_says_what_it_does(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    assert (RENDER_DOC or "").splitlines()[0] in capsys.readouterr().out


def test_the_notes_give_each_file_its_sync_wave_in_apply_order(tmp_path: Path) -> None:
    files = render("dev", tmp_path / "out", lock_dir=tmp_path / "locks")
    notes = (tmp_path / "out" / "README.md").read_text()
    rows = [f"| `{f.name}` | {wave} |" for wave, f in enumerate(files)]
    assert "\n".join(rows) in notes


def test_a_render_removes_the_manifests_a_previous_render_left(tmp_path: Path) -> None:
    """A file of a chart that is off now (e.g. Curvine's after a switch to FSx) must not stay
    where `kubectl apply -k` or Argo CD would still apply it."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "20-curvine.yaml").write_text("kind: Stale\n")
    (out / "99-old.yaml").write_text("kind: Stale\n")
    files = render("dev", out, lock_dir=tmp_path / "locks")
    assert sorted(p.name for p in out.glob("*.yaml")) == sorted(
        [f.name for f in files] + ["kustomization.yaml"]
    )
    assert "Stale" not in "".join(p.read_text() for p in out.glob("*.yaml"))


@pytest.mark.parametrize("env", ["dev", "test", "prod"])
def test_rendering_a_shipped_environment_rewrites_its_committed_lock_byte_for_byte(
    env: str, tmp_path: Path
) -> None:
    """The lock records what may not change after a first deploy; `make manifests` writes it
    where it is asked to (creating the folder), and for a shipped environment writes exactly the
    committed file, so rendering leaves no diff in git."""
    locks = tmp_path / "a" / "locks"
    render(env, tmp_path / "out", lock_dir=locks)
    assert (locks / f"{env}.json").read_text() == (LOCK_DIR / f"{env}.json").read_text()
