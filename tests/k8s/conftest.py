"""Fixtures of the Kubernetes-layer tests: the dev config rendered once per session.

No double is needed: the charts are synthesized by cdk8s itself and written by the real renderer
(into a temporary directory, with a temporary lock directory so the committed lock stays as is).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from infra.config import AppConfig, load_config, parse_config
from infra.fsx_outputs import FsxVolume
from k8s.render import render, render_config

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
    """The CRD's schema for ``version`` (read-only: the parsed CRD is shared across tests)."""
    (v,) = [v for v in _crd(path)["spec"]["versions"] if v["name"] == version]
    schema: dict[str, Any] = v["schema"]["openAPIV3Schema"]
    return schema


def strict(schema: Any) -> Any:
    """The schema as the API server applies it under kubectl's default field validation
    (Strict): an object schema with ``properties`` refuses any other field, unless the CRD keeps
    unknown fields there (``x-kubernetes-preserve-unknown-fields``) or types them
    (``additionalProperties``). jsonschema alone lets a misspelt key through."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


@functools.cache
def _crd(path: Path) -> dict[str, Any]:
    # libyaml's loader: Kyverno's ClusterPolicy CRD is 1.4 MB, seconds for the pure-Python one.
    crd: dict[str, Any] = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
    return crd


# The FSx variant of the rehearsal: dev's config with the shared tier on FSx for Lustre (and its
# S3 link). Confirmed: dev's committed lock records Curvine.
FSX_VARIANT = "fsx"
FSX_KVCACHE: dict[str, Any] = {
    "l2_backend": "fsx_lustre",
    "l2_backend_switch_confirmed": True,
    "fsx": {"data_repository": {"bucket": "amzn-s3-demo-kv-archive", "bucket_region": "us-west-2"}},
}


# The file system as a deployed kvcache stack reports it (outputs L2FileSystemId, ...): what
# `make manifests` writes into the FSx PersistentVolume.
DEPLOYED_FSX = FsxVolume(
    "fs-0123456789abcdef0", "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com", "abcdefgh"
)


def fsx_config(env: str = "dev") -> AppConfig:
    """``config/<env>.yaml`` with the shared tier on FSx for Lustre (and its S3 link)."""
    raw: dict[str, Any] = yaml.safe_load((REPO / "config" / f"{env}.yaml").read_text())
    raw["kvcache"] = {**raw.get("kvcache", {}), **FSX_KVCACHE}
    return parse_config(raw, f"config/{env}.yaml (fsx variant)", env)


# The tiers variant: dev with one endpoint per backend the environment can hold together
# (Curvine and FSx do not share one: FSx has its variant above). The two with a shared tier run
# two replicas each, so cross-node reuse can be shown on both; five single-GPU nodes hold them.
TIERS_VARIANT = "tiers"
TIERS_ENDPOINTS: dict[str, tuple[str, int]] = {
    # name -> (l2_backend, replicas)
    "qwen3-8b": ("curvine", 2),
    "qwen3-8b-ts": ("tieredstorage", 2),
    "qwen3-8b-l1": ("none", 1),
}


def tiers_config(env: str = "dev") -> AppConfig:
    """``config/<env>.yaml`` with one endpoint per backend (``TIERS_ENDPOINTS``)."""
    raw: dict[str, Any] = yaml.safe_load((REPO / "config" / f"{env}.yaml").read_text())
    (base,) = raw["kvcache"]["endpoints"]
    raw["kvcache"]["endpoints"] = [
        {**base, "name": name, "l2_backend": backend, "replicas": replicas}
        for name, (backend, replicas) in TIERS_ENDPOINTS.items()
    ]
    raw["hyperpod"]["gpu_group"]["instance_count"] = 5
    return parse_config(raw, f"config/{env}.yaml (tiers variant)", env)


def env_config(env: str) -> AppConfig:
    """The config behind ``rendered_envs[env]``."""
    if env == TIERS_VARIANT:
        return tiers_config()
    return fsx_config() if env == FSX_VARIANT else load_config(env)


def env_fsx(env: str) -> FsxVolume | None:
    """The deployed file system ``rendered_envs[env]`` names (None: no FSx L2)."""
    return DEPLOYED_FSX if env == FSX_VARIANT else None


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
