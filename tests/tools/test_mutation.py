"""`tools/mutation.py`'s choice of what mutmut reruns (`--resume`), on a made-up mutants tree."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tools import mutation


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    monkeypatch.setattr(mutation, "MUTANTS", tmp_path / "mutants")
    source = tmp_path / "pkg" / "mod.py"
    source.parent.mkdir()
    source.write_text("x = 1\n")
    mutated = tmp_path / "mutants" / "pkg" / "mod.py"
    mutated.parent.mkdir(parents=True)
    mutated.write_text("x = 2\n")
    codes = {"pkg.mod.x_f__mutmut_1": 1, "pkg.mod.x_f__mutmut_2": 0,
             "pkg.mod.x_f__mutmut_3": 33, "pkg.mod.x_f__mutmut_4": None,
             "pkg.mod.x_f__mutmut_5": 0}  # fmt: skip
    (mutated.parent / "mod.py.meta").write_text(json.dumps({"exit_code_by_key": codes}))
    os.utime(source, (1_000, 1_000))  # the source is older than its mutants
    return source


def test_resume_reruns_all_but_the_kills_and_the_equivalents(tree: Path) -> None:
    skip = {"pkg.mod.x_f__mutmut_5": "same output"}
    assert mutation.to_run("pkg.mod", resume=True, skip=skip) == [
        "pkg.mod.x_f__mutmut_2", "pkg.mod.x_f__mutmut_3", "pkg.mod.x_f__mutmut_4",
    ]  # fmt: skip


def test_a_full_run_or_a_changed_source_reruns_the_whole_module(tree: Path) -> None:
    assert mutation.to_run("pkg.mod", resume=False, skip={}) == ["pkg.mod.*"]
    os.utime(tree)  # edited after its mutants were made: mutmut regenerates it
    assert mutation.to_run("pkg.mod", resume=True, skip={}) == ["pkg.mod.*"]


def test_a_module_never_mutated_runs_in_full(tree: Path) -> None:
    assert mutation.to_run("pkg.other", resume=True, skip={}) == ["pkg.other.*"]


def test_a_failed_mutmut_run_is_reported_with_its_output_and_exit_code(
    tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run whose clean tests fail leaves the old results on disk: say so, do not score them."""

    def failing_mutmut(command: list[str], *, stdout: Any, **_: Any) -> Any:
        stdout.write(
            "Running clean tests\rFAILED tests/k8s/test_x.py::test_y\nFailed to run clean test\n"
        )
        return subprocess.CompletedProcess(command, 1)

    monkeypatch.setattr(mutation.subprocess, "run", failing_mutmut)
    assert mutation.main(["pkg.mod"]) == 1
    err = capsys.readouterr().err
    assert "Failed to run clean test" in err and "FAILED tests/k8s/test_x.py::test_y" in err
    assert "mutmut run failed (exit 1); full output: mutants/mutmut-run.log" in err
