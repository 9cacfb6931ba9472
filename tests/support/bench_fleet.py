"""Fake model servers, two replicas per tier, each tier with the per-token delays the tests and
the example report inject (``tests/doubles/fake_tiers.py`` says how a request is served)."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator

from tests.doubles.fake_tiers import TierSpec
from tests.doubles.fake_vllm import FakeVllm

# Milliseconds per prompt token by where it came from: recomputed, GPU, CPU, and each L2. A
# 2,500-word prompt answers after 1,000 ms cold; read back from Curvine after 2,304 x 0.048 +
# 196 x 0.4 = 188.992 ms (the last 196 words are no whole chunk: recomputed), 5.29x sooner; from
# Tiered Storage after 2,304 x 0.004 + 78.4 = 87.616 ms, 11.41x sooner. Delays this long keep
# the two speedups apart even when a loaded machine adds tens of milliseconds to every request.
COLD, L0, L1 = 0.4, 0.004, 0.012
L2 = {"curvine": 0.048, "tieredstorage": 0.004}
TIERS = ("curvine", "tieredstorage", "none")


def delays(tier: str) -> dict[str, float]:
    return {"l0": L0, "l1": L1, "l2": L2.get(tier, 0.0), "cold": COLD}


def expected_ms(tier: str, **tokens: int) -> float:
    """The delay the fake injects for a prompt whose tokens came from where ``tokens`` says."""
    per = delays(tier)
    return sum(n * per[where] for where, n in tokens.items())


@contextlib.contextmanager
def fleet(tiers: tuple[str, ...] = TIERS) -> Iterator[dict[str, tuple[FakeVllm, FakeVllm]]]:
    """Two replicas per tier; a tier with an L2 shares one directory between its two."""
    with contextlib.ExitStack() as stack:
        out = {}
        for tier in tiers:
            l2 = None if tier == "none" else stack.enter_context(tempfile.TemporaryDirectory())
            spec = TierSpec(tier, l2, delays(tier))
            out[tier] = (stack.enter_context(FakeVllm(tiers=spec)),
                         stack.enter_context(FakeVllm(tiers=spec)))  # fmt: skip
        yield out


def target_args(servers: dict[str, tuple[FakeVllm, FakeVllm]]) -> list[str]:
    """``--target TIER=URL,URL`` for each tier."""
    args = []
    for tier, (a, b) in servers.items():
        args += ["--target", f"{tier}={a.url},{b.url}"]
    return args
