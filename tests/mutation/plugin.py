"""A pytest plugin loaded only by mutmut (``[tool.mutmut] pytest_add_cli_args``).

mutmut 3 learns which tests reach a function by recording the functions each test calls, and
clears the record after every test. A session fixture (the synthesized and rendered
environments) runs once, inside the first test that asks for it, so every later test that reads
its output would be credited with nothing, and mutants in the renderers would run one test only.
This plugin remembers what each fixture's setup reached and credits it to every test that uses
the fixture, so a mutant runs all the tests that read the output it changes.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

_reached_by_fixture: dict[str, set[str]] = {}


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
    before = set(_hits())
    yield
    reached = _hits() - before
    if fixturedef.scope != "function" and reached:
        _reached_by_fixture.setdefault(fixturedef.argname, set()).update(reached)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if _recording():
        for name in getattr(item, "fixturenames", ()):
            _hits().update(_reached_by_fixture.get(name, ()))
