"""TTFT benchmarks: cold vs warm sweep over prompt lengths, multi-turn, concurrency levels.

``targets`` are base URLs of OpenAI-compatible servers. With two targets, cold requests go to the
first and warm (byte-identical) requests to the second, so a warm hit on the second proves the
KV blocks crossed Pods through L2. With one target (the router), both go to it.
"""

from __future__ import annotations

import csv
import json
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from infra.cdk.written import OutputFolder
from scripts.lib.openai_stream import StreamResult, stream_completion
from scripts.lib.prompts import make_prompt, seed_for

Send = Callable[[str, str], StreamResult]  # (target, prompt) -> result
Progress = Callable[[str], None]


@dataclass
class SweepRow:
    prompt_words: int
    repeat: int
    prompt_tokens: int | None
    cold_ttft_ms: float
    warm_ttft_ms: float

    @property
    def speedup(self) -> float:
        return self.cold_ttft_ms / self.warm_ttft_ms if self.warm_ttft_ms else 0.0


@dataclass
class TurnRow:
    turn: int
    target: str
    prompt_tokens: int | None
    warm_ttft_ms: float
    cold_ttft_ms: float

    @property
    def speedup(self) -> float:
        return self.cold_ttft_ms / self.warm_ttft_ms if self.warm_ttft_ms else 0.0


@dataclass
class ConcurrencyRow:
    concurrency: int
    cold_median_ms: float
    warm_median_ms: float
    cold_p90_ms: float
    warm_p90_ms: float


@dataclass
class BenchResult:
    seed: int
    targets: list[str]
    sweep: list[SweepRow] = field(default_factory=list)
    turns: list[TurnRow] = field(default_factory=list)
    concurrency: list[ConcurrencyRow] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        by_len: dict[int, list[SweepRow]] = {}
        for row in self.sweep:
            by_len.setdefault(row.prompt_words, []).append(row)
        return {
            str(n): {
                "cold_median_ms": statistics.median(r.cold_ttft_ms for r in rows),
                "warm_median_ms": statistics.median(r.warm_ttft_ms for r in rows),
                "speedup": statistics.median(r.speedup for r in rows),
            }
            for n, rows in sorted(by_len.items())
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "targets": self.targets,
            "sweep": [asdict(r) | {"speedup": r.speedup} for r in self.sweep],
            "turns": [asdict(r) | {"speedup": r.speedup} for r in self.turns],
            "concurrency": [asdict(r) for r in self.concurrency],
            "summary": self.summary(),
        }


def make_sender(model: str, max_tokens: int, timeout: float = 300.0) -> Send:
    def send(target: str, prompt: str) -> StreamResult:
        return stream_completion(target, model, prompt, max_tokens=max_tokens, timeout=timeout)

    return send


def _pair(targets: Sequence[str]) -> tuple[str, str]:
    return (targets[0], targets[1] if len(targets) > 1 else targets[0])


def run_sweep(
    send: Send,
    targets: Sequence[str],
    lengths: Sequence[int],
    repeats: int,
    seed: int,
    progress: Progress | None = None,
) -> list[SweepRow]:
    cold_target, warm_target = _pair(targets)
    rows = []
    for n in lengths:
        for r in range(repeats):
            prompt = make_prompt(seed_for(seed, 1, n, r), n)
            cold = send(cold_target, prompt)
            warm = send(warm_target, prompt)
            rows.append(SweepRow(n, r, cold.prompt_tokens, cold.ttft_ms, warm.ttft_ms))
            if progress:
                progress(f"sweep {n} words #{r}")
    return rows


