"""``bench`` in config: the endpoints it lists are configured ones, each once, one per tier, and
each can take the longest request its workloads send (pure parsing, no double)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.config import SOURCE, env_raw, refusal

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


def test_without_a_list_the_sizes_are_left_to_bench_compare() -> None:
    """An environment never benchmarked is not refused for its benchmark's defaults."""
    assert refusal({"bench.sweep_prompt_words": [30000]}) is None
