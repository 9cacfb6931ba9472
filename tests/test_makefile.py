"""The Makefile's install step puts the CLI in .venv, and `make preflight`/`make verify` end with
the CLI's own exit code: GNU make itself always exits 2 when a recipe fails, and names the
recipe's code as `Error <code>`.

Double: a virtualenv folder of this test (VENV=...), never the repository's .venv: its install
stamp is newer than every prerequisite and its `hpkv` is a shell script that records its
arguments and exits with a chosen code."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _venv(tmp_path: Path, code: int) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    hpkv = venv / "bin" / "hpkv"
    hpkv.write_text(f'#!/bin/sh\necho "$@" > "{venv}/argv"\nexit {code}\n')
    hpkv.chmod(0o755)
    stamp = venv / ".installed"
    stamp.touch()
    newest = max(p.stat().st_mtime for p in ROOT.glob("requirements*.txt")) + 60
    newest = max(newest, (ROOT / "pyproject.toml").stat().st_mtime + 60)
    os.utime(stamp, (newest, newest))
    return venv


def _make(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("target", ["preflight", "verify"])
@pytest.mark.parametrize("code", [1, 3, 4])
def test_make_shows_the_clis_exit_code(tmp_path: Path, target: str, code: int) -> None:
    venv = _venv(tmp_path, code)
    proc = _make(target, f"VENV={venv}", "ENV=test")
    assert (venv / "argv").read_text().split() == [target, "--env", "test"]
    assert proc.returncode == 2  # GNU make's own code for a failed recipe
    assert "[Makefile:" in proc.stderr and f"{target}] Error {code}" in proc.stderr


def test_make_preflight_succeeds_when_the_cli_does(tmp_path: Path) -> None:
    proc = _make("preflight", f"VENV={_venv(tmp_path, 0)}")
    assert proc.returncode == 0, proc.stderr


def test_install_puts_the_project_and_hpkv_in_the_venv(tmp_path: Path) -> None:
    """Editable and without dependencies (they are the pinned requirements), redone when
    pyproject.toml changes."""
    venv = _venv(tmp_path, 0)
    assert "is up to date" in _make("-n", f"VENV={venv}", f"{venv}/.installed").stdout
    printed = _make("-n", "-W", "pyproject.toml", f"VENV={venv}", f"{venv}/.installed").stdout
    assert f"{venv}/bin/python -m pip install" in printed
    assert "--no-deps -e ." in printed


def test_make_versions_runs_the_report_and_is_listed_in_help(tmp_path: Path) -> None:
    venv = _venv(tmp_path, 0)
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\necho "$@" > "{venv}/argv"\n')
    python.chmod(0o755)
    assert _make("versions", f"VENV={venv}").returncode == 0
    assert (venv / "argv").read_text().split() == ["-m", "tools.versions"]
    listed = [line.split()[0] for line in _make("help").stdout.splitlines() if line.strip()]
    assert "versions" in listed


def _lint(tmp_path: Path, manifest_age_s: float) -> list[str]:
    """`make lint` with tools that record their arguments, over a cdk.out whose manifest is
    ``manifest_age_s`` older than the newest file a synth reads; the commands that ran."""
    venv = _venv(tmp_path, 0)
    log = tmp_path / "ran"
    for tool in ("python", "ruff", "mypy"):
        script = venv / "bin" / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{log}"\n')
        script.chmod(0o755)
    out = tmp_path / "cdk.out"
    out.mkdir()
    inputs = [ROOT / "app.py", ROOT / "cdk.json"] + [
        p
        for d in ("infra", "stacks", "k8s", "config")
        for p in (ROOT / d).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ]
    newest = max(p.stat().st_mtime for p in inputs)
    (out / "manifest.json").touch()
    os.utime(out / "manifest.json", (newest - manifest_age_s, newest - manifest_age_s))
    env = f"lint-check-{os.getpid()}"
    (ROOT / "dist" / env).mkdir(parents=True)
    try:
        proc = _make(
            "lint", "-o", ".venv-checkov/.installed", f"VENV={venv}", f"OUT={out}", f"ENV={env}"
        )
    finally:
        (ROOT / "dist" / env).rmdir()
    assert proc.returncode == 0, proc.stderr
    return log.read_text().splitlines()


def test_lint_synthesizes_again_when_the_code_is_newer_than_cdk_out(tmp_path: Path) -> None:
    """checkov must judge what the code renders today, not what an older synth left behind."""
    ran = _lint(tmp_path, manifest_age_s=60)
    assert any("tools.validate_templates" in line for line in ran), ran
    assert "tools.run_checkov" in ran[-1]


def test_lint_reuses_a_synth_newer_than_the_code(tmp_path: Path) -> None:
    ran = _lint(tmp_path, manifest_age_s=-60)
    assert not any("tools.validate_templates" in line for line in ran), ran
    assert "tools.run_checkov" in ran[-1]


def _shm_gib() -> float:
    try:
        stat = os.statvfs("/dev/shm")
    except OSError:
        return 0.0
    return stat.f_bavail * stat.f_frsize / 2**30


def test_make_test_puts_the_suites_temporary_files_in_memory_where_linux_offers_enough(
    tmp_path: Path,
) -> None:
    """/dev/shm when it has 6 GiB free (a run holds up to about 2.3 GB there), the system's
    temporary folder otherwise, or the folder ``TEST_TMPDIR`` names; ``make bench`` times the
    same command."""
    venv = _venv(tmp_path, 0)
    for target in ("test", "bench"):
        chosen = _make("-n", f"VENV={venv}", f"TEST_TMPDIR={tmp_path}", target).stdout
        assert f"TMPDIR={tmp_path} {venv}/bin/python -m pytest" in chosen
    assert "TMPDIR=" not in _make("-n", f"VENV={venv}", "TEST_TMPDIR=", "test").stdout
    default = _make("-n", f"VENV={venv}", "test").stdout
    assert ("TMPDIR=/dev/shm " in default) == (_shm_gib() >= 6), default
