"""A pytest plugin loaded only by mutmut (``[tool.mutmut] pytest_add_cli_args``).

mutmut 3 learns which tests reach a function by recording the functions each test calls, and
clears the record after every test. A session fixture (the synthesized and rendered
environments) runs once, inside the first test that asks for it, so every later test that reads
its output would be credited with nothing, and mutants in the renderers would run one test only.
This plugin remembers what each fixture's setup reached and credits it to every test that uses
the fixture, so a mutant runs all the tests that read the output it changes.

mutmut also forks one child per mutant, two at a time, from a process that has already rendered
the charts. cdk8s runs on jsii, whose Python side talks to one node process over a pipe; children
sharing their parent's would interleave their messages, fail on each other's object references and
count as kills. So each child that uses jsii starts its own node process with the same assemblies.
"""

from __future__ import annotations

import atexit
import importlib.resources
import os
import sys
from collections.abc import Generator
from typing import Any

import pytest

_reached_by_fixture: dict[str, set[str]] = {}
_forked = False


def _mark_forked() -> None:
    global _forked
    _forked = True


os.register_at_fork(after_in_child=_mark_forked)


def _own_jsii_kernel() -> None:
    """Leave the parent's jsii node process to the parent; if this process uses jsii, it starts
    its own, loaded with the assemblies the parent had (most children never do: only the
    renderers' mutants run cdk8s)."""
    if "jsii" not in sys.modules:
        return
    from jsii._kernel.providers import process
    from jsii._kernel.types import LoadRequest, LoadResponse

    # jsii memoizes the node process in a closure shared by every ProcessProvider.
    cells = process.ProcessProvider._process.fget.__closure__ or ()  # type: ignore[attr-defined]
    (started,) = [c.cell_contents for c in cells if isinstance(c.cell_contents, list)]
    if not started:
        return
    parents = started.pop()
    atexit.unregister(parents.stop)
    parents.stop = lambda: None  # never tell the parent's node process to exit from here
    loaded = [  # import order: dependencies first
        module.__jsii_assembly__
        for name, module in list(sys.modules.items())
        if name.endswith("._jsii") and getattr(module, "__jsii_assembly__", None) is not None
    ]
    start = process._NodeProcess.start

    def start_and_load(node: Any) -> None:
        start(node)
        for assembly in loaded:
            files = importlib.resources.files(f"{assembly.module}._jsii")
            with importlib.resources.as_file(files.joinpath(assembly.filename)) as tarball:
                request = LoadRequest(assembly.name, assembly.version, os.fspath(tarball))
                node.send(request, LoadResponse)

    process._NodeProcess.start = start_and_load  # type: ignore[method-assign]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under a mutant, the quickest tests first: ``-x`` stops at the first failure, so a mutant
    that a quick test kills does not wait for the slow ones (mutmut gives them in set order)."""
    if os.environ.get("MUTANT_UNDER_TEST") in (None, "", "stats"):
        return
    import mutmut

    took = mutmut.state().duration_by_test
    items.sort(key=lambda item: took.get(item.nodeid, float("inf")))


def pytest_configure(config: pytest.Config) -> None:
    global _forked
    if _forked:
        _forked = False
        _own_jsii_kernel()


def _recording() -> bool:
    return os.environ.get("MUTANT_UNDER_TEST") == "stats"


def _hits() -> set[str]:
    import mutmut

    hits: set[str] = mutmut.state()._stats
    return hits


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: Any) -> Generator[None, None, None]:
    if not _recording():
        yield
        return
    # Record what this setup calls, even functions already hit before it (at import, or by the
    # fixtures it depends on): a set difference would leave those out.
    hits = _hits()
    earlier = set(hits)
    hits.clear()
    yield
    reached = set(hits)
    hits.update(earlier)
    if fixturedef.scope != "function" and reached:
        _reached_by_fixture.setdefault(fixturedef.argname, set()).update(reached)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if _recording():
        for name in getattr(item, "fixturenames", ()):
            _hits().update(_reached_by_fixture.get(name, ()))
