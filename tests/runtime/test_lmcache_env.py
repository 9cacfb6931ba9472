"""LMCache's own env loader (``LMCacheEngineConfig.from_env``, and ``parse_remote_url`` for the
remote URL) on the env each endpoint's model container ends with: what operator 3.2 renders
(``tests/doubles/operator_pod.py``: it injects its sagemaker-hyperpod:// URL and extra config, and
drops the endpoint's own LMCACHE_* entries), then the rendered L2 policy. Every endpoint of every
shipped environment and of the variants with one endpoint per backend.

LMCache does not refuse a bad value: it degrades it (a size with a unit becomes None, a misspelled
name is ignored, a URL without a port turns L2 off with a warning). So the judge asserts the
values LMCache ends up with (``tests/support/runtime_judges.py``), and the last tests show that it
catches each of those mistakes.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig
from infra.config.images import LMCACHE_DEFAULT_L1_GIB
from infra.config.model import l1_in_container_gib
from k8s.l2_pod import L1_SIZE_ENV
from tests.support.config import env_config
from tests.support.runtime import ENVS, Container, ask, container_of, endpoint_pod, operator_of
from tests.support.runtime_judges import lmcache_problems

CASES = [(env, e.name) for env in ENVS for e in env_config(env).kvcache.endpoints]
Rendered = dict[str, tuple[AppConfig, list[dict[str, Any]]]]


@pytest.fixture(scope="session")
def lmcache_default(image: str) -> float:
    """LMCache's own L1 size when no size reaches it, read from LMCache."""
    size: float = ask(image, "lmcache_config", {"env": {}})["config"]["max_local_cpu_size"]
    return size


def _container(rendered: Rendered, env: str, name: str, tmp: Any) -> tuple[Any, Container]:
    config, objs = rendered[env]
    (e,) = [e for e in config.kvcache.endpoints if e.name == name]
    pod = endpoint_pod(objs, e, operator_of(config))
    return e, container_of(pod, tmp / "claims", tmp / "pod")


@pytest.mark.parametrize(("env", "endpoint"), CASES)
def test_lmcache_reads_what_each_endpoint_needs_from_its_container(
    image: str, rendered: Rendered, lmcache_default: float, env: str, endpoint: str, tmp_path: Any
) -> None:
    e, container = _container(rendered, env, endpoint, tmp_path)
    answer = ask(image, "lmcache_config", {"env": container.env})
    assert lmcache_problems(e, container, answer, lmcache_default) == []
    # What the app says the endpoint's L1 is (hpkv size, the memory rule) is what LMCache got.
    assert answer["config"]["max_local_cpu_size"] == l1_in_container_gib(env_config(env), e)


def test_the_default_l1_the_app_assumes_is_lmcaches_own(lmcache_default: float) -> None:
    assert lmcache_default == LMCACHE_DEFAULT_L1_GIB


# --- the judge catches what LMCache lets through ------------------------------------------------


def _dev(rendered: Rendered, tmp: Any) -> tuple[Any, Container]:
    return _container(rendered, "dev", env_config("dev").kvcache.endpoints[0].name, tmp)


def _judged(
    image: str, e: Any, container: Container, lmcache_default: float, **env: str | None
) -> list[str]:
    changed = {**container.env, **{k: v for k, v in env.items() if v is not None}}
    for name in (k for k, v in env.items() if v is None):
        del changed[name]
    mutated = Container(changed, container.args, container.mounts, container.claims, container.own)
    answer = ask(image, "lmcache_config", {"env": changed})
    return lmcache_problems(e, mutated, answer, lmcache_default)


def test_a_misspelled_variable_is_caught(
    image: str, rendered: Rendered, lmcache_default: float, tmp_path: Any
) -> None:
    e, container = _dev(rendered, tmp_path)
    url = container.env["LMCACHE_REMOTE_URL"]
    problems = _judged(
        image, e, container, lmcache_default, LMCACHE_REMOTE_URL=None, LMCACHE_REMOTE_URLL=url
    )
    assert any(
        p.startswith("LMCACHE_REMOTE_URLL: LMCache reads no such variable") for p in problems
    )
    assert "no remote URL: LMCache runs without its L2" in problems


def test_a_url_without_a_port_is_caught(
    image: str, rendered: Rendered, lmcache_default: float, tmp_path: Any
) -> None:
    e, container = _dev(rendered, tmp_path)
    url = container.env["LMCACHE_REMOTE_URL"].replace("localhost:0", "localhost")
    (problem,) = _judged(image, e, container, lmcache_default, LMCACHE_REMOTE_URL=url)
    assert problem.startswith(f"LMCache refuses {url}") and "missing port" in problem


def test_an_l1_size_with_a_unit_is_caught(
    image: str, rendered: Rendered, lmcache_default: float, tmp_path: Any
) -> None:
    e, container = _dev(rendered, tmp_path)
    size = container.env[L1_SIZE_ENV] + "Gi"
    (problem,) = _judged(image, e, container, lmcache_default, **{L1_SIZE_ENV: size})
    assert problem.startswith(f"{L1_SIZE_ENV}={size!r}: LMCache cannot read it")


def test_a_url_away_from_the_claims_mount_is_caught(
    image: str, rendered: Rendered, lmcache_default: float, tmp_path: Any
) -> None:
    e, container = _dev(rendered, tmp_path)
    (problem,) = _judged(
        image, e, container, lmcache_default, LMCACHE_REMOTE_URL="fs://localhost:0/mnt/elsewhere/"
    )
    assert "names /mnt/elsewhere, where the container mounts no claim" in problem
