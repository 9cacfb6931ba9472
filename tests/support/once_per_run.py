"""What one pytest run makes once for all its pytest-xdist workers: a folder per name (a
synthesized cloud assembly, rendered manifests) beside the workers' own temporary folders.

Each xdist worker is a process of its own, so a session fixture runs once per worker. The first
process to ask for a name makes its folder while holding the name's lock (``fcntl.flock``); a
process asking meanwhile waits for the lock and then reads what was made. A maker that raised
leaves no ``<name>.done`` mark: the next process to ask makes the folder again (and fails the same
way, in its own test). The folders live in the run's base temporary directory, so nothing is
shared between runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def run_dir(factory: pytest.TempPathFactory) -> Path:
    """The run's base temporary directory: an xdist worker's is ``<run>/popen-gwN``."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing); released when the process ends,
    so a process that died holding it does not block the others."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def once_per_run(name: str, factory: pytest.TempPathFactory, make: Callable[[Path], None]) -> Path:
    """The folder ``name`` of this run, filled by ``make(folder)`` in the first process asking."""
    root = run_dir(factory) / "once-per-run"
    root.mkdir(exist_ok=True)
    folder, done = root / name, root / f"{name}.done"
    with locked(root / f"{name}.lock"):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder
