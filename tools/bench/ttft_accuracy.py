"""How close the CLI's TTFT measurement comes to a known prefill delay.

A fake OpenAI-compatible server (tests/doubles/fake_vllm.py, a separate process) waits a fixed
delay before its first token; the CLI's client (``scripts.lib.openai_stream``) measures TTFT against
it. Printed: for each delay, the median, p90 and max of (measured TTFT - injected delay), and the
same against the interval the server itself recorded. A busy machine widens the spread: this is
a figure to read, not a pass/fail test.

Usage: python -m tools.bench.ttft_accuracy [--requests 30] [--delays-ms 15,60,250]
"""

from __future__ import annotations

import argparse
import statistics

from scripts.lib.openai_stream import stream_completion
from scripts.lib.prompts import make_prompt
from tests.doubles.fake_vllm import FakeVllm


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def measure(delay_s: float, requests: int) -> tuple[list[float], list[float]]:
    """(measured - injected, measured - server-recorded) in ms, one entry per request."""
    with FakeVllm(delay_s) as server:
        ttfts = [
            stream_completion(server.url, "m", make_prompt(i, 200), max_tokens=2).ttft_ms
            for i in range(requests)
        ]
        recorded = [(t["first_token_sent"] - t["received"]) * 1000 for t in server.timings]
    injected = [t - delay_s * 1000 for t in ttfts]
    overhead = [t - r for t, r in zip(ttfts, recorded, strict=True)]
    return injected, overhead


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--delays-ms", default="15,60,250")
    args = parser.parse_args(argv)
    print(f"{'delay ms':>9} {'median err':>11} {'p90 err':>8} {'max err':>8} {'client ms':>10}")
    for delay_ms in (int(x) for x in args.delays_ms.split(",")):
        injected, overhead = measure(delay_ms / 1000, args.requests)
        print(
            f"{delay_ms:>9} {statistics.median(injected):>+11.2f} {_p90(injected):>+8.2f} "
            f"{max(injected):>+8.2f} {statistics.median(overhead):>+10.2f}"
        )
    print("err: measured TTFT - injected delay; client ms: measured - server-recorded prefill")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
