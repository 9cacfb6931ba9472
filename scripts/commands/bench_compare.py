"""``hpkv bench compare``: the same workloads against one endpoint per tier (from config, or
``--target L2_BACKEND=URL[,URL]``), a report folder, and exit 1 when a tier misses a threshold."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from infra.cdk.written import OutputFolder
from infra.config import AppConfig
from infra.config.bench import longest_requests
from scripts.lib import runtime
from scripts.lib.bench_compare import report
from scripts.lib.bench_compare.run import (
    Comparison,
    Overrides,
    Plan,
    compare,
    plan_from,
    request_count,
)
from scripts.lib.bench_compare.scale_out import Joiner, named_replica
from scripts.lib.bench_compare.scrape import scrape_metrics
from scripts.lib.bench_compare.targets import (
    BenchTarget,
    endpoints_to_compare,
    one_per_tier,
    open_endpoint,
    parse_target,
    scale_out_joiner,
)
from scripts.lib.bench_compare.workloads import Waits
from scripts.lib.errors import CliError, Exit, bad_option
from scripts.lib.openai_stream import StreamError, StreamResult, model_cards, stream_completion
from scripts.lib.progress import Steps


@dataclass(frozen=True)
class CompareOptions:
    env: str = "dev"
    endpoints: tuple[str, ...] = ()
    """Names of kvcache.endpoints; empty: bench.endpoints, else all."""
    targets: tuple[str, ...] = ()
    """``L2_BACKEND=URL[,URL]`` instead of endpoints from config."""
    joining: tuple[str, ...] = ()
    """``L2_BACKEND=URL``: with ``targets``, a replica that joins that tier (scale-out)."""
    out_dir: Path | None = None
    seed: int | None = None
    given: Overrides = field(default_factory=Overrides)
    """What the command line overrides of the ``bench`` config."""
    waits: Waits = field(default_factory=Waits)
    as_json: bool = False
    direct: bool = False
    context: str | None = None
    note: str = ""
    """A line under the report's heading."""


def run(o: CompareOptions) -> Exit:
    env, as_json = o.env, o.as_json
    cfg = runtime.config(env)
    the_seed = o.seed if o.seed is not None else time.time_ns() % (2**31)
    folder = o.out_dir or Path("bench-results") / time.strftime("compare-%Y%m%d-%H%M%S")
    # Bad options fail before any work.
    OutputFolder(folder, "--out").check()
    explicit = one_per_tier([parse_target(t) for t in o.targets])
    if explicit and o.endpoints:
        raise bad_option(
            "--endpoint",
            " ".join(o.endpoints),
            "endpoints from config, or --target instead (--target names the replicas itself)",
            "leave --endpoint out with --target, or --target out",
        )
    joiners = _named_joiners(explicit, o.joining)
    _joinable(explicit, joiners, o.given.workloads)
    bpt = cfg.observability.kv_bytes_per_token
    with contextlib.ExitStack() as stack:
        if not explicit:
            explicit, joiners = _from_config(stack, cfg, list(o.endpoints), o.direct, o.context)
        try:
            result = compare_tiers(cfg, explicit, the_seed, o.given, o.waits, joiners)
        except (StreamError, OSError) as exc:
            raise runtime.fail(f"{type(exc).__name__}: {exc}") from None
    heading = f"KV-cache tiers compared: {env}"
    files = report.write(result, folder, bpt, heading, o.note)
    code = Exit.CHECK_FAILED if result.failed else Exit.OK
    if as_json:
        print(
            json.dumps(
                {
                    "ok": code == Exit.OK,
                    "exit_code": int(code),
                    "folder": str(folder),
                    "files": [str(f) for f in files],
                    "verdicts": [v.__dict__ for v in result.verdicts],
                }
            )
        )
    else:
        _print(result, folder, len(files))
    return code


def _joinable(
    targets: list[BenchTarget], joiners: dict[str, Joiner], asked: tuple[str, ...] | None
) -> None:
    """--workloads scale-out with --target: some tier with an L2 needs a replica to join it
    (--joining), or the workload would measure nothing and the run pass on nothing."""
    if not targets or "scale_out" not in (asked or ()):
        return
    with_l2 = [t for t in targets if t.l2_backend != "none"]
    if with_l2 and not any(t.endpoint in joiners for t in with_l2):
        tiers = ", ".join(t.l2_backend for t in with_l2)
        given = ",".join(w.replace("_", "-") for w in asked or ())
        raise bad_option(
            "--workloads",
            given,
            "scale-out with --target where "
            "--joining TIER=URL names a replica that has served nothing for a tier "
            f"with an L2 ({tiers}); none is named, so nothing would be measured",
            f"add --joining {with_l2[0].l2_backend}=URL, or leave scale-out out",
        )


