"""Fixtures of the runtime layer (``make test-runtime``): the engines of each supported image and
every environment's rendered objects (no file is written: the charts' JSON, as the kvcache and
endpoints stacks apply it)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig
from k8s.app import build_charts, manifests
from tests.support.config import env_config, env_fsx
from tests.support.runtime import ENVS, python_of, runtime_images


@pytest.fixture(scope="session", params=runtime_images())
def image(request: pytest.FixtureRequest) -> str:
    """Each image tag whose engines `make test-runtime` installed."""
    tag: str = request.param
    if not python_of(tag).exists():
        pytest.fail(f"no .venv-runtime/{tag}: run `make test-runtime`")
    return tag


@pytest.fixture(scope="session")
def rendered() -> dict[str, tuple[AppConfig, list[dict[str, Any]]]]:
    out = {}
    for env in ENVS:
        config = env_config(env)
        charts = manifests(build_charts(config, fsx=env_fsx(env)))
        out[env] = (config, [o for objs in charts.values() for o in objs])
    return out
