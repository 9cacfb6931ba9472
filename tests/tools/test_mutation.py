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


def test_resume_reruns_all_but_the_kills(tree: Path) -> None:
    assert mutation.to_run("pkg.mod", resume=True) == [
        "pkg.mod.x_f__mutmut_2", "pkg.mod.x_f__mutmut_3", "pkg.mod.x_f__mutmut_4",
        "pkg.mod.x_f__mutmut_5",
    ]  # fmt: skip


def test_a_full_run_or_a_changed_source_reruns_the_whole_module(tree: Path) -> None:
    assert mutation.to_run("pkg.mod", resume=False) == ["pkg.mod.*"]
    os.utime(tree)  # edited after its mutants were made: mutmut regenerates it
    assert mutation.to_run("pkg.mod", resume=True) == ["pkg.mod.*"]


def test_a_module_never_mutated_runs_in_full(tree: Path) -> None:
    assert mutation.to_run("pkg.other", resume=True) == ["pkg.other.*"]


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


PRAGMA = "# pragma: no mutate"
REASON = "# Equivalent mutant"
# A pragma may sit on the closing line of a call whose reason is written above the call.
REASON_REACH = 15


def pragmas_without_reason(root: Path, paths: list[str]) -> list[str]:
    """``path:line`` of each ``# pragma: no mutate`` with no "Equivalent mutant" comment within
    REASON_REACH lines above it: a mutant left out of the score must say why it cannot change
    behaviour."""
    found = []
    for top in paths:
        for path in sorted((root / top).rglob("*.py")):
            lines = path.read_text().splitlines()
            for i, line in enumerate(lines):
                above = lines[max(0, i - REASON_REACH) : i]
                if PRAGMA in line and not any(REASON in a for a in above):
                    found.append(f"{path.relative_to(root)}:{i + 1}")
    return found


def test_every_line_left_unmutated_says_why() -> None:
    assert pragmas_without_reason(mutation.ROOT, ["k8s", "infra", "scripts"]) == []


def test_a_pragma_without_its_reason_is_reported(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(
        "# Equivalent mutant: the default is never read\n"
        'x = d.get("a", "")  # pragma: no mutate\n' + "\n" * REASON_REACH
        + 'y = d.get("b", "")  # pragma: no mutate\n'
    )  # fmt: skip
    assert pragmas_without_reason(tmp_path, ["pkg"]) == ["pkg/mod.py:18"]