def _named_joiners(targets: list[BenchTarget], joining: tuple[str, ...]) -> dict[str, Joiner]:
    """``--joining L2_BACKEND=URL``: one URL for a tier given with ``--target``."""
    by_tier = {t.l2_backend: t for t in targets}
    out: dict[str, Joiner] = {}
    for text in joining:
        new = parse_target(text, "--joining")
        if new.l2_backend not in by_tier or new.pods != 1 or new.endpoint in out:
            raise bad_option(
                "--joining",
                text,
                "L2_BACKEND=URL, one URL for a tier given with --target "
                f"({', '.join(by_tier) or 'none given'}), each tier once",
                "name a tier given with --target, once, with one URL",
            )
        out[by_tier[new.l2_backend].endpoint] = named_replica(new.urls[0], scrape_metrics)
    return out


def _from_config(
    stack: contextlib.ExitStack,
    cfg: AppConfig,
    names: list[str],
    direct: bool,
    context: str | None,
) -> tuple[list[BenchTarget], dict[str, Joiner]]:
    """The endpoints' replicas, and for each a joiner that scales it out by one."""
    refs = endpoints_to_compare(cfg, names)
    clients = runtime.CLIENTS(cfg, context)
    transport = runtime.transport(direct, context)
    targets = [open_endpoint(stack, clients, cfg, ref, transport) for ref in refs]
    joiners = {
        t.endpoint: scale_out_joiner(clients, ref, transport, runtime.PROGRESS)
        for t, ref in zip(targets, refs, strict=True)
    }
    return targets, joiners


def compare_tiers(
    cfg: AppConfig,
    tiers: list[BenchTarget],
    seed: int,
    given: Overrides,
    waits: Waits,
    joiners: dict[str, Joiner] | None = None,
) -> Comparison:
    """The workloads of ``cfg.bench`` (with ``given``) on every tier, in order, with progress."""
    bpt = cfg.observability.kv_bytes_per_token
    cards = {t.endpoint: model_cards(t.urls[0])[0] for t in tiers}
    models = {endpoint: card["id"] for endpoint, card in cards.items()}
    by_url = {u: models[t.endpoint] for t in tiers for u in t.urls}

    def send(url: str, prompt: str, max_tokens: int) -> StreamResult:
        if url not in by_url:  # a replica that joined during the run
            by_url[url] = model_cards(url)[0]["id"]
        return stream_completion(url, by_url[url], prompt, max_tokens=max_tokens)

    plan = plan_from(cfg.bench, seed, waits, given)
    _fits(plan, cards)
    joinable = joiners or {}
    total = request_count(plan, tiers, joinable)
    with Steps("bench compare", total, runtime.PROGRESS) as steps:
        return compare(tiers, plan, send, scrape_metrics, steps, cfg.bench, bpt, models, joinable)


def _fits(plan: Plan, cards: dict[str, dict[str, Any]]) -> None:
    """Each workload's longest request within the context each endpoint serves (vLLM's
    ``max_model_len`` on /v1/models): vLLM refuses a longer one with HTTP 400, mid-run."""
    longest = longest_requests(plan.lengths, plan.cross_pod_words, plan.max_tokens, plan.chat)
    for endpoint, card in cards.items():
        limit = card.get("max_model_len")
        if not isinstance(limit, int):
            continue
        for workload in plan.workloads:
            tokens = longest[SAME_REQUESTS.get(workload, workload)]
            if tokens > limit:
                raise CliError(
                    f"{workload}: its longest request is about {tokens} tokens, "
                    f"endpoint {endpoint} serves at most {limit} (max_model_len); lower "
                    f"{SIZED_BY[workload]}, or leave the workload out (--workloads)",
                    Exit.USAGE,
                )


# The scale-out sends the cross-Pod test's requests (its prompt, the same max_tokens).
SAME_REQUESTS = {"scale_out": "cross_pod"}
# What sizes each workload's longest request, on the command line and in config.
SIZED_BY = {
    "sweep": "--lengths (bench.sweep_prompt_words) or --max-tokens",
    "cross_pod": "bench.cross_pod_prompt_words",
    "chat": "--rounds (bench.chat)",
    "scale_out": "bench.cross_pod_prompt_words",
}


def _print(result: Comparison, folder: Path, files: int) -> None:
    table = Table(title=f"bench compare (seed {result.plan.seed})")
    for col in ("l2_backend", "endpoint", "check", "measured", "threshold", "verdict"):
        table.add_column(col)
    for v in result.verdicts:
        measured = "-" if v.measured is None else f"{v.measured:.3f}"
        table.add_row(
            v.l2_backend,
            v.endpoint,
            v.check,
            measured,
            f"{v.threshold:g}",
            v.status if v.status != "fail" else f"fail: {v.reason}",
        )
    runtime.out.print(table)
    runtime.out.print(f"wrote {files} files to {folder} (report.md)")
