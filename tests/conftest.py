"""Session fixtures and the order tests run in.

Each environment is synthesized once per session (per pytest-xdist worker: see ``GROUPS``), the
slow checks that read only files run in a second process beside the tests (tests.support.background
and tests.support.cdk_cli), and the tests that read their answers run last.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
# moto loads thousands of public AMIs into every EC2 backend it creates (about 0.2 s each, many
# per test); nothing here looks an AMI up.
os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")

from infra.config import load_config
from tests.support import background, cdk_cli
from tests.support.aws_models import share_service_models
from tests.support.config import existing_cluster_config
from tests.support.helm import binary as helm_binary
from tests.support.synth import Synth, synth

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
CDK_CLI_TEST = "test_cdk_cli_synth_matches_direct_synth_without_credentials"
# Under `pytest -n 2 --dist loadgroup` (make test) a module's tests run on one worker, so its
# module fixtures are made once. The modules that use a session fixture in GROUPS share one
# worker too: each of those environments is synthesized or rendered once, not once per worker.
GROUPS = {
    "synth": {"dev", "existing"},
    "render": {"rendered", "rendered_files", "rendered_envs"},
    "pipeline": {"pipeline"},
}
cdk_cli_selected = pytest.StashKey[bool]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "background: reads work done in a second process (tests.support.background); run last",
    )


def _group(module: list[pytest.Item]) -> str:
    """The xdist group of a module's tests: the first of GROUPS whose fixtures one of them uses,
    else the module itself."""
    used = {name for item in module for name in getattr(item, "fixturenames", ())}
    for group, fixtures in GROUPS.items():
        if used & fixtures:
            return group
    return str(module[0].path)


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> Generator[None, None, None]:
    """Groups for pytest-xdist before it reads them; after -k/-m deselection, the order: tests
    that read background work go last, so the work overlaps the tests before them."""
    if config.getoption("loadgroup", default=False):
        modules: dict[Path, list[pytest.Item]] = {}
        for item in items:
            modules.setdefault(item.path, []).append(item)
        for module in modules.values():
            group = _group(module)
            for item in module:
                item.add_marker(pytest.mark.xdist_group(group))
    yield
    late = [item for item in items if item.get_closest_marker("background")]
    now = [item for item in items if not item.get_closest_marker("background")]
    # The synth tests first: the environments they synthesize are linted in the background while
    # the rest of the suite runs, instead of after it.
    items[:] = sorted(now, key=lambda item: SYNTH_TESTS not in item.path.parents) + late
    config.stash[cdk_cli_selected] = any(item.name == CDK_CLI_TEST for item in items)


def pytest_sessionfinish() -> None:
    background.shutdown()


@pytest.fixture(scope="session")
def cdk_cli_workdir(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Where the CDK CLI's synth and app.py's write (one directory for every xdist worker)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if hasattr(request.config, "workerinput") else base) / "cdk-cli"


@pytest.fixture(scope="session", autouse=True)
def _start_cdk_cli_synths(request: pytest.FixtureRequest, cdk_cli_workdir: Path) -> None:
    """With the session's first test: the CDK CLI test reads the answer at the end."""
    if request.config.stash.get(cdk_cli_selected, False) and cdk_cli.CDK.exists():
        cdk_cli.start(cdk_cli_workdir)


@pytest.fixture(scope="session")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The default environment, with a fixture chart standing in for the HyperPod chart."""
    result = synth(load_config("dev"), tmp_path_factory.mktemp("dev"))
    background.lint_soon(result.outdir, result.config.region)
    return result


@pytest.fixture(scope="session")
def existing(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The default environment pointed at an existing HyperPod EKS cluster."""
    result = synth(existing_cluster_config(), tmp_path_factory.mktemp("existing"), chart_dir=None)
    background.lint_soon(result.outdir, result.config.region)
    return result


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def helm(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real helm (tests/support/helm.py), extracted once into pytest's cache; a skip that
    says what is missing where it cannot be had."""
    cache = getattr(request.config, "cache", None)
    where = cache.mkdir("helm") if cache is not None else tmp_path_factory.getbasetemp() / "helm"
    return helm_binary(Path(where))
