"""``python -m scripts`` (scripts/__main__.py): the same app as ``hpkv``, and one clear line
when run by a Python without the project's requirements (the system python3, say).

No double: a subprocess of this Python, with typer made unimportable for the second case."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _python(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_python_m_scripts_runs_the_cli() -> None:
    proc = _python("-m", "scripts", "size", "qwen2-7b", "--json")
    assert proc.returncode == 0, proc.stderr
    assert '"kv_bytes_per_token": 57344' in proc.stdout


def test_a_python_without_the_requirements_says_how_to_run_the_cli() -> None:
    code = (
        "import sys, runpy; sys.modules['typer'] = None; "
        "runpy.run_module('scripts', run_name='__main__')"
    )
    proc = _python("-c", code)
    assert proc.returncode == 2
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: typer is not installed") and ".venv/bin/hpkv" in line
