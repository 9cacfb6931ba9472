"""Session fixtures: each environment is synthesized once for the whole test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
# moto loads thousands of public AMIs into every EC2 backend it creates (about 0.2 s each, many
# per test); nothing here looks an AMI up.
os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")

from infra.config import load_config
from tests.support import background
from tests.support.config import existing_cluster_config
from tests.support.synth import Synth, synth

SYNTH_TESTS = Path(__file__).parent / "stacks"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "background(start=None): reads work done in a second process (tests.support.background); "
        "run last, and start(), if given, is called once the test is collected",
    )


@pytest.hookimpl(trylast=True)  # after -k/-m deselection: start only what will run
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that read background work go last, so the work overlaps the tests before them."""
    late = [item for item in items if item.get_closest_marker("background")]
    now = [item for item in items if not item.get_closest_marker("background")]
    # The synth tests first: the environments they synthesize are linted in the background while
    # the rest of the suite runs, instead of after it.
    items[:] = sorted(now, key=lambda item: SYNTH_TESTS not in item.path.parents) + late
    for item in late:
        start = item.get_closest_marker("background").kwargs.get("start")  # type: ignore[union-attr]
        if start is not None:
            start()


def pytest_sessionfinish() -> None:
    background.shutdown()


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
