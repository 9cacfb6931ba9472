"""Prompts are deterministic per seed and identical on both targets. Pure functions; no double."""

from __future__ import annotations

from scripts.lib.bench import (
    make_sender,
    run_sweep,
)
from scripts.lib.prompts import make_prompt
from tests.doubles.fake_vllm import FakeVllm


def test_prompts_are_deterministic_and_identical_on_both_targets() -> None:
    assert make_prompt(7, 1900) == make_prompt(7, 1900)
    assert make_prompt(7, 1900) != make_prompt(8, 1900)
    with FakeVllm(0.001) as a, FakeVllm(0.001) as b:
        send = make_sender("qwen2-7b", 2)
        run_sweep(send, [a.url, b.url], [100, 300], repeats=2, seed=42)
        assert a.prompts == b.prompts  # byte-identical, in the same order
        assert len(set(a.prompts)) == 4  # every cold request starts a fresh prefix
        assert [len(p.split()) for p in a.prompts] == [100, 100, 300, 300]
