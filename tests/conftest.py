"""Session fixtures: each environment is synthesized once for the whole test session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from tests.synth_support import Synth, dev_config, existing_cluster_config, synth


@pytest.fixture(scope="session")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The default environment, with a fixture chart standing in for the HyperPod chart."""
    return synth(dev_config(), tmp_path_factory.mktemp("dev"))


@pytest.fixture(scope="session")
def existing(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The default environment pointed at an existing HyperPod EKS cluster."""
    return synth(existing_cluster_config(), tmp_path_factory.mktemp("existing"), chart_dir=None)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]
