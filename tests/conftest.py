"""Session fixtures, the order tests run in, and who runs ahead of whom.

Each environment is synthesized once per run, by the first pytest-xdist worker that needs it
(tests/support/once_per_run.py). Slow work the tests only read at the end runs in processes of
its own beside them: cfn-lint (tests/support/background.py), and, started with the session
(tests/support/early.py), the CDK CLI's synth and one bench compare. The tests that read their
answers run last.

The work beside the tests that only needs to be done by the end (cfn-lint, the CDK CLI's synth)
runs at nice 10, in the tests' session: the tests that time the fake model servers get a core at
once. The bench compare beside them keeps its priority: it times them too.
"""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
# moto loads thousands of public AMIs into every EC2 backend it creates (about 0.2 s each, many
# per test); nothing here looks an AMI up.
os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")

from infra.config import load_config
from tests.support import background, cdk_cli, compare_again
from tests.support.aws_models import share_service_models
from tests.support.config import existing_cluster_config
from tests.support.helm import binary as helm_binary
from tests.support.module_runs import ModuleRuns
from tests.support.once_per_run import run_dir

if TYPE_CHECKING:
    from tests.support.synth import Synth

share_service_models()

SYNTH_TESTS = Path(__file__).parent / "stacks"
# The runtime and server layers run the real engines from virtualenvs of their own: collected only
# when `make test-runtime` / `make test-server` name them (``HPKV_RUNTIME_IMAGES``,
# ``HPKV_SERVER_PYTHON``).
collect_ignore = [
    folder
    for folder, variable in (("runtime", "HPKV_RUNTIME_IMAGES"), ("server", "HPKV_SERVER_PYTHON"))
    if not os.environ.get(variable)
]
# The work started with the session, by the test that reads it (tests/support/early.py), in the
# order it starts: what times the fake model servers first.
EARLY_WORK: dict[str, Any] = {
    "test_the_report_holds_the_injected_delays_and_the_exact_tier_shares": compare_again,
    "test_cdk_cli_synth_matches_direct_synth_without_credentials": cdk_cli,
}
selected_names = pytest.StashKey[set[str]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "background: reads work done in a second process (tests.support.background); run last",
    )
    config.addinivalue_line(
        "markers",
        "waits: mostly waits out the fake model servers' injected delays; run first, so the work "
        "beside the tests uses the idle core",
    )
    # pytest-xdist hands out the modules in the order below, not the modules with most tests
    # first (its default).
    config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """After -k/-m deselection, the order: the modules that mostly wait first, then the synth
    tests, the tests that read background work last. The CDK CLI's synth, started with the
    session, runs while the first ones wait; the environments the synth tests make are linted
    in the background while the rest of the suite runs, instead of after it.

    Under `pytest -n 2 --dist loadscope` (make test) this order is also how the tests are handed
    out (tests/support/module_runs.py): a module's tests run on one worker, so its module
    fixtures are made once; a test that reads background work, moved away from its module, is a
    unit of its own, handed out last. The session's environments are made once per run whichever
    worker asks first, so modules sharing one need no common worker."""
    late = [item for item in items if item.get_closest_marker("background")]
    now = [item for item in items if not item.get_closest_marker("background")]
    items[:] = sorted(now, key=_start_order) + late
    config.stash[selected_names] = {item.name for item in items}


def _start_order(item: pytest.Item) -> tuple[bool, bool]:
    return item.get_closest_marker("waits") is None, SYNTH_TESTS not in item.path.parents


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> ModuleRuns | None:
    return ModuleRuns(config, log) if config.getvalue("dist") == "loadscope" else None


def _start_early_work(selected: set[str], run: Path) -> None:
    for name, module in EARLY_WORK.items():
        if name in selected:
            module.start(run)


def pytest_sessionfinish() -> None:
    background.shutdown()


def _leave_without_freeing() -> None:
    """An xdist worker's last step. Its heap (construct trees, moto's backends, every module a
    test loaded: about a gigabyte) took seconds to free object by object after the last test,
    and the controller waits for it; the results went to the controller at the session's end,
    and nothing needs the memory back."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if os.environ.get("PYTEST_XDIST_WORKER"):
    # atexit runs the last-registered first: registered before the CDK loads, this runs after
    # jsii's handler, which stops its node process.
    atexit.register(_leave_without_freeing)


@pytest.fixture(scope="session")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's temporary folder, the same for every xdist worker: the early work's is in it."""
    return run_dir(tmp_path_factory)


@pytest.fixture(scope="session", autouse=True)
def _start_early_work_with_the_first_test(request: pytest.FixtureRequest, run_folder: Path) -> None:
    """The tests reading the answers run at the end. Under xdist, each worker asks: the first
    starts the work, the other finds it started."""
    _start_early_work(request.config.stash.get(selected_names, set()), run_folder)


@pytest.fixture(scope="session")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The default environment, with a fixture chart standing in for the HyperPod chart."""
    # Late: loading the CDK starts a node process, and pytest-xdist's controller, which loads
    # this file too, synthesizes nothing.
    from tests.support.synth import synth_once

    result = synth_once("dev", load_config("dev"), tmp_path_factory)
    background.lint_soon(result.outdir, result.config.region)
    return result


@pytest.fixture(scope="session")
def existing(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The default environment pointed at an existing HyperPod EKS cluster."""
    from tests.support.synth import synth_once  # late: see dev

    result = synth_once("existing", existing_cluster_config(), tmp_path_factory, chart_dir=None)
    background.lint_soon(result.outdir, result.config.region)
    return result


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def helm(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real helm (tests/support/helm.py), extracted once into pytest's cache (without it,
    once per run); a skip that says what is missing where it cannot be had."""
    cache = getattr(request.config, "cache", None)
    where = cache.mkdir("helm") if cache is not None else run_dir(tmp_path_factory) / "helm"
    return helm_binary(Path(where))
