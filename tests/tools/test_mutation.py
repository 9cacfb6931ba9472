"""`tools/mutation.py`'s choice of what mutmut reruns (`--resume`), on a made-up mutants tree."""

from __future__ import annotations

import ast
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
    codes = {
        "pkg.mod.x_f__mutmut_1": 1,
        "pkg.mod.x_f__mutmut_2": 0,
        "pkg.mod.x_f__mutmut_3": 33,
        "pkg.mod.x_f__mutmut_4": None,
        "pkg.mod.x_f__mutmut_5": 0,
    }
    (mutated.parent / "mod.py.meta").write_text(json.dumps({"exit_code_by_key": codes}))
    os.utime(source, (1_000, 1_000))  # the source is older than its mutants
    return source


def test_resume_reruns_all_but_the_kills(tree: Path) -> None:
    assert mutation.to_run("pkg.mod", resume=True) == [
        "pkg.mod.x_f__mutmut_2",
        "pkg.mod.x_f__mutmut_3",
        "pkg.mod.x_f__mutmut_4",
        "pkg.mod.x_f__mutmut_5",
    ]


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


BOOKKEEPING = ("pragma: no mutate", "quivalent mutant")
# Never product code: the tests and tools, and what tools write. Folders whose name starts with
# a dot (.git, the virtualenvs, caches) are not walked into either.
NOT_PRODUCT = {"tests", "tools", "node_modules", "mutants", "cdk.out", "dist", "imports"}


def product_files() -> list[Path]:
    found = []
    for folder, subfolders, files in os.walk(mutation.ROOT):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d not in NOT_PRODUCT]
        found += [Path(folder) / f for f in files if f.endswith(".py")]
    return found


def test_no_product_file_carries_mutation_bookkeeping() -> None:
    """What mutmut cannot tell apart is listed with the tooling, never in the code it mutates."""
    found = [
        str(path.relative_to(mutation.ROOT))
        for path in product_files()
        if any(mark in path.read_text() for mark in BOOKKEEPING)
    ]
    assert found == []


def test_the_walk_reaches_every_product_package() -> None:
    roots = {path.relative_to(mutation.ROOT).parts[0] for path in product_files()}
    assert {"infra", "stacks", "k8s", "scripts", "app.py"} <= roots
    assert not roots & {"tests", "tools", ".venv"}


def test_every_listed_equivalent_is_a_line_of_the_function_it_names() -> None:
    """An entry whose code moved or changed no longer matches any mutant: it must go or follow."""
    stale = []
    for e in mutation.load_equivalents():
        path = mutation.ROOT / (e.module.replace(".", "/") + ".py")
        text = path.read_text()
        funcs = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef)]
        bodies = [ast.get_source_segment(text, f) or "" for f in funcs if f.name == e.function]
        if not any(e.line in (line.strip() for line in b.splitlines()) for b in bodies):
            stale.append(f"{e.module}:{e.function}: {e.line}")
    assert stale == []


MUTATED = """\
def x_f__mutmut_orig(d):
    value = d.get("a", "")
    return value.upper()


def x_f__mutmut_1(d):
    value = d.get("a", "XXXX")
    return value.upper()


def x_f__mutmut_2(d):
    value = d.get("a", "")
    return value.lower()


class C:
    def xǁCǁg__mutmut_orig(self):
        return 1

    def xǁCǁg__mutmut_1(self):
        return 2
"""


def test_a_survivor_that_changes_a_listed_line_counts_as_equivalent(tree: Path) -> None:
    (mutation.MUTANTS / "pkg" / "mod.py").write_text(MUTATED)
    codes = {"pkg.mod.x_f__mutmut_1": 0, "pkg.mod.x_f__mutmut_2": 0, "pkg.mod.xǁCǁg__mutmut_1": 0}
    (mutation.MUTANTS / "pkg" / "mod.py.meta").write_text(json.dumps({"exit_code_by_key": codes}))
    assert mutation.changed_lines("pkg.mod", "pkg.mod.x_f__mutmut_1") == (
        "f",
        {'value = d.get("a", "")'},
    )
    assert mutation.changed_lines("pkg.mod", "pkg.mod.xǁCǁg__mutmut_1") == ("g", {"return 1"})
    listed = [mutation.Equivalent("pkg.mod", "f", 'value = d.get("a", "")', "never read")]
    line, counts = mutation.score("pkg.mod", listed)
    assert (counts["equivalent"], counts["survived"]) == (1, 2)
    # The same line in another function, or another module, is not the listed mutant.
    elsewhere = [
        mutation.Equivalent("pkg.mod", "g", 'value = d.get("a", "")', "-"),
        mutation.Equivalent("pkg.other", "f", 'value = d.get("a", "")', "-"),
    ]
    assert mutation.score("pkg.mod", elsewhere)[1]["survived"] == 3
    assert "0/2" in line  # equivalents are outside the score


def test_the_scored_modules_are_read_from_the_tree(tmp_path: Path) -> None:
    """A module added to a scored folder is scored with no other edit; package markers, caches
    and folders outside ``source_paths`` are not."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.mutmut]\nsource_paths = ["k8s/l2_pod.py", "infra/config"]\n'
    )
    scored = ("k8s/l2_pod.py", "infra/config/model.py", "infra/config/rules_new.py")
    unscored = ("k8s/charts.py", "infra/config/__init__.py", "infra/config/__pycache__/model.py")
    for name in (*scored, *unscored, "infra/facts/gpus.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    assert mutation.modules_scored(tmp_path) == (
        "k8s.l2_pod",
        "infra.config.model",
        "infra.config.rules_new",
    )


def test_the_project_scores_every_config_rule_module() -> None:
    """Each module of the typed config (rules across sections included) is scored."""
    config = Path(mutation.ROOT, "infra", "config")
    expected = {f"infra.config.{p.stem}" for p in config.glob("*.py") if p.stem != "__init__"}
    assert expected <= set(mutation.MODULES)
