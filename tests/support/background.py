"""Slow checks that read only files on disk, run in a second process while the suite goes on.

cfn-lint over one synthesized environment takes 5-8 s; on a 2-core machine it can run beside the
tests that follow instead of in front of them. A synth fixture hands its templates over as soon as
they are written (``lint_soon``); the tests that read the answers carry the ``background`` marker,
which tests/conftest.py moves to the end of the session, so by the time they ask, the answer is
usually there. Run alone, a test submits its own work and waits: the result is the same, only the
overlap is lost.

An assembly is linted once per run: the answer is written beside it (``<outdir>.cfn-lint-<region>
.json``) under a lock, so the xdist worker that reads an assembly another worker synthesized
(tests/support/synth.py ``synth_once``) reads that worker's answer, or waits for it.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from infra.cdk.validation import errors_only, lint_templates, templates_in
from tests.support import early
from tests.support.once_per_run import locked

_pool: ProcessPoolExecutor | None = None
_futures: dict[tuple[Any, ...], Future[Any]] = {}


def _executor() -> ProcessPoolExecutor:
    global _pool
    if _pool is None:
        # spawn, not fork: a forked worker would inherit jsii's exit hook and, on exit, stop the
        # node process the suite's own synth runs on.
        _pool = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=os.nice,
            initargs=(early.NICE,),
        )
    return _pool


def submit(key: tuple[Any, ...], fn: Callable[..., Any], *args: Any) -> None:
    """Start ``fn(*args)`` in the background process unless ``key`` was started already."""
    if key not in _futures:
        _futures[key] = _executor().submit(fn, *args)


def result(key: tuple[Any, ...], fn: Callable[..., Any], *args: Any, timeout: float = 900) -> Any:
    """The answer of ``fn(*args)``: started in the background earlier, or now."""
    submit(key, fn, *args)
    return _futures[key].result(timeout=timeout)


def shutdown() -> None:
    """Stop the background process now: no test reads what it may still be doing."""
    global _pool
    if _pool is not None:
        _pool.shutdown(wait=False, cancel_futures=True)
        for process in multiprocessing.active_children():
            process.terminate()
        _pool = None
    _futures.clear()


# Templates (by content and region) this process found clean: a variant of an environment
# shares most of its templates with it (the FSx variant of dev all but two), linted once.
_clean: set[tuple[str, str]] = set()


def _lint_errors(outdir: str, region: str) -> dict[str, list[str]]:
    answer = Path(f"{outdir}.cfn-lint-{region}.json")
    with locked(Path(f"{outdir}.cfn-lint.lock")):
        if not answer.exists():
            tmp = answer.with_suffix(".tmp")
            tmp.write_text(json.dumps(_lint(Path(outdir), region)))
            tmp.rename(answer)
    found: dict[str, list[str]] = json.loads(answer.read_text())
    return found


def _lint(outdir: Path, region: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    todo: dict[Path, tuple[str, str]] = {}
    for template in templates_in(outdir):
        key = (hashlib.sha256(template.read_bytes()).hexdigest(), region)
        if key in _clean:
            found[template.name] = []
        else:
            todo[template] = key
    for template, matches in lint_templates(list(todo), [region]).items():
        found[template.name] = [str(m) for m in errors_only(matches)]
        if not found[template.name]:
            _clean.add(todo[template])
    return found


def lint_soon(outdir: Path, region: str) -> None:
    """Start cfn-lint on every template of a written cloud assembly (one cfn-lint run)."""
    submit(("cfn-lint", str(outdir), region), _lint_errors, str(outdir), region)


def lint_errors(template: Path, region: str) -> list[str]:
    """cfn-lint's errors (not warnings) for one template of an assembly, as text."""
    outdir = template.parent
    found: dict[str, list[str]] = result(
        ("cfn-lint", str(outdir), region), _lint_errors, str(outdir), region
    )
    return found[template.name]
