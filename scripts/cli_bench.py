"""``hpkv bench`` (one endpoint: TTFT cold against warm) and ``hpkv bench compare`` (one
endpoint per KV-cache tier, a report folder and verdicts), as a group of the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from scripts.commands import bench, bench_compare
from scripts.lib.bench_compare.run import WORKLOADS, Overrides
from scripts.lib.bench_compare.workloads import Waits
from scripts.options import (
    ContextOpt,
    DirectOpt,
    EndpointOpt,
    EnvOpt,
    JsonOpt,
    MaxTokensOpt,
    NamespaceOpt,
    SeedOpt,
    base_urls,
    counted,
    counts,
)
from scripts.usage import refused

bench_app = typer.Typer(
    help="TTFT sweep cold vs warm, multi-turn speedup and concurrency; CSV/JSON and PNG plots. "
    "`hpkv bench compare` compares the KV-cache tiers.",
    epilog="Example: hpkv bench --target http://127.0.0.1:8001 "
    "--target http://127.0.0.1:8002 --out bench-results/dev",
)


@bench_app.callback(invoke_without_command=True)
def bench_command(
    ctx: typer.Context,
    env: EnvOpt = "dev",
    target: Annotated[
        list[str] | None,
        typer.Option(
            help="Base URL (repeat: 1st cold, 2nd warm). Default: two endpoint Pods.",
            callback=base_urls,
        ),
    ] = None,
    namespace: NamespaceOpt = None,
    endpoint: EndpointOpt = None,
    model: Annotated[
        str | None, typer.Option(help="Model id (default: the first of /v1/models).")
    ] = None,
    lengths: Annotated[
        str, typer.Option(help="Prompt lengths in words (~tokens).", callback=counted("--lengths"))
    ] = "500,1000,1500,2000,2500,3000",
    repeats: Annotated[int, typer.Option(min=1, help="Cold/warm pairs per length.")] = 3,
    turns: Annotated[
        int, typer.Option(min=0, help="Turns of the multi-turn test (0 to skip).")
    ] = 5,
    turn_words: Annotated[int, typer.Option(min=1, help="Words added per turn.")] = 400,
    concurrency: Annotated[
        str,
        typer.Option(
            help="Concurrency levels, e.g. 1,4,8 (empty to skip).",
            callback=counted("--concurrency", empty_ok=True),
        ),
    ] = "",
    concurrency_words: Annotated[
        int, typer.Option(min=1, help="Prompt words in the concurrency test.")
    ] = 2000,
    max_tokens: MaxTokensOpt = 8,
    seed: SeedOpt = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Results folder.")] = None,
    as_json: JsonOpt = False,
    direct: DirectOpt = False,
    context: ContextOpt = None,
) -> None:
    """TTFT sweep cold vs warm, multi-turn speedup and concurrency; CSV/JSON and PNG plots."""
    if ctx.invoked_subcommand is not None:
        return
    options = bench.BenchOptions(
        env=env,
        targets=tuple(target or ()),
        namespace=namespace,
        endpoint=endpoint,
        model=model,
        lengths=tuple(counts(lengths, "--lengths")),
        repeats=repeats,
        turns=turns,
        turn_words=turn_words,
        concurrency=tuple(counts(concurrency, "--concurrency", empty_ok=True)),
        concurrency_words=concurrency_words,
        max_tokens=max_tokens,
        seed=seed,
        out_dir=out_dir,
        as_json=as_json,
        direct=direct,
        context=context,
    )
    raise typer.Exit(bench.run(options))


ENDPOINT_HELP = "Endpoint of kvcache.endpoints (repeat; default: bench.endpoints, else all)."
TARGET_HELP = (
    "L2_BACKEND=URL[,URL] instead (repeat): an endpoint's replicas, the one on another node second."
)
JOINING_HELP = (
    "L2_BACKEND=URL (repeat, with --target): a replica that has served nothing yet, the one that "
    "joins that tier in the scale-out workload."
)


def _workloads(text: str) -> tuple[str, ...] | None:
    names = tuple(w.strip().replace("-", "_") for w in text.split(",") if w.strip())
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise refused(
            "--workloads",
            text,
            "comma-separated workloads of sweep, chat, "
            f"cross-pod, scale-out (not {', '.join(unknown)})",
        )
    return names or None


def _known_workloads(text: str) -> str:
    _workloads(text)
    return text


@bench_app.command(
    "compare",
    epilog="Example: hpkv bench compare --env test   (endpoints from bench.endpoints)\n\n"
    "         hpkv bench compare --target curvine=http://127.0.0.1:8001,http://127.0.0.1:8002 "
    "--target none=http://127.0.0.1:8003,http://127.0.0.1:8004",
)
def compare_command(
    env: EnvOpt = "dev",
    endpoint: Annotated[
        list[str] | None,
        typer.Option(help=ENDPOINT_HELP),
    ] = None,
    target: Annotated[
        list[str] | None,
        typer.Option(help=TARGET_HELP),
    ] = None,
    joining: Annotated[list[str] | None, typer.Option(help=JOINING_HELP)] = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Report folder (default bench-results/...).")
    ] = None,
    seed: SeedOpt = None,
    lengths: Annotated[
        str,
        typer.Option(
            help="Sweep lengths in words (default: bench.sweep_prompt_words).",
            callback=counted("--lengths", empty_ok=True),
        ),
    ] = "",
    repeats: Annotated[int | None, typer.Option(min=1, help="Cold/warm pairs per length.")] = None,
    users: Annotated[int | None, typer.Option(min=1, help="Chat users (bench.chat.users).")] = None,
    rounds: Annotated[int | None, typer.Option(min=1, help="Chat rounds per user.")] = None,
    concurrency: Annotated[int | None, typer.Option(min=1, help="Chat requests in flight.")] = None,
    max_tokens: Annotated[int | None, typer.Option(min=1, help="Tokens per sweep request.")] = None,
    workloads: Annotated[
        str,
        typer.Option(
            help="Which to run: sweep,chat,cross-pod,scale-out (default: all).",
            callback=_known_workloads,
        ),
    ] = "",
    settle_seconds: Annotated[
        float,
        typer.Option(min=0, help="Wait between writing on one replica and reading on another."),
    ] = Waits.settle_s,
    counters_wait_seconds: Annotated[
        float,
        typer.Option(min=0, help="Wait before reading counters (LMCache publishes every 10 s)."),
    ] = Waits.flush_s,
    note: Annotated[str, typer.Option(help="A line under the report's heading.")] = "",
    as_json: JsonOpt = False,
    direct: DirectOpt = False,
    context: ContextOpt = None,
) -> None:
    """The same workloads against one endpoint per KV-cache tier: a report folder (report.md,
    CSVs, PNGs) and each tier's verdicts against `bench` in config; exit 1 when one misses."""
    sweep = tuple(counts(lengths, "--lengths", empty_ok=True)) or None
    given = Overrides(sweep, repeats, users, rounds, concurrency, max_tokens, _workloads(workloads))
    options = bench_compare.CompareOptions(
        env=env,
        endpoints=tuple(endpoint or ()),
        targets=tuple(target or ()),
        joining=tuple(joining or ()),
        out_dir=out_dir,
        seed=seed,
        given=given,
        waits=Waits(settle_seconds, counters_wait_seconds),
        as_json=as_json,
        direct=direct,
        context=context,
        note=note,
    )
    raise typer.Exit(bench_compare.run(options))
