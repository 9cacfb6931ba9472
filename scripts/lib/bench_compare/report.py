"""The report folder: ``report.md`` (the verdicts, then a table per workload), the CSVs it is
built from (``requests.csv`` every request, ``summary.csv`` every table row, ``verdicts.csv``),
``results.json`` and the plots (``plots.py``). Every figure in report.md is computed from
requests.csv and the counters, so a reader can recompute it."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from infra.cdk.written import OutputFolder
from scripts.lib.bench_compare import plots
from scripts.lib.bench_compare.run import Comparison
from scripts.lib.bench_compare.stats import Figures, figures
from scripts.lib.bench_compare.verdicts import (
    CROSS_POD,
    SCALE_OUT,
    SPEEDUP,
    Verdict,
    cross_pod_hit,
)

TITLES = {
    "sweep": "Cold/warm sweep",
    "chat": "Multi-round chat",
    "cross_pod": "Cross-Pod reuse",
    "scale_out": "Scale-out: a replica joins",
}
SHARES = ("l0", "l1", "l2", "recomputed", "load_shortfall")
COLUMNS = [
    "l2_backend",
    "endpoint",
    "requests",
    "cold p50 ms",
    "cold p95 ms",
    "warm p50 ms",
    "warm p95 ms",
    "speedup",
    "output tok/s",
    "req/s",
    "L0",
    "L1",
    "L2",
    "recomputed",
    "failed loads",
]


def ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f} %"


def times(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def table_figures(c: Comparison, kv_bytes_per_token: int, at_words: int) -> list[Figures]:
    """One row per workload and tier, in run order (the sweep's TTFT at ``at_words``)."""
    return [
        figures(r, kv_bytes_per_token, at_words if r.workload == "sweep" else None) for r in c.runs
    ]


def _row(f: Figures) -> list[str]:
    s = f.shares
    shares = [pct(getattr(s, k) if s else None) for k in SHARES]
    return [
        f.l2_backend,
        f.endpoint,
        str(f.requests),
        ms(f.cold_p50_ms),
        ms(f.cold_p95_ms),
        ms(f.warm_p50_ms),
        ms(f.warm_p95_ms),
        times(f.speedup),
        f"{f.output_tokens_per_s:.1f}",
        f"{f.requests_per_s:.2f}",
        *shares,
    ]


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(r) + " |" for r in rows),
    ]


def _verdict_cell(v: Verdict | None) -> str:
    if v is None:
        return "-"
    if v.status == "n/a":
        return "n/a"
    shown = (
        "-"
        if v.measured is None
        else (times(v.measured) if v.check == SPEEDUP else pct(v.measured))
    )
    return f"{shown} **{v.status}**" + ("" if v.measured is not None else f" ({v.reason})")


def _worst(verdicts: list[Verdict], check: str) -> Verdict | None:
    """The tier's verdict of ``check``; of several (a workload given twice) a failed one."""
    mine = [v for v in verdicts if v.check == check]
    return next((v for v in mine if v.status == "fail"), mine[0] if mine else None)


def _verdicts_table(c: Comparison) -> list[str]:
    rows = []
    for t in c.targets:
        mine = c.verdicts_of(t)
        rows.append(
            [
                t.l2_backend,
                t.endpoint,
                _verdict_cell(_worst(mine, CROSS_POD)),
                _verdict_cell(_worst(mine, SPEEDUP)),
                _verdict_cell(_worst(mine, SCALE_OUT)),
                f"**{c.result_of(t)}**",
            ]
        )
    thresholds = {v.check: v.threshold for v in c.verdicts}
    hit, speed = thresholds.get(CROSS_POD), thresholds.get(SPEEDUP)
    head = [
        "l2_backend",
        "endpoint",
        f"cross-Pod hit (>= {pct(hit)})",
        f"warm/cold TTFT p50 at {c.at_words} words (>= {times(speed)})",
        f"new replica L2 share (>= {pct(thresholds.get(SCALE_OUT))})",
        "result",
    ]
    return _table(head, rows)


