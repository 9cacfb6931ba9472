"""Fixtures of the Kubernetes-layer tests: every environment rendered once per run.

No double is needed: the charts are synthesized by cdk8s itself and written by the real renderer
(into a temporary directory, with a temporary lock directory so the committed lock stays as is).
The first xdist worker to ask renders an environment; the others read its YAML
(tests/support/once_per_run.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
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
from tests.support.once_per_run import once_per_run

# libyaml's loader where it is built in: the rendered YAML is read by every worker.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@pytest.fixture(scope="session")
def dev_config() -> AppConfig:
    return load_config("dev")


def _rendered_once(
    name: str, factory: pytest.TempPathFactory, render_into: Callable[[Path, Path], list[Path]]
) -> dict[str, list[dict[str, Any]]]:
    """Chart name -> its objects: ``render_into(out, lock_dir)`` once per run, read back."""

    def make(folder: Path) -> None:
        (folder / "dist").mkdir()
        (folder / "locks").mkdir()
        paths = render_into(folder / "dist", folder / "locks")
        (folder / "charts.txt").write_text("".join(f"{p.name}\n" for p in paths))

    folder = once_per_run(f"rendered-{name}", factory, make)
    names = (folder / "charts.txt").read_text().split()
    return {
        Path(n).stem: [o for o in yaml.load_all((folder / "dist" / n).read_text(), LOADER) if o]
        for n in names
    }


@pytest.fixture(scope="session")
def rendered_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    return _rendered_once("dev", tmp_path_factory, lambda out, locks: render("dev", out, locks))


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
    renders: dict[str, Callable[[Path, Path], list[Path]]] = {
        "test": lambda out, locks: render("test", out, locks),
        "prod": lambda out, locks: render("prod", out, locks),
        FSX_VARIANT: lambda out, locks: render_config(fsx_config(), out, locks, fsx=DEPLOYED_FSX),
        TIERS_VARIANT: lambda out, locks: render_config(tiers_config(), out, locks),
    }
    out: dict[str, list[dict[str, Any]]] = {"dev": rendered}
    for name, render_into in renders.items():
        charts = _rendered_once(name, tmp_path_factory, render_into)
        out[name] = [o for objs in charts.values() for o in objs]
    return out
