"""How `make test` hands the tests to its two workers (tests/support/module_runs.py): a run of
consecutive tests of one module is one unit, so the module's tests share a worker and its module
fixtures are made once; a test moved away from its module (the background readers, moved last)
is a unit of its own.

The second test runs pytest with two workers on a tree of its own: each test writes down the
worker it ran on and how many times its module's fixture was made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.module_runs import runs

ROOT = Path(__file__).resolve().parents[1]


def test_consecutive_tests_of_one_module_are_one_unit_and_a_test_moved_away_another() -> None:
    units = runs(["a.py::t1", "a.py::t2[x]", "b.py::t1", "b.py::C::t2", "a.py::late", "c.py::t"])
    assert units["a.py::t1"] == units["a.py::t2[x]"]
    assert units["b.py::t1"] == units["b.py::C::t2"] != units["a.py::t1"]
    assert units["a.py::late"] not in (units["a.py::t1"], units["b.py::t1"])
    assert len(set(units.values())) == 4


CONFTEST = """
import pytest
from tests.support.module_runs import ModuleRuns

def pytest_collection_modifyitems(items):
    items[:] = [i for i in items if "late" not in i.name] + [i for i in items if "late" in i.name]

def pytest_xdist_make_scheduler(config, log):
    return ModuleRuns(config, log)
"""
MODULE = """
import json, os, pytest
from pathlib import Path

@pytest.fixture(scope="module")
def made():
    with open(Path(__file__).with_suffix(".made"), "a") as fh:
        fh.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")

@pytest.mark.parametrize("n", range(6))
def test_one(made, n):
    with open(Path(__file__).with_suffix(".ran"), "a") as fh:
        fh.write(json.dumps([os.environ["PYTEST_XDIST_WORKER"], n]) + "\\n")

def test_late():
    Path(__file__).with_suffix(".late").write_text(os.environ["PYTEST_XDIST_WORKER"])
"""


def test_two_workers_run_each_modules_tests_on_one_worker_and_make_its_fixture_once(
    tmp_path: Path,
) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name in ("test_a", "test_b", "test_c"):
        (tmp_path / f"{name}.py").write_text(MODULE)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2"]
    done = subprocess.run(
        [*argv, "--dist", "loadscope", "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    workers = set()
    for name in ("test_a", "test_b", "test_c"):
        ran = [json.loads(line) for line in (tmp_path / f"{name}.ran").read_text().splitlines()]
        assert sorted(n for _, n in ran) == list(range(6))
        (worker,) = {w for w, _ in ran}
        assert (tmp_path / f"{name}.made").read_text() == f"{worker}\n"
        assert (tmp_path / f"{name}.late").exists()
        workers.add(worker)
    assert workers == {"gw0", "gw1"}  # the units were shared out, not all run on one worker


def test_a_failed_runs_temporary_folder_stays_only_until_the_next_run(tmp_path: Path) -> None:
    """make test may keep the temporary folders in memory (/dev/shm): of the runs that failed,
    only the last keeps its folder, with the project's pytest settings."""
    (tmp_path / "test_fails.py").write_text(
        "def test_fails(tmp_path):\n    (tmp_path / 'kept').write_text('x')\n    assert False\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "PYTHONDONTWRITEBYTECODE": "1"}
    (tmp_path / "tmp").mkdir()
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    argv += ["-c", str(ROOT / "pyproject.toml"), str(tmp_path / "test_fails.py")]
    for _ in range(3):
        done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 1, done.stdout[-2000:]
    (user,) = (tmp_path / "tmp").iterdir()
    runs_kept = [p for p in user.iterdir() if not p.is_symlink()]
    assert len(runs_kept) == 1, runs_kept
    assert list(runs_kept[0].rglob("kept"))
