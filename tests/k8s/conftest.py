"""Fixtures of the Kubernetes-layer tests: every environment rendered once per session.

No double is needed: the charts are synthesized by cdk8s itself and written by the real renderer
(into a temporary directory, with a temporary lock directory so the committed lock stays as is).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import yaml

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from infra.config import AppConfig, load_config
from k8s.render import render, render_config
from tests.support.config import (
    DEPLOYED_FSX,
    FSX_VARIANT,
    TIERS_VARIANT,
    env_config,
    fsx_config,
    tiers_config,
)


@pytest.fixture(scope="session")
def dev_config() -> AppConfig:
    return load_config("dev")


@pytest.fixture(scope="session")
def rendered_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("dist")
    locks = tmp_path_factory.mktemp("locks")
    paths = render("dev", out, lock_dir=locks)
    return {p.stem: [o for o in yaml.safe_load_all(p.read_text()) if o] for p in paths}


@pytest.fixture(scope="session")
def rendered(rendered_files: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [o for objs in rendered_files.values() for o in objs]


@pytest.fixture(params=("dev", "test", "prod", FSX_VARIANT, TIERS_VARIANT))
def env(request: pytest.FixtureRequest) -> str:
    """Each rendered environment in turn (a test that parametrizes ``env`` itself overrides it)."""
    name: str = request.param
    return name


@pytest.fixture
def objs(env: str, rendered_envs: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return rendered_envs[env]


@pytest.fixture
def config(env: str) -> AppConfig:
    return env_config(env)


@pytest.fixture(scope="session")
def rendered_envs(
    tmp_path_factory: pytest.TempPathFactory, rendered: list[dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """Every shipped environment rendered once (dev reuses ``rendered``), the FSx variant with
    the file system a deployed stack reports and the tiers variant (written by the same
    renderer)."""
    out: dict[str, list[dict[str, Any]]] = {"dev": rendered}
    for env in ("test", "prod"):
        paths = render(
            env,
            tmp_path_factory.mktemp(f"dist-{env}"),
            lock_dir=tmp_path_factory.mktemp(f"locks-{env}"),
        )
        out[env] = [o for p in paths for o in yaml.safe_load_all(p.read_text()) if o]
    paths = render_config(
        fsx_config(),
        tmp_path_factory.mktemp("dist-fsx"),
        tmp_path_factory.mktemp("locks-fsx"),
        fsx=DEPLOYED_FSX,
    )
    out[FSX_VARIANT] = [o for p in paths for o in yaml.safe_load_all(p.read_text()) if o]
    paths = render_config(
        tiers_config(), tmp_path_factory.mktemp("dist-tiers"), tmp_path_factory.mktemp("locks-t")
    )
    out[TIERS_VARIANT] = [o for p in paths for o in yaml.safe_load_all(p.read_text()) if o]
    return out
