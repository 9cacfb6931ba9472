"""``hpkv size``: KV bytes per token, weights, and how many tokens L0, L1 and L2 hold on an
environment (its config mapped to the sizing model); with ``--prompt-tokens``, whether each
tier's read-back beats recomputing and which L2 to use."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from infra.config.model import l1_in_container_gib, l2_pool_bytes
from infra.facts.instances import GPU_INSTANCES
from scripts.lib import runtime
from scripts.lib.errors import CliError, Exit, bad_option
from scripts.lib.sizing import GIB, PRESETS, SizingError, load_model_config, size_model
from scripts.lib.tier_advice import tier_advice


@dataclass(frozen=True)
class SizeOptions:
    model: str
    """A Hugging Face config.json (or its folder), or a preset."""
    env: str = "dev"
    params: float | None = None
    instance_type: str | None = None
    gpu_nodes: int | None = None
    l2_worker_gib: float | None = None
    weight_dtype: str | None = None
    kv_dtype: str | None = None
    gpu_memory_utilization: float = 0.9
    prompt_tokens: int | None = None
    prefill_tokens_per_s: float | None = None
    sessions: int = 1
    context_tokens: int | None = None
    curvine_read_mb_per_s: float | None = None
    """A measured read rate of the Curvine L2, MB/s (make bench, or the mount on a node)."""
    as_json: bool = False


MODEL_ALLOWED = f"a Hugging Face config.json (or its folder), or a preset: {', '.join(PRESETS)}"


def _bad_model(source: str, why: str) -> CliError:
    return bad_option(
        "MODEL",
        source,
        f"{MODEL_ALLOWED}; {why}",
        "give the path of a model's config.json, or a preset",
    )


def _model(source: str) -> tuple[str, dict[str, Any]]:
    """The MODEL argument read, or one line naming it: a file that is missing, unreadable,
    not JSON or lacking a field is the caller's to fix (exit 2)."""
    try:
        return load_model_config(source)
    except SizingError as exc:
        raise _bad_model(source, str(exc)) from None
    except OSError as exc:  # a file that cannot be read (permissions, a vanished mount)
        raise _bad_model(source, f"it cannot be read ({exc.strerror or exc})") from None


def run(o: SizeOptions) -> Exit:
    cfg = runtime.config(o.env)
    itype = o.instance_type or cfg.hyperpod.gpu_group.instance_type
    if itype not in GPU_INSTANCES:  # the config's own (a given one was checked when parsed)
        raise bad_option(
            f"config/{cfg.environment}.yaml: hyperpod.gpu_group.instance_type",
            itype,
            f"a type the sizing model knows ({', '.join(GPU_INSTANCES)})",
            "pass --instance-type with one of them",
        )
    inst = GPU_INSTANCES[itype]
    # The pool a Curvine L2 would have here; the table counts it only where Curvine runs (or
    # where --l2-worker-gib asks what it would hold).
    pool = l2_pool_bytes(cfg, "curvine", worker_gib=o.l2_worker_gib, gpu_nodes=o.gpu_nodes)
    deployed = "curvine" in cfg.kvcache.l2_backends or o.l2_worker_gib is not None
    ts = cfg.tiered_storage
    ts_gib = inst.memory_gib * ts.instance_memory_allocation_percentage / 100
    if ts.mode != "Enable":
        ts_gib = 0.0
    # L1 as the environment's first endpoint gets it: the Pod's memory less vLLM's need where
    # the size reaches LMCache, else LMCache's default.
    l1_gib = l1_in_container_gib(cfg, cfg.kvcache.endpoints[0])
    label, model_cfg = _model(o.model)
    try:
        report = size_model(
            label,
            model_cfg,
            instance_type=itype,
            gpus=inst.gpus,
            gpu_memory_gib=inst.gpu_memory_gib,
            instance_memory_gib=inst.memory_gib,
            gpu_nodes=o.gpu_nodes or cfg.hyperpod.gpu_group.instance_count,
            tiered_storage_percent=ts.instance_memory_allocation_percentage
            if ts.mode == "Enable"
            else 0,
            curvine_pool_bytes=pool if deployed else 0,
            l1_gib=l1_gib,
            params=int(o.params) if o.params else None,
            weight_dtype=o.weight_dtype,
            kv_dtype=o.kv_dtype,
            gpu_memory_utilization=o.gpu_memory_utilization,
        )
        advice = (
            tier_advice(
                model_cfg,
                prompt_tokens=o.prompt_tokens,
                sessions=o.sessions,
                context_tokens=o.context_tokens or o.prompt_tokens,
                curvine_pool_bytes=pool,
                fsx_capacity_gib=cfg.kvcache.fsx.storage_capacity_gib,
                fsx_throughput_mb_per_tib=cfg.kvcache.fsx.throughput_mb_per_tib,
                gpus=inst.gpus,
                tieredstorage_bytes=int(ts_gib * GIB),
                prefill_tokens_per_s=o.prefill_tokens_per_s,
                params=int(o.params) if o.params else None,
                kv_dtype=o.kv_dtype,
                curvine_read_bytes_per_s=None
                if o.curvine_read_mb_per_s is None
                else o.curvine_read_mb_per_s * 1e6,
            )
            if o.prompt_tokens
            else None
        )
    except SizingError as exc:  # a dimension the arithmetic needs, missing from the file
        raise _bad_model(o.model, str(exc)) from None
    if advice is not None and advice.flag is not None:
        report.flags.append(advice.flag)
    if o.as_json:
        data = report.as_dict()
        if advice is not None:
            data["tier_advice"] = advice.as_dict()
        print(json.dumps(data))
        return Exit.OK
    runtime.out.print(
        f"{report.model}: {report.attention}, {report.kv_bytes_per_token:,} KV bytes/token, "
        f"{report.params / 1e9:.2f}B params ({report.params_source}), "
        f"weights {report.weight_bytes / GIB:.1f} GiB"
    )
    table = Table(title=f"{itype} x {report.gpu_nodes} nodes")
    for col in ("tier", "GiB", "tokens", "scope"):
        table.add_column(col)
    for t in report.tiers:
        table.add_row(t.name, f"{t.bytes / GIB:,.1f}", f"{t.tokens:,}", t.scope)
    runtime.out.print(table)
    for flag in report.flags:
        runtime.out.print(f"[yellow]! {flag}[/]")
    if advice is None:
        return Exit.OK
    reads = Table(
        title=f"{advice.prompt_tokens:,}-token prompt ({advice.prompt_bytes / 1e9:.2f} GB of KV):"
        f" recompute {advice.recompute_seconds:.3f} s at {advice.prefill_tokens_per_s:,.0f}"
        f" tokens/s ({advice.prefill_source})"
    )
    for col in ("tier", "read s", "beats recompute"):
        reads.add_column(col)
    for r in advice.reads:
        reads.add_row(r.tier, f"{r.seconds:.3f}", "yes" if r.beats_recompute else "no")
    runtime.out.print(reads)
    runtime.out.print(
        f"working set: {advice.sessions:,} sessions x {advice.context_tokens:,} tokens = "
        f"{advice.working_set_tb:.3f} TB"
    )
    runtime.out.print(f"recommend: {advice.recommendation} ({advice.reason})")
    return Exit.OK
