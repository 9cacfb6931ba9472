"""`hpkv bench compare` with every workload on a fleet of its own, in a process of its own.

The run mostly waits out the fake model servers' injected delays (about 15 s); started when the
session starts (tests/conftest.py, tests/support/early.py), it waits beside the other tests, and
tests/scripts/commands/test_bench_compare.py judges its report at the end. It keeps its priority:
the delays it measures must not wait for a core. This module imports nothing heavy: ``python -m
tests.support.compare_again DIR`` is the process that runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support import early

FOLDER = "bench-compare"  # in the run's temporary folder
REPORT = "report"
WORDS = 2500  # bench.speedup_prompt_words and cross_pod_prompt_words (the defaults)
ARGS = ("--lengths", str(WORDS), "--repeats", "3", "--seed", "11")


def compare(workdir: Path) -> dict[str, Any]:
    from typer.testing import CliRunner

    from scripts.cli import app  # late: see the module's docstring
    from scripts.lib import runtime  # late: see the module's docstring
    from tests.support.bench_fleet import bench_config, compare_argv, fleet  # late: as above

    cfg = bench_config()
    runtime.load_config = lambda _env: cfg
    with fleet() as servers:
        ran = CliRunner().invoke(app, compare_argv(servers, workdir / REPORT, *ARGS))
    return {"exit_code": ran.exit_code, "stdout": ran.stdout, "output": ran.output}


def start(run: Path) -> None:
    early.start(__name__, run / FOLDER)


def result(run: Path, timeout: float = 900) -> dict[str, Any]:
    """What the run answered (``report`` holds its folder): started earlier, or now."""
    answer = early.result(__name__, run / FOLDER, timeout=timeout)
    return {**answer, "report": run / FOLDER / REPORT}


if __name__ == "__main__":
    early.run(compare, nice=0)
