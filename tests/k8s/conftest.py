"""Fixtures of the Kubernetes-layer tests: the dev config rendered once per session.

No double is needed: the charts are synthesized by cdk8s itself and written by the real renderer
(into a temporary directory, with a temporary lock directory so the committed lock stays as is).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from infra.config import AppConfig, load_config
from k8s.render import render

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "k8s" / "schemas"


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


def crd_schema(path: Path, version: str) -> dict[str, Any]:
    crd = yaml.safe_load(path.read_text())
    (v,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema: dict[str, Any] = v["schema"]["openAPIV3Schema"]
    return schema


@pytest.fixture(scope="session")
def rendered_envs(
    tmp_path_factory: pytest.TempPathFactory, rendered: list[dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """Every shipped environment rendered once (dev reuses ``rendered``)."""
    out: dict[str, list[dict[str, Any]]] = {"dev": rendered}
    for env in ("test", "prod"):
        paths = render(env, tmp_path_factory.mktemp(f"dist-{env}"),
                       lock_dir=tmp_path_factory.mktemp(f"locks-{env}"))  # fmt: skip
        out[env] = [o for p in paths for o in yaml.safe_load_all(p.read_text()) if o]
    return out
