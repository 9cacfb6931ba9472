"""Fake model servers, two replicas per tier, each tier with the per-token delays the tests and
the example report inject (``tests/doubles/fake_tiers.py`` says how a request is served), and
replicas that join a tier later (the scale-out workload)."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from infra.config import AppConfig, load_config
from scripts.lib.bench_compare.scale_out import Joiner
from tests.doubles.fake_tiers import TierSpec
from tests.doubles.fake_vllm import FakeVllm

# Milliseconds per prompt token by where it came from: recomputed, GPU, CPU, and each L2. A
# 2,500-word prompt answers after 500 ms cold; read back from Curvine after 2,304 x 0.048 +
# 196 x 0.2 = 149.792 ms (the last 196 words are no whole chunk: recomputed), 3.34x sooner; from
# Tiered Storage after 2,304 x 0.004 + 39.2 = 48.416 ms, 10.33x sooner. The tiers stay apart by
# more than the tens of milliseconds a loaded machine can add to a request (a test's
# TOLERANCE_MS), and above bench.min_warm_speedup's default of 2 with that added to a warm one.
COLD, L0, L1 = 0.2, 0.004, 0.012
L2 = {"curvine": 0.048, "tieredstorage": 0.004}
TIERS = ("curvine", "tieredstorage", "none")
# No settling and no waiting for counters between workloads: the fakes count at once.
QUICK = ("--settle-seconds", "0", "--counters-wait-seconds", "0")


def delays(tier: str) -> dict[str, float]:
    return {"l0": L0, "l1": L1, "l2": L2.get(tier, 0.0), "cold": COLD}


def expected_ms(tier: str, **tokens: int) -> float:
    """The delay the fake injects for a prompt whose tokens came from where ``tokens`` says."""
    per = delays(tier)
    return sum(n * per[where] for where, n in tokens.items())


class Fleet(dict[str, tuple[FakeVllm, FakeVllm]]):
    """Tier -> its two running replicas; ``new_replica`` starts another of a tier (its own
    empty GPU and CPU caches, the tier's L2 directory), as a Pod the endpoint scaled out to."""

    def __init__(self, stack: contextlib.ExitStack) -> None:
        super().__init__()
        self.stack = stack
        self.specs: dict[str, TierSpec] = {}

    def new_replica(self, tier: str, l2_state: str = "up") -> FakeVllm:
        """``l2_state`` ``down``: a replica that cannot reach the tier's L2 (its mount failed)."""
        replica = self.stack.enter_context(FakeVllm(tiers=self.specs[tier]))
        if l2_state != "up":
            replica.set_l2(l2_state)
        return replica

    def joiner(self, tier: str) -> Joiner:
        """Starts the new replica when the workload asks for it, after the prefix is written."""

        @contextlib.contextmanager
        def join() -> Iterator[str]:
            yield self.new_replica(tier).url

        return join


@contextlib.contextmanager
def fleet(tiers: tuple[str, ...] = TIERS) -> Iterator[Fleet]:
    """Two replicas per tier; a tier with an L2 shares one directory between its replicas."""
    with contextlib.ExitStack() as stack:
        out = Fleet(stack)
        for tier in tiers:
            l2 = None if tier == "none" else stack.enter_context(tempfile.TemporaryDirectory())
            spec = out.specs[tier] = TierSpec(tier, l2, delays(tier))
            out[tier] = (
                stack.enter_context(FakeVllm(tiers=spec)),
                stack.enter_context(FakeVllm(tiers=spec)),
            )
        yield out


def target_args(servers: dict[str, tuple[FakeVllm, FakeVllm]]) -> list[str]:
    """``--target TIER=URL,URL`` for each tier."""
    args = []
    for tier, (a, b) in servers.items():
        args += ["--target", f"{tier}={a.url},{b.url}"]
    return args


def compare_argv(servers: dict[str, tuple[FakeVllm, FakeVllm]], out: Path, *args: str) -> list[str]:
    """``hpkv bench compare`` on every tier of ``servers`` into ``out``, answering in JSON."""
    return ["bench", "compare", *target_args(servers), "--out", str(out), *QUICK, *args, "--json"]


def bench_config(**bench: Any) -> AppConfig:
    """The dev config with a short chat (two users, two rounds, short prompts) and ``bench``."""
    base = load_config("dev")
    chat = base.bench.chat.model_copy(
        update={
            "users": 2,
            "rounds": 2,
            "concurrency": 2,
            "system_prompt_words": 300,
            "user_context_words": 600,
        }
    )
    return base.model_copy(update={"bench": base.bench.model_copy(update={"chat": chat, **bench})})
