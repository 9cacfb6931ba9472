"""The example report rendered again (tests/support/bench_example.py), in a process of its own.

The render mostly waits out the fake model servers' injected delays (about 25 s); started when
the session starts (tests/conftest.py, tests/support/early.py), it waits beside the other tests,
and tests/scripts/lib/bench_compare/test_example.py compares it with the committed example at the
end. It keeps its priority: the delays it measures must not wait for a core. This module imports
nothing heavy: ``python -m tests.support.example_again DIR`` is the process that renders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support import early

FOLDER = "example-report"  # in the run's temporary folder
REPORT = "report"


def render(workdir: Path) -> dict[str, Any]:
    from tests.support.bench_example import render  # late: see the module's docstring

    render(workdir / REPORT)
    return {}


def start(run: Path) -> None:
    early.start(__name__, run / FOLDER)


def result(run: Path, timeout: float = 900) -> Path:
    """The folder the example was rendered into: started earlier, or now."""
    early.result(__name__, run / FOLDER, timeout=timeout)
    return run / FOLDER / REPORT


if __name__ == "__main__":
    early.run(render, nice=0)
