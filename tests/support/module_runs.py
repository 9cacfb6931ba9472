"""How `pytest -n 2 --dist loadscope` (make test) hands the tests to its workers: in runs.

A unit of work is a run of consecutive tests of one module in the order tests/conftest.py leaves
them, so a module's tests share one worker and its module fixtures are made once. The tests that
read background work are moved to the end of that order, away from the rest of their module: each
such run is a unit of its own and is handed out last, when the work it reads is done.

pytest-xdist's own ``loadgroup`` cannot say this on pytest 9.2: it passes a test's group to the
controller by appending it to the test's node id, which pytest 9.2 no longer reads back, so every
test became a unit of its own (an open pytest-xdist issue).
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling


def runs(collection: list[str]) -> dict[str, str]:
    """Each node id's unit: ``<n>:<module>`` for the n-th run of consecutive tests of a module."""
    unit: dict[str, str] = {}
    previous, n = "", 0
    for nodeid in collection:
        module = nodeid.split("::", 1)[0]
        if module != previous:
            previous, n = module, n + 1
        unit[nodeid] = f"{n}:{module}"
    return unit


class ModuleRuns(LoadScopeScheduling):
    """loadscope with the runs above as its scopes, handed out in collection order."""

    _units: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        # Called first by schedule(), once every worker's collection is in and agreed.
        if self._units is None:
            assert self.collection is not None
            self._units = runs(self.collection)
        return self._units[nodeid]
