"""``bench`` in config: the endpoints it lists are configured ones, each once, one per tier, and
each can take the longest request its workloads send (pure parsing, no double)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import parse_config
from infra.config.rules_bench import max_model_len
from tests.support.config import SOURCE, env_raw, refusal, with_overrides

LISTED = {"bench.endpoints": ["qwen3-8b"]}


def test_an_endpoint_bench_names_must_be_configured() -> None:
    assert refusal({"bench.endpoints": ["nope"]}) == (
        f"{SOURCE}: bench.endpoints = ['nope']: allowed: names of kvcache.endpoints (qwen3-8b); "
        "fix: fix the name, or remove it from bench.endpoints"
    )


def test_an_endpoint_listed_twice_is_refused() -> None:
    message = refusal({"bench.endpoints": ["qwen3-8b", "qwen3-8b"]})
    assert message is not None and message.startswith(f"{SOURCE}: bench.endpoints = ")


def test_two_listed_endpoints_on_one_tier_are_refused() -> None:
    (first,) = env_raw()["kvcache"]["endpoints"]
    two = [{**first, "replicas": 1}, {**first, "replicas": 1, "name": "qwen3-8b-b"}]
    message = refusal({"kvcache.endpoints": two, "bench.endpoints": ["qwen3-8b", "qwen3-8b-b"]})
    assert message is not None and "both on curvine" in message


# dev's endpoint serves --max-model-len 32768; a word is judged at 1.1 tokens.
@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"bench.sweep_prompt_words": [29000]}, None),
        ({"bench.sweep_prompt_words": [30000]}, "bench.sweep_prompt_words"),
        ({"bench.cross_pod_prompt_words": 29800}, "bench.cross_pod_prompt_words"),
        ({"bench.chat.rounds": 20, "bench.chat.answer_tokens": 2000}, "bench.chat"),
    ],
)
def test_a_listed_endpoint_must_hold_the_longest_request(
    overrides: dict[str, Any], field: str | None
) -> None:
    message = refusal({**LISTED, **overrides})
    if field is None:
        assert message is None
        return
    assert message is not None and message.startswith(f"{SOURCE}: {field} = ")
    assert "--max-model-len 32768" in message and "kvcache.endpoints.0.args" in message


SMALL_CONTEXT = {"kvcache.endpoints.0.args": ["--max-model-len", "2048"]}


def test_without_a_list_the_defaults_are_left_to_bench_compare() -> None:
    """An environment never benchmarked is not refused for its benchmark's defaults (whose
    chat workload passes 2048 tokens)."""
    assert refusal(SMALL_CONTEXT) is None


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"bench.sweep_prompt_words": [30000]}, "bench.sweep_prompt_words"),
        ({"bench.cross_pod_prompt_words": 29800}, "bench.cross_pod_prompt_words"),
        (
            {"bench.max_tokens": 4096, "bench.sweep_prompt_words": [27000]},
            "bench.sweep_prompt_words",
        ),
        ({"bench.chat": {"rounds": 20, "answer_tokens": 2000}}, "bench.chat"),
    ],
)
def test_without_a_list_a_workload_the_config_sizes_must_fit_every_endpoint(
    overrides: dict[str, Any], field: str
) -> None:
    """Written sizes say the environment is benchmarked: the prompts, counted in words and
    judged at 1.1 tokens a word, must fit each endpoint's --max-model-len."""
    message = refusal(overrides)
    assert message is not None and message.startswith(f"{SOURCE}: {field} = "), message
    assert "--max-model-len 32768" in message
    assert refusal({"bench.sweep_prompt_words": [29000]}) is None


def test_thresholds_alone_do_not_size_a_workload() -> None:
    assert refusal({**SMALL_CONTEXT, "bench.min_warm_speedup": 3}) is None


@pytest.mark.parametrize(
    ("args", "limit"),
    [
        (["--max-model-len", "2048"], 2048),
        (["--max_model_len", "2048"], 2048),
        (["--max-model-len=2048"], 2048),
        (["--max_model_len=2k"], 2000),
        (["--max-model-len", "2K"], 2048),
        (["--max-model-len", "1.5k"], 1500),
        (["--max-model-len", "auto"], None),
        (["--max-model-len", "-1"], None),
        (["--max-model-len"], None),
        (["--gpu-memory-utilization", "0.9"], None),
    ],
)
def test_the_context_is_read_as_vllm_reads_its_arguments(
    args: list[str], limit: int | None
) -> None:
    """vLLM takes --max_model_len for --max-model-len and human-readable numbers (k for 1000,
    K for 1024); auto and -1 mean the model's own length, which the config does not know."""
    endpoint = parse_config(with_overrides({"kvcache.endpoints.0.args": args}), SOURCE, "dev")
    assert max_model_len(endpoint.kvcache.endpoints[0]) == limit
    message = refusal({"kvcache.endpoints.0.args": args, "bench.sweep_prompt_words": [3000]})
    assert (message is None) == (limit is None), message
