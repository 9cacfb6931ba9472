"""What each endpoint's Pod memory gives LMCache's CPU cache (L1): the Pod's limit less vLLM's
own need (8 GiB and 2 GiB per GPU), the boundary of the rule that keeps at least 1 GiB for it,
and its one-line refusal (pure parsing, no double)."""

from __future__ import annotations

import pytest

from infra.config import parse_config
from tests.support.config import SOURCE, refusal, with_overrides

FIELD = "kvcache.endpoints.0.memory_gib"


@pytest.mark.parametrize(("memory", "tp", "l1"), [(64, 1, 54), (64, 2, 52), (11, 1, 1)])
def test_l1_gets_the_pod_memory_vllm_does_not_need(memory: int, tp: int, l1: int) -> None:
    overrides = {FIELD: memory, "kvcache.endpoints.0.tensor_parallel_size": tp}
    if tp > 1:
        overrides["hyperpod.gpu_group.instance_type"] = "ml.g6e.12xlarge"
    (e,) = parse_config(with_overrides(overrides), SOURCE, "dev").kvcache.endpoints
    assert e.l1_cache_gib == l1


def test_l1_off_gives_it_nothing() -> None:
    overrides = {FIELD: 64, "kvcache.endpoints.0.enable_l1_cache": False}
    (e,) = parse_config(with_overrides(overrides), SOURCE, "dev").kvcache.endpoints
    assert e.l1_cache_gib == 0


def test_a_pod_too_small_for_vllm_and_one_gib_of_l1_is_refused() -> None:
    assert refusal({FIELD: 11}) is None
    assert refusal({FIELD: 10}) == (
        f"{SOURCE}: {FIELD} = 10: allowed: at least 11 with enable_l1_cache true and "
        "tensor_parallel_size 1: vLLM needs 10 GiB of the Pod's memory and LMCache's CPU cache "
        "(L1) gets the rest; fix: raise memory_gib to 11 or more, or set enable_l1_cache: false"
    )
    assert refusal({FIELD: 10, "kvcache.endpoints.0.enable_l1_cache": False}) is None


def test_with_l1_off_a_pod_too_small_for_vllm_is_refused() -> None:
    """No L1 to shrink: below vLLM's own need the container is OOM-killed as it starts. One GPU:
    the field's own floor (10); two: the rule's (12)."""
    off = {"kvcache.endpoints.0.enable_l1_cache": False}
    assert refusal({**off, FIELD: 10}) is None
    assert refusal({**off, FIELD: 9}) == (
        f"{SOURCE}: {FIELD} = 9: allowed: greater than or equal to 10; fix: change {FIELD} in "
        f"{SOURCE}"
    )
    two = {
        **off,
        "kvcache.endpoints.0.tensor_parallel_size": 2,
        "hyperpod.gpu_group.instance_type": "ml.g6e.12xlarge",
    }
    assert refusal({**two, FIELD: 12}) is None
    assert refusal({**two, FIELD: 11}) == (
        f"{SOURCE}: {FIELD} = 11: allowed: at least 12 with tensor_parallel_size 2: vLLM's API "
        "server and engine need that much of the Pod's memory; fix: raise memory_gib to 12"
    )