def run_turns(
    send: Send,
    targets: Sequence[str],
    turns: int,
    words_per_turn: int,
    seed: int,
    progress: Progress | None = None,
) -> list[TurnRow]:
    """A conversation whose history grows each turn; turn k goes to targets[k % len]."""
    history = make_prompt(seed_for(seed, 2, 0), words_per_turn, prefix="System: ")
    rows = []
    for k in range(1, turns + 1):
        question = make_prompt(seed_for(seed, 2, k), words_per_turn // 4)
        prompt = f"{history}\nUser: {question}\nAssistant:"
        target = targets[k % len(targets)]
        warm = send(target, prompt)
        # A fresh prompt of the same length is the no-cache baseline for this turn.
        words = len(prompt.split())
        cold = send(target, make_prompt(seed_for(seed, 3, k), words))
        rows.append(TurnRow(k, target, warm.prompt_tokens, warm.ttft_ms, cold.ttft_ms))
        history = f"{prompt} {warm.text}"
        if progress:
            progress(f"turn {k}")
    return rows


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def run_concurrency(
    send: Send,
    targets: Sequence[str],
    levels: Sequence[int],
    words: int,
    seed: int,
    progress: Progress | None = None,
) -> list[ConcurrencyRow]:
    cold_target, warm_target = _pair(targets)
    rows = []
    for level in levels:
        prompts = [make_prompt(seed_for(seed, 4, level, i), words) for i in range(level)]
        with ThreadPoolExecutor(max_workers=level) as pool:
            cold = list(pool.map(lambda p: send(cold_target, p).ttft_ms, prompts))
            warm = list(pool.map(lambda p: send(warm_target, p).ttft_ms, prompts))
        rows.append(
            ConcurrencyRow(
                level, statistics.median(cold), statistics.median(warm), _p90(cold), _p90(warm)
            )
        )
        if progress:
            progress(f"concurrency {level}")
    return rows


def write_results(result: BenchResult, out_dir: Path, label: str = "--out") -> list[Path]:
    """results.json, one CSV per experiment and PNG plots; returns the files written. Only into
    a folder that holds nothing the product did not write there (``infra.cdk.written``)."""
    folder = OutputFolder(out_dir, label)
    written = folder.write({"results.json": json.dumps(result.as_dict(), indent=2)})
    tables: dict[str, list[dict[str, Any]]] = {
        "sweep.csv": [asdict(r) | {"speedup": r.speedup} for r in result.sweep],
        "turns.csv": [asdict(r) | {"speedup": r.speedup} for r in result.turns],
        "concurrency.csv": [asdict(r) for r in result.concurrency],
    }
    for name, rows in tables.items():
        if not rows:
            continue
        path = out_dir / name
        with path.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        written.append(path)
    written += _plots(result, out_dir)
    folder.record(written)
    return written


def _plots(result: BenchResult, out_dir: Path) -> list[Path]:
    # Imported when a plot is drawn: matplotlib.pyplot takes ~0.5 s to import, about as long as
    # the rest of the CLI's start-up, and most commands draw nothing.
    import matplotlib

    matplotlib.use("Agg")  # no display on CI or a bastion host
    import matplotlib.pyplot as plt

    written = []
    if result.sweep:
        summary = result.summary()
        xs = [int(k) for k in summary]
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot(xs, [summary[str(x)]["cold_median_ms"] for x in xs], "o-", label="cold (Pod A)")
        ax.plot(xs, [summary[str(x)]["warm_median_ms"] for x in xs], "s-", label="warm (Pod B)")
        ax.set_xlabel("prompt length (words ~ tokens)")
        ax.set_ylabel("TTFT (ms, median)")
        ax.set_title("TTFT vs prompt length: cold vs warm through L2")
        ax.legend()
        ax.grid(alpha=0.3)
        path = out_dir / "ttft_vs_prompt.png"
        fig.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    if result.turns:
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.bar([r.turn for r in result.turns], [r.speedup for r in result.turns])
        ax.axhline(1.0, color="grey", linewidth=1)
        ax.set_xlabel("turn")
        ax.set_ylabel("speedup (cold TTFT / warm TTFT)")
        ax.set_title("Multi-turn conversation: speedup per turn")
        path = out_dir / "speedup_per_turn.png"
        fig.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    if result.concurrency:
        fig, ax = plt.subplots(figsize=(7, 4))
        levels = [r.concurrency for r in result.concurrency]
        ax.plot(levels, [r.cold_median_ms for r in result.concurrency], "o-", label="cold")
        ax.plot(levels, [r.warm_median_ms for r in result.concurrency], "s-", label="warm")
        ax.set_xlabel("concurrent requests")
        ax.set_ylabel("TTFT (ms, median)")
        ax.legend()
        path = out_dir / "ttft_vs_concurrency.png"
        fig.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written
