"""vLLM's own ``vllm serve`` parser and config classes (``make_arg_parser``, ``EngineArgs``,
``KVTransferConfig``, the whole engine config against the model's config.json) on the arguments
each endpoint's container gets: vLLM 0.16 refuses a misspelled key or a bad value where older
releases dropped it silently, so a mistake here is a Pod that never starts. vLLM's CUDA wheel runs
on its CPU platform for this (tests/runtime/oracles/vllm_args.py)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig
from infra.config.images import facts
from tests.support.config import env_config
from tests.support.runtime import (
    ENVS,
    QWEN3_8B,
    ask,
    container_of,
    endpoint_pod,
    operator_of,
)
from tests.support.runtime_judges import vllm_problems

CASES = [(env, e.name) for env in ENVS for e in env_config(env).kvcache.endpoints]
Rendered = dict[str, tuple[AppConfig, list[dict[str, Any]]]]


def _args(rendered: Rendered, env: str, name: str, tmp: Any) -> tuple[Any, list[str]]:
    config, objs = rendered[env]
    (e,) = [e for e in config.kvcache.endpoints if e.name == name]
    container = container_of(endpoint_pod(objs, e, operator_of(config)), tmp / "c", tmp / "p")
    return e, container.args


@pytest.mark.parametrize(("env", "endpoint"), CASES)
def test_vllm_accepts_each_endpoints_arguments_for_its_model(
    image: str, rendered: Rendered, env: str, endpoint: str, tmp_path: Any
) -> None:
    e, args = _args(rendered, env, endpoint, tmp_path)
    answer = ask(image, "vllm_args", {"args": args, "model_dir": str(QWEN3_8B)})
    assert vllm_problems(e, facts(e.image), answer) == []


def test_a_misspelled_kv_transfer_config_key_is_refused(
    image: str, rendered: Rendered, tmp_path: Any
) -> None:
    e, args = _args(rendered, "dev", env_config("dev").kvcache.endpoints[0].name, tmp_path)
    at = args.index("--kv-transfer-config") + 1
    args[at] = args[at].replace('"kv_connector"', '"kv_conector"')
    answer = ask(image, "vllm_args", {"args": args, "model_dir": None})
    (problem,) = vllm_problems(e, facts(e.image), answer)
    assert "vLLM refuses the arguments (parse)" in problem and "kv_conector" in problem


def test_a_context_longer_than_the_model_is_refused(
    image: str, rendered: Rendered, tmp_path: Any
) -> None:
    """The model's config.json is what judges --max-model-len (40,960 for Qwen3-8B)."""
    e, args = _args(rendered, "dev", env_config("dev").kvcache.endpoints[0].name, tmp_path)
    args[args.index("--max-model-len") + 1] = "65536"
    answer = ask(image, "vllm_args", {"args": args, "model_dir": str(QWEN3_8B)})
    (problem,) = vllm_problems(e, facts(e.image), answer)
    assert "(engine config)" in problem and "max_model_len" in problem