def markdown(c: Comparison, kv_bytes_per_token: int, heading: str, note: str, guide: str) -> str:
    at_words = c.at_words
    rows = table_figures(c, kv_bytes_per_token, at_words)
    p = c.plan
    lines = [f"# {heading}", ""]
    if note:
        lines += [f"> {note}", ""]
    models = ", ".join(sorted(set(c.models.values())))
    lines += [
        f"Run {c.started}, seed {p.seed}, model {models}. Verdicts from `bench` in the "
        f"environment's config; how to read this report: {guide}.",
        "",
        "## Verdicts",
        "",
        *_verdicts_table(c),
        "",
    ]
    intro = {
        "sweep": f"Cold: a fresh prompt on the first replica; warm: the same bytes on the "
        f"second. TTFT at {at_words} words, {p.repeats} pairs; throughput and shares "
        f"over the whole sweep ({', '.join(map(str, p.lengths))} words).",
        "chat": f"{p.chat.users} users x {p.chat.rounds} rounds, at most {p.chat.concurrency} "
        f"requests in flight; a {p.chat.system_prompt_words}-word system prompt shared "
        f"by all, {p.chat.user_context_words} words of context per user, "
        f"{p.chat.question_words}-word questions, {p.chat.answer_tokens}-token answers. "
        "Cold: each user's first round; warm: the later ones.",
        "cross_pod": f"A fresh {p.cross_pod_words}-word prompt written on the first replica "
        "(cold) and read on the second (warm); the shares are the second "
        "replica's.",
        "scale_out": f"A fresh {p.cross_pod_words}-word prefix written on a running replica "
        "(cold); then a replica joins (the endpoint scaled out by one) and its "
        "first request is that prefix (warm); the shares are the new replica's. "
        "On none the new replica recomputes it: a cold replica on an L1-only "
        "endpoint.",
    }
    for workload in p.workloads:
        mine = [
            _row(f)
            for f, r in zip(rows, c.runs, strict=True)
            if f.workload == workload and "not_run" not in r.extra
        ]
        lines += [f"## {TITLES[workload]}", "", intro[workload], "", *_table(COLUMNS, mine), ""]
        skipped = [
            f"{r.target.l2_backend}: {r.extra['not_run']}"
            for r in c.runs
            if r.workload == workload and "not_run" in r.extra
        ]
        if skipped:
            lines += ["Not run: " + "; ".join(skipped) + ".", ""]
        if workload == "sweep":
            lines += ["### By prompt length", "", *_by_length(c, kv_bytes_per_token), ""]
    lines += [
        "## Files",
        "",
        "`requests.csv` (every request), `summary.csv` (every row above), "
        "`verdicts.csv`, `results.json`; `ttft.png`, `sweep_ttft.png`, "
        "`throughput.png`, `hit_rates.png`.",
        "",
    ]
    return "\n".join(lines)


def _by_length(c: Comparison, kv_bytes_per_token: int) -> list[str]:
    rows = []
    for n in c.plan.lengths:
        for r in (r for r in c.runs if r.workload == "sweep"):
            f = figures(r, kv_bytes_per_token, n)
            rows.append(
                [str(n), f.l2_backend, ms(f.cold_p50_ms), ms(f.warm_p50_ms), times(f.speedup)]
            )
    return _table(["prompt words", "l2_backend", "cold p50 ms", "warm p50 ms", "speedup"], rows)


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    return path


def _summary_rows(c: Comparison, kv_bytes_per_token: int) -> list[dict[str, Any]]:
    out = []
    for f, run in zip(table_figures(c, kv_bytes_per_token, c.at_words), c.runs, strict=True):
        row = {k: v for k, v in asdict(f).items() if k != "shares"}
        row["speedup"] = f.speedup
        row |= {k: getattr(f.shares, k) if f.shares else None for k in SHARES}
        if run.workload in ("cross_pod", "scale_out"):
            key = "cross_pod_hit" if run.workload == "cross_pod" else "new_replica_l2_share"
            row[key] = cross_pod_hit(run, kv_bytes_per_token)
        out.append(row)
    return out


GUIDE = "docs/bench-compare.md in the product's repository"


def write(
    c: Comparison,
    folder: Path,
    kv_bytes_per_token: int,
    heading: str,
    note: str = "",
    guide: str = GUIDE,
) -> list[Path]:
    """Every file of the report; returns them (report.md first). Only into a folder that holds
    nothing the product did not write there (``infra.cdk.written``)."""
    guard = OutputFolder(folder, "--out")
    guard.check()
    folder.mkdir(parents=True, exist_ok=True)
    requests = [
        {
            "workload": s.workload,
            "l2_backend": s.l2_backend,
            "endpoint": r.target.endpoint,
            "kind": s.kind,
            "replica": s.replica,
            "ttft_ms": s.ttft_ms,
            "total_ms": s.total_ms,
            "prompt_tokens": s.prompt_tokens,
            "completion_tokens": s.completion_tokens,
            "started_s": s.started_s,
            **s.detail,
        }
        for r in c.runs
        for s in r.samples
    ]
    summary = _summary_rows(c, kv_bytes_per_token)
    report = folder / "report.md"
    report.write_text(markdown(c, kv_bytes_per_token, heading, note, guide))
    files = [
        report,
        _write_csv(folder / "requests.csv", requests),
        _write_csv(folder / "summary.csv", summary),
        _write_csv(folder / "verdicts.csv", [asdict(v) for v in c.verdicts]),
    ]
    results = folder / "results.json"
    results.write_text(
        json.dumps(
            {
                "started": c.started,
                "seed": c.plan.seed,
                "models": c.models,
                "targets": [asdict(t) for t in c.targets],
                "summary": summary,
                "verdicts": [asdict(v) for v in c.verdicts],
                "counters": [
                    {
                        "workload": r.workload,
                        "l2_backend": r.target.l2_backend,
                        "deltas": r.deltas,
                        "replicas": r.replica_deltas,
                        **(
                            {"second_replica": r.extra.get("second_replica")}
                            if r.workload == "cross_pod"
                            else {}
                        ),
                        **(
                            {"new_replica": r.extra.get("new_replica")}
                            if r.workload == "scale_out"
                            else {}
                        ),
                    }
                    for r in c.runs
                ],
            },
            indent=2,
            default=str,
        )
    )
    files.append(results)
    files += plots.draw(c, folder, kv_bytes_per_token)
    guard.record(files)
    return files
