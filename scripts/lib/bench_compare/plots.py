"""The report's PNGs: TTFT p50/p95 cold and warm per tier (``ttft.png``), TTFT against prompt
length (``sweep_ttft.png``), throughput (``throughput.png``) and each tier's share of the prompt
tokens (``hit_rates.png``), one panel per workload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scripts.lib.bench_compare.run import Comparison
from scripts.lib.bench_compare.stats import Figures, figures

TTFT_BARS = (
    ("cold_p50_ms", "cold p50"),
    ("cold_p95_ms", "cold p95"),
    ("warm_p50_ms", "warm p50"),
    ("warm_p95_ms", "warm p95"),
)
SHARE_BARS = (("l0", "L0 GPU"), ("l1", "L1 CPU"), ("l2", "L2"), ("recomputed", "recomputed"))
WIDTH = 0.2


def _by_workload(c: Comparison, bpt: int) -> dict[str, list[Figures]]:
    out: dict[str, list[Figures]] = {}
    for r in c.runs:
        at = c.at_words if r.workload == "sweep" else None
        out.setdefault(r.workload, []).append(figures(r, bpt, at))
    return out


def _save(plt: Any, fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _nan(v: float | None) -> float:
    return float("nan") if v is None else v


def _ttft(plt: Any, groups: dict[str, list[Figures]], path: Path) -> Path:
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 3.6), squeeze=False)
    for ax, (workload, rows) in zip(axes[0], groups.items(), strict=True):
        for i, (key, label) in enumerate(TTFT_BARS):
            xs = [j + (i - 1.5) * WIDTH for j in range(len(rows))]
            ax.bar(xs, [getattr(f, key) or 0.0 for f in rows], WIDTH, label=label)
        ax.set_xticks(range(len(rows)), [f.l2_backend for f in rows])
        ax.set_title(f"TTFT: {workload}")
        ax.set_ylabel("ms")
        ax.legend(fontsize=7)
    return _save(plt, fig, path)


def _sweep(plt: Any, c: Comparison, bpt: int, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for r in (r for r in c.runs if r.workload == "sweep"):
        at = [figures(r, bpt, n) for n in c.plan.lengths]
        cold = [_nan(f.cold_p50_ms) for f in at]
        (line,) = ax.plot(c.plan.lengths, cold, "--", label=f"{r.target.l2_backend} cold")
        ax.plot(
            c.plan.lengths,
            [_nan(f.warm_p50_ms) for f in at],
            "-o",
            color=line.get_color(),
            label=f"{r.target.l2_backend} warm",
        )
    ax.set_xlabel("prompt words (~ tokens)")
    ax.set_ylabel("TTFT p50 (ms)")
    ax.set_title("Cold/warm sweep" if ax.lines else "Cold/warm sweep: not run")
    if ax.lines:
        ax.legend(fontsize=7)
    return _save(plt, fig, path)


def _throughput(plt: Any, groups: dict[str, list[Figures]], path: Path) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), squeeze=False)
    names = list(groups)
    tiers = [f.l2_backend for f in groups[names[0]]]
    for ax, key, label in (
        (axes[0][0], "output_tokens_per_s", "output tokens/s"),
        (axes[0][1], "requests_per_s", "requests/s"),
    ):
        for i, tier in enumerate(tiers):
            xs = [j + (i - (len(tiers) - 1) / 2) * WIDTH for j in range(len(names))]
            values = [getattr(f, key) for w in names for f in groups[w] if f.l2_backend == tier]
            ax.bar(xs, values, WIDTH, label=tier)
        ax.set_xticks(range(len(names)), names)
        ax.set_title(label)
        ax.legend(fontsize=7)
    return _save(plt, fig, path)


def _shares(plt: Any, groups: dict[str, list[Figures]], path: Path) -> Path:
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 3.6), squeeze=False)
    for ax, (workload, rows) in zip(axes[0], groups.items(), strict=True):
        bottom = [0.0] * len(rows)
        for key, label in SHARE_BARS:
            values = [100 * (getattr(f.shares, key) or 0.0) if f.shares else 0.0 for f in rows]
            ax.bar(range(len(rows)), values, 0.6, bottom=bottom, label=label)
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        ax.set_xticks(range(len(rows)), [f.l2_backend for f in rows])
        ax.set_ylim(0, 105)
        ax.set_ylabel("% of prompt tokens")
        ax.set_title(f"Where prompt tokens came from: {workload}", fontsize=9)
        ax.legend(fontsize=7)
    return _save(plt, fig, path)


def draw(c: Comparison, folder: Path, bpt: int) -> list[Path]:
    # Imported when the report is drawn: matplotlib.pyplot takes ~0.5 s to import, about as long
    # as the rest of the CLI's start-up, and most commands draw nothing.
    import matplotlib

    matplotlib.use("Agg")  # no display on CI or a bastion host
    import matplotlib.pyplot as plt

    groups = _by_workload(c, bpt)
    return [
        _ttft(plt, groups, folder / "ttft.png"),
        _sweep(plt, c, bpt, folder / "sweep_ttft.png"),
        _throughput(plt, groups, folder / "throughput.png"),
        _shares(plt, groups, folder / "hit_rates.png"),
    ]
