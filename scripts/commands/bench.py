"""``hpkv bench``: TTFT sweep cold vs warm, multi-turn speedup and concurrency; CSV/JSON and PNG
plots. Without ``--target`` it reaches two Ready Pods of the endpoint on different nodes."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.table import Table

from infra.cdk.written import OutputFolder
from scripts.lib import runtime
from scripts.lib.bench import (
    BenchResult,
    make_sender,
    run_concurrency,
    run_sweep,
    run_turns,
    write_results,
)
from scripts.lib.errors import Exit
from scripts.lib.kube import (
    container_port,
    find_endpoint_deployment,
    model_container_index,
    pick_pods_on_two_nodes,
    pods_of,
)
from scripts.lib.openai_stream import StreamError, list_models


@dataclass(frozen=True)
class BenchOptions:
    env: str = "dev"
    targets: tuple[str, ...] = ()
    """Base URLs (1st cold, 2nd warm); empty: two Pods of the endpoint."""
    namespace: str | None = None
    endpoint: str | None = None
    model: str | None = None
    """Default: the first of /v1/models."""
    lengths: tuple[int, ...] = (500, 1000, 1500, 2000, 2500, 3000)
    repeats: int = 3
    turns: int = 5
    turn_words: int = 400
    concurrency: tuple[int, ...] = field(default=())
    concurrency_words: int = 2000
    max_tokens: int = 8
    seed: int | None = None
    out_dir: Path | None = None
    as_json: bool = False
    direct: bool = False
    context: str | None = None


def run(o: BenchOptions) -> Exit:
    as_json = o.as_json
    the_seed = o.seed if o.seed is not None else time.time_ns() % (2**31)
    folder = o.out_dir or Path("bench-results") / time.strftime("%Y%m%d-%H%M%S")
    OutputFolder(folder, "--out").check()  # before the run: its results would have nowhere to go
    with contextlib.ExitStack() as stack:
        targets = list(o.targets)
        if not targets:
            targets = _pod_targets(stack, o.env, o.namespace, o.endpoint, o.direct, o.context)
        try:
            the_model = o.model or list_models(targets[0])[0]
            send = make_sender(the_model, o.max_tokens)
            result = BenchResult(the_seed, targets)
            result.sweep = run_sweep(
                send, targets, list(o.lengths), o.repeats, the_seed, _note(as_json)
            )
            if o.turns:
                result.turns = run_turns(
                    send, targets, o.turns, o.turn_words, the_seed, _note(as_json)
                )
            if o.concurrency:
                result.concurrency = run_concurrency(
                    send,
                    targets,
                    list(o.concurrency),
                    o.concurrency_words,
                    the_seed,
                    _note(as_json),
                )
        except StreamError as exc:
            # The URL it tried and why: e.g. a port-forward that ended, or a --target typo.
            raise runtime.fail(
                f"{exc}; check that vLLM answers there (--target, or the endpoint's Pods)"
            ) from None
        except OSError as exc:
            raise runtime.fail(f"{type(exc).__name__}: {exc}") from None
    files = write_results(result, folder)
    if as_json:
        print(json.dumps({**result.as_dict(), "files": [str(f) for f in files]}))
        return Exit.OK
    table = Table(title=f"TTFT sweep (seed {the_seed})")
    for col in ("prompt words", "cold median ms", "warm median ms", "speedup"):
        table.add_column(col)
    for n, row in result.summary().items():
        table.add_row(
            n,
            f"{row['cold_median_ms']:.1f}",
            f"{row['warm_median_ms']:.1f}",
            f"{row['speedup']:.2f}x",
        )
    runtime.out.print(table)
    runtime.out.print(f"wrote {len(files)} files to {folder}")
    return Exit.OK


def _note(quiet: bool) -> Callable[[str], None] | None:
    return None if quiet else (lambda msg: runtime.err.print(f"[dim]{msg}[/]"))


def _pod_targets(
    stack: contextlib.ExitStack,
    env: str,
    namespace: str | None,
    endpoint: str | None,
    direct: bool,
    context: str | None,
) -> list[str]:
    cfg = runtime.config(env)
    ref = runtime.endpoint(cfg, endpoint, namespace)
    clients = runtime.CLIENTS(cfg, context)
    dep = find_endpoint_deployment(clients, ref)
    pair = pick_pods_on_two_nodes(pods_of(clients, dep)) if dep else None
    if pair is None:
        raise runtime.fail(
            f"need two Ready Pods of {ref.namespace}/{ref.name} on different nodes, or --target"
        )
    transport = runtime.transport(direct, context)
    urls = []
    for pod in pair:
        c = pod["spec"]["containers"][model_container_index(pod["spec"]) or 0]
        urls.append(stack.enter_context(transport.open(pod, container_port(c))))
    return urls
