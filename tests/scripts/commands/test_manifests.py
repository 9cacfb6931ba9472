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


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("argv", "theirs"),
    [
        # `hpkv manifests --out "$OUT"` with OUT unset, run in a checkout: the working folder.
        (["--out", "."], {"README.md": b"# hyperpod-kvcache\n", "app.py": b"print()\n"}),
        # Pointed at the root of a GitOps repository.
        (
            ["--out", "."],
            {
                "README.md": b"# fleet\n",
                "kustomization.yaml": b"resources: []\n",
                ".git/HEAD": b"ref: refs/heads/main\n",
            },
        ),
    ],
    ids=["checkout", "gitops-root"],
)
def test_a_folder_of_someone_elses_files_is_refused_in_one_line_and_left_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], theirs: dict[str, bytes]
) -> None:
    for name, content in theirs.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(content)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["manifests", "--env", "dev", *argv])
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        "error: --out = .: allowed: a new or empty folder, or one only hpkv wrote into; it holds "
    ), line
    assert "README.md" in line and "fix: give --out a new folder" in line
    assert _tree(tmp_path) == theirs and result.stdout == ""


def test_an_empty_out_is_refused_as_what_an_unset_variable_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "README.md").write_text("# mine\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["manifests", "--out", ""])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        "error: --out = '': allowed: a path (not empty); an empty or blank "
        "value is what an unset shell variable gives; fix:"
    ), line
    assert _tree(tmp_path) == {"README.md": b"# mine\n"}


def test_a_rerun_into_its_own_output_works_and_an_edit_there_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    first = CliRunner().invoke(app, ["manifests", "--out", str(out)])
    again = CliRunner().invoke(app, ["manifests", "--out", str(out)])
    assert (first.exit_code, again.exit_code) == (0, 0), again.output
    notes = out / "README.md"
    notes.write_text(notes.read_text() + "\nOur cluster's own steps.\n")
    before = _tree(out)
    edited = CliRunner().invoke(app, ["manifests", "--out", str(out)])
    assert edited.exit_code == 2
    (line,) = edited.stderr.splitlines()
    assert "README.md changed after hpkv wrote it" in line, line
    assert _tree(out) == before
