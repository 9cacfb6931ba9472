"""Slow work started when the session starts, in a process of its own, and read by its test at
the end (the test carries the ``background`` marker: tests/conftest.py runs it last).

A module runs as ``python -m <module> [ARG...] <workdir>`` and hands ``run`` a function of the
work directory: its answer (a dict) is written to ``<workdir>/result.json``, whole or not at
all. Under pytest-xdist every worker asks to start it: the first to create the work directory
does, the others find it there. Run alone, the test starts it itself and waits. This module
imports nothing heavy: it is what those processes import first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULT = "result.json"
# Work beside the tests yields the CPU to them (its ``nice``): it only needs to be done by the end.
NICE = 10


def start(module: str, workdir: Path, *args: str) -> None:
    """Run ``module`` in its own process, unless a process asked for it already."""
    try:
        workdir.mkdir(parents=True)
    except FileExistsError:
        return
    # In the tests' session, not one of its own: Linux gives each session an equal share of the
    # CPU (autogroup), whatever nice value its processes run at.
    subprocess.Popen(
        [sys.executable, "-m", module, *args, str(workdir)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=(workdir / "runner.log").open("w"),
    )


def result(module: str, workdir: Path, *args: str, timeout: float = 900) -> dict[str, Any]:
    """What ``module`` answered: started earlier, or now."""
    start(module, workdir, *args)
    path, deadline = workdir / RESULT, time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            log = (workdir / "runner.log").read_text(errors="replace")[-3000:]
            raise TimeoutError(f"no {path} after {timeout:.0f} s; the runner's log:\n{log}")
        time.sleep(0.2)
    answer: dict[str, Any] = json.loads(path.read_text())
    if "error" in answer:
        raise RuntimeError(f"{module} did not run: {answer['error']}")
    return answer


def run(main: Callable[[Path], dict[str, Any]], nice: int = NICE) -> None:
    """The process's body: ``main(workdir)``'s answer, or the error that stopped it, written
    where ``result`` reads it. ``nice`` 0: work that times something keeps its priority."""
    workdir = Path(sys.argv[-1])
    os.nice(nice)  # the processes this one starts (the CDK CLI, node, app.py) inherit it
    try:
        answer = main(workdir)
    except Exception:  # the test reports it instead of waiting for an answer that never comes
        answer = {"error": traceback.format_exc()}
    tmp = workdir / f"{RESULT}.tmp"
    tmp.write_text(json.dumps(answer))
    tmp.rename(workdir / RESULT)  # whole or absent: the reader polls for the name
