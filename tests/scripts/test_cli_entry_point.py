"""How the CLI is started: the installed ``hpkv`` entry point (pyproject.toml) runs the typer
app, ``python -m scripts`` too, and neither needs Node.js for the commands that do not use the
chart code (``preflight`` is the one that reports a missing Node.js).

No double: the app runs in this process or in a subprocess whose PATH holds no ``node``, in the
environment of a new user (no AWS credentials, the instance metadata service disabled)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import setuptools

from scripts import cli

ROOT = Path(__file__).resolve().parents[2]
PROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())
# Every command module but the one that renders the charts (manifests loads cdk8s when it runs).
WITHOUT_NODE = tuple(
    p.stem
    for p in (ROOT / "scripts" / "commands").glob("*.py")
    if p.stem not in ("__init__", "manifests")
)


def test_the_hpkv_entry_point_is_the_typer_apps_main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module, _, attr = PROJECT["project"]["scripts"]["hpkv"].partition(":")
    target = getattr(importlib.import_module(module), attr)
    assert target is cli.main
    monkeypatch.setattr(sys, "argv", ["hpkv", "--help"])
    with pytest.raises(SystemExit) as done:
        target()
    assert done.value.code == 0
    help_text = capsys.readouterr().out
    assert "Operations CLI for the tiered KV cache" in help_text and "preflight" in help_text


def test_the_installed_packages_hold_the_cli_and_what_it_imports() -> None:
    include = PROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    found = set(setuptools.find_packages(str(ROOT), include=include))
    assert {
        "scripts",
        "scripts.commands",
        "scripts.lib",
        "scripts.lib.teardown",
        "k8s",
        "infra",
        "infra.config",
        "tools",
    } <= found
    assert not {p for p in found if p.split(".")[0] in ("tests", "node_modules")}


def _no_node(tmp_path: Path) -> dict[str, str]:
    """A new user's environment whose PATH holds no node (nor kubectl or helm)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "KUBE"))}
    return {
        **env,
        "PATH": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        "HOME": str(tmp_path),
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
    }


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_commands_that_use_no_chart_code_load_no_node_js(tmp_path: Path) -> None:
    modules = ", ".join(f"scripts.commands.{m}" for m in WITHOUT_NODE)
    code = f"import sys, scripts.cli, {modules}; assert 'cdk8s' not in sys.modules, 'cdk8s'"
    proc = _run(["-c", code], _no_node(tmp_path))
    assert proc.returncode == 0, proc.stderr


def test_preflight_reports_a_missing_node_js_instead_of_needing_it(tmp_path: Path) -> None:
    proc = _run(["-m", "scripts", "preflight", "--env", "dev", "--json"], _no_node(tmp_path))
    assert proc.returncode == 1, proc.stderr  # a check failed: no credentials, no tools
    rows = {c["stage"]: c for c in json.loads(proc.stdout)["checks"]}
    assert (rows["node"]["status"], rows["node"]["detail"]) == ("fail", "not on PATH")
    help_proc = _run(["-m", "scripts", "manifests", "--help"], _no_node(tmp_path))
    assert help_proc.returncode == 0 and "Usage:" in help_proc.stdout, help_proc.stderr
