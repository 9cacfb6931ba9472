"""`python -m scripts <command>`: the operations CLI (preflight, verify, wait-tiered-storage,
patch, bench, size, teardown, recreate, durations). Each command reads config/<env>.yaml; exit
codes are in ``Exit``."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup
from typer.exceptions import Abort, TyperException

from infra.config import AppConfig, ConfigError, load_config
from infra.config.kvcache import EndpointConfig
from infra.instances import GPU_INSTANCES
from scripts.clients import Clients
from scripts.common import (
    CliError,
    Exit,
    OperationError,
    checks_exit,
    checks_json,
    checks_table,
    describe_failure,
)
from scripts.endpoints import UnknownEndpoint, l2_claim, l2_settings, resolve_endpoint
from scripts.kube import Reporter

EXIT_CODES = (
    "Exit codes: 0 ok; 1 a check or verdict failed; 2 bad option or invalid config; "
    "3 refused (prod without --allow-prod, or destructive without --yes); "
    "4 an AWS/Kubernetes operation failed or timed out."
)


class _State:
    """What the error layer needs to know about the running command."""

    json = False


STATE = _State()


def report_failure(failure: CliError, command: str | None) -> None:
    """The one way a command ends on failure: one line on stderr, and with --json one JSON
    object on stdout."""
    if STATE.json:
        print(
            json.dumps(
                {
                    "ok": False,
                    "command": command,
                    "exit_code": int(failure.code),
                    "error": failure.message,
                }
            )
        )
    err.print(f"error: {failure.message}", markup=False, highlight=False, soft_wrap=True)


class _Commands(TyperGroup):
    """Runs every command inside the error-translation layer (scripts.common.describe_failure):
    a failure from AWS, Kubernetes, the network or the file system ends in one line and its
    exit code, never a traceback."""

    def invoke(self, ctx: Any) -> Any:  # typer._click.Context (typer keeps click private)
        STATE.json = False
        try:
            return super().invoke(ctx)
        except (typer.Exit, TyperException, Abort):  # typer's own exits and usage errors
            raise
        except Exception as exc:  # translated, or re-raised when not ours
            failure = describe_failure(exc)
            if failure is None:
                raise
            report_failure(failure, ctx.invoked_subcommand)
            raise typer.Exit(failure.code) from None


app = typer.Typer(
    cls=_Commands,
    add_completion=False,
    no_args_is_help=True,
    help=f"Operations CLI for the tiered KV cache on HyperPod. {EXIT_CODES}",
    epilog="Example: python -m scripts verify --env dev   (then: python -m scripts <command> "
    "--help)",
)
out = Console()
err = Console(stderr=True)

# Seams for tests: how clients are built and how `recreate` runs the deploy.
ClientsFactory = Callable[[AppConfig, str | None], Clients]


def default_clients(cfg: AppConfig, context: str | None) -> Clients:
    from scripts.verify import cluster_names

    setup = f"aws eks update-kubeconfig --name {cluster_names(cfg)[0]} --region {cfg.region}"
    return Clients(cfg.region, kube_context=context, kube_setup=setup)


def default_deploy(env: str) -> int:
    return subprocess.run(["make", "deploy", f"ENV={env}"], check=False).returncode


CLIENTS: ClientsFactory = default_clients
DEPLOY: Callable[[str], int] = default_deploy
# Where long waits report (stderr: stdout keeps the one JSON object of --json) and on which clock.
PROGRESS = Reporter()

EnvOpt = Annotated[str, typer.Option("--env", "-e", help="Environment: reads config/<env>.yaml.")]


def _remember_json(value: bool) -> bool:
    STATE.json = value
    return value


JsonOpt = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print one JSON object instead of tables (errors too).",
        callback=_remember_json,
        is_eager=True,
    ),
]
ContextOpt = Annotated[
    str | None, typer.Option("--context", help="kubeconfig context (default: current).")
]
NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        "-n",
        help="Endpoint namespace (default: the first of kvcache.endpoints matching --endpoint).",
    ),
]
EndpointOpt = Annotated[
    str | None,
    typer.Option(
        "--endpoint",
        help="Endpoint name, one of kvcache.endpoints (default: the first configured).",
    ),
]
DirectOpt = Annotated[
    bool,
    typer.Option(
        "--direct", help="Reach Pods by IP (inside the VPC) instead of kubectl port-forward."
    ),
]


def _config(env: str) -> AppConfig:
    try:
        return load_config(env)
    except ConfigError as exc:
        raise CliError(str(exc), Exit.USAGE) from None


def _endpoint(cfg: AppConfig, name: str | None, namespace: str | None) -> EndpointConfig:
    try:
        return resolve_endpoint(cfg, name, namespace)
    except UnknownEndpoint as exc:
        raise _fail(str(exc), Exit.USAGE) from None


def _fail(message: str, code: Exit = Exit.OPERATION_FAILED) -> CliError:
    return CliError(message, code)


def _transport(direct: bool, context: str | None) -> Any:
    from scripts.kube import DirectPodIp, KubectlPortForward

    return DirectPodIp() if direct else KubectlPortForward(context=context)


# ---- preflight ---------------------------------------------------------------------------------


@app.command(epilog="Example: python -m scripts preflight --env dev")
def preflight(env: EnvOpt = "dev", as_json: JsonOpt = False) -> None:
    """Credentials, HyperPod quotas, instance types in the AZ id, kubectl/helm/node versions."""
    from scripts.preflight import run_preflight

    cfg = _config(env)
    checks = run_preflight(CLIENTS(cfg, None), cfg)
    if as_json:
        print(checks_json(checks, environment=env))
    else:
        out.print(checks_table(f"preflight: {env}", checks))
    raise typer.Exit(checks_exit(checks))


# ---- verify ------------------------------------------------------------------------------------


def _verify(
    env: str,
    namespace: str | None,
    endpoint: str | None,
    as_json: bool,
    skip_l2: bool,
    direct: bool,
    context: str | None,
    l2: dict[str, Any],
    wait_minutes: float = 0,
    emit: bool = True,
) -> tuple[Exit, dict[str, Any]]:
    """Run verify; returns the exit code and the JSON object (printed unless ``emit`` is off)."""
    from scripts.verify import run_verify, wait_until_ready

    cfg = _config(env)
    ref = _endpoint(cfg, endpoint, namespace)
    clients = CLIENTS(cfg, context)
    waited: dict[str, float] = {}
    if wait_minutes > 0:
        waited = wait_until_ready(clients, cfg, ref, wait_minutes * 60.0, show=PROGRESS)
    transport = None if skip_l2 else _transport(direct, context)
    checks, cross = run_verify(clients, cfg, ref, transport, **l2)
    extra: dict[str, Any] = {"environment": env, "l2_test": cross.as_dict() if cross else None}
    if waited:
        extra["waited_seconds"] = {k: round(v, 1) for k, v in waited.items()}
    payload = json.loads(checks_json(checks, **extra))
    if emit and as_json:
        print(json.dumps(payload))
    elif emit:
        out.print(checks_table(f"verify: {env} {ref.namespace}/{ref.name}", checks))
    return checks_exit(checks), payload


@app.command(epilog="Example: python -m scripts verify --env dev --endpoint qwen3-8b -n inference")
def verify(
    env: EnvOpt = "dev",
    namespace: NamespaceOpt = None,
    endpoint: EndpointOpt = None,
    as_json: JsonOpt = False,
    skip_l2_test: Annotated[bool, typer.Option(help="Only the static checks.")] = False,
    direct: DirectOpt = False,
    context: ContextOpt = None,
    prompt_words: Annotated[
        int, typer.Option(help="Prompt length (~tokens) of the L2 test.")
    ] = 1900,
    max_tokens: Annotated[int, typer.Option(help="Tokens generated per request.")] = 4,
    seed: Annotated[int | None, typer.Option(help="Prompt seed (default: new each run).")] = None,
    min_hit_ratio: Annotated[
        float, typer.Option(help="Pass when the 2nd Pod hits this share.")
    ] = 0.5,
    port: Annotated[int | None, typer.Option(help="Model port (default: the container's).")] = None,
    wait_minutes: Annotated[
        float,
        typer.Option(
            help="First wait up to this long for each of: Tiered Storage (InService, config "
            "read back), the GPU nodes Ready, the endpoint's rollout; progress on stderr."
        ),
    ] = 0,
) -> None:
    """Check a live environment stage by stage, then prove cross-Pod reuse through L2."""
    l2 = {
        "prompt_words": prompt_words,
        "max_tokens": max_tokens,
        "seed": seed,
        "min_hit_ratio": min_hit_ratio,
        "port": port,
    }
    code, _ = _verify(
        env, namespace, endpoint, as_json, skip_l2_test, direct, context, l2, wait_minutes
    )
    raise typer.Exit(code)


@app.command(
    "wait-tiered-storage",
    epilog="Example: python -m scripts wait-tiered-storage --env dev --timeout-minutes 45",
)
def wait_tiered_storage(
    env: EnvOpt = "dev",
    timeout_minutes: Annotated[float, typer.Option(help="Give up after this long.")] = 45,
    interval_seconds: Annotated[float, typer.Option(help="Seconds between polls.")] = 30,
    as_json: JsonOpt = False,
) -> None:
    """Follow the Tiered Storage update: poll DescribeCluster until the config reads back and
    the cluster is InService (progress on stderr)."""
    from scripts.kube import wait_for
    from scripts.verify import cluster_names, tiered_storage_state

    cfg = _config(env)
    clients = CLIENTS(cfg, None)
    last = {"state": ""}

    def poll() -> tuple[bool, str]:
        done, last["state"] = tiered_storage_state(clients, cfg)
        return done, last["state"]

    name = cluster_names(cfg)[1]
    seconds = wait_for(
        f"Tiered Storage on {name}", poll, timeout_minutes * 60.0, interval_seconds, PROGRESS
    )
    if as_json:
        print(
            json.dumps(
                {"ok": True, "environment": env, "cluster": name, "seconds": round(seconds, 1),
                 "state": last["state"]}
            )
        )  # fmt: skip
    else:
        out.print(f"Tiered Storage on {name}: {last['state']} (after {seconds:.0f}s)")


# ---- patch -------------------------------------------------------------------------------------


@app.command(epilog="Example: python -m scripts patch --env dev --endpoint qwen3-8b --dry-run")
def patch(
    env: EnvOpt = "dev",
    namespace: NamespaceOpt = None,
    endpoint: EndpointOpt = None,
    deployment: Annotated[
        str | None, typer.Option(help="Deployment name (default: from the endpoint's status).")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the JSON Patch; change nothing.")
    ] = False,
    timeout_minutes: Annotated[
        int, typer.Option(help="Wait at most this long for each rollout step.")
    ] = 15,
    as_json: JsonOpt = False,
    context: ContextOpt = None,
) -> None:
    """Point an endpoint's L2 at Curvine without Kyverno (pause operator, patch, restore)."""
    from scripts.kube import find_endpoint_deployment
    from scripts.patch import compute_patch, run_patch

    cfg = _config(env)
    ref = _endpoint(cfg, endpoint, namespace)
    if not ref.enable_l2_cache:
        raise _fail(
            f"{ref.namespace}/{ref.name}: enable_l2_cache is false in config/{env}.yaml, so the "
            "policy gives it no L2; set it to true first",
            Exit.USAGE,
        )
    clients = CLIENTS(cfg, context)
    try:
        settings = l2_settings(cfg, ref, l2_claim(clients, cfg))
        if dry_run:
            dep = find_endpoint_deployment(clients, ref, deployment)
            if dep is None:
                raise OperationError(
                    f"no Deployment for {ref.namespace}/{ref.name}; pass --deployment"
                )
            ops = compute_patch(dep, settings)
            print(
                json.dumps(
                    {"deployment": dep["metadata"]["name"], "ops": ops},
                    indent=None if as_json else 2,
                )
            )
            raise typer.Exit(Exit.OK)
        result = run_patch(
            clients, ref, settings, deployment, timeout_minutes * 60.0, show_progress=PROGRESS
        )
    except OperationError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        print(
            json.dumps(
                {
                    "deployment": result.deployment,
                    "changed": result.changed,
                    "ops": result.ops,
                    "steps": result.steps,
                }
            )
        )
    else:
        for step in result.steps:
            out.print(f"- {step}")
        out.print("patched" if result.changed else "no change")


# ---- bench -------------------------------------------------------------------------------------


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(f"{text!r}: expected comma-separated integers") from None


@app.command(
    epilog="Example: python -m scripts bench --target http://127.0.0.1:8001 "
    "--target http://127.0.0.1:8002 --out bench-results/dev"
)
def bench(
    env: EnvOpt = "dev",
    target: Annotated[
        list[str] | None,
        typer.Option(help="Base URL (repeat: 1st cold, 2nd warm). Default: two endpoint Pods."),
    ] = None,
    namespace: NamespaceOpt = None,
    endpoint: EndpointOpt = None,
    model: Annotated[
        str | None, typer.Option(help="Model id (default: the first of /v1/models).")
    ] = None,
    lengths: Annotated[
        str, typer.Option(help="Prompt lengths in words (~tokens).")
    ] = "500,1000,1500,2000,2500,3000",
    repeats: Annotated[int, typer.Option(help="Cold/warm pairs per length.")] = 3,
    turns: Annotated[int, typer.Option(help="Turns of the multi-turn test (0 to skip).")] = 5,
    turn_words: Annotated[int, typer.Option(help="Words added per turn.")] = 400,
    concurrency: Annotated[
        str, typer.Option(help="Concurrency levels, e.g. 1,4,8 (empty to skip).")
    ] = "",
    concurrency_words: Annotated[
        int, typer.Option(help="Prompt words in the concurrency test.")
    ] = 2000,
    max_tokens: Annotated[int, typer.Option(help="Tokens generated per request.")] = 8,
    seed: Annotated[int | None, typer.Option(help="Prompt seed (default: new each run).")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Results folder.")] = None,
    as_json: JsonOpt = False,
    direct: DirectOpt = False,
    context: ContextOpt = None,
) -> None:
    """TTFT sweep cold vs warm, multi-turn speedup and concurrency; CSV/JSON and PNG plots."""
    from scripts.bench import (
        BenchResult,
        make_sender,
        run_concurrency,
        run_sweep,
        run_turns,
        write_results,
    )
    from scripts.openai_stream import StreamError, list_models

    the_seed = seed if seed is not None else time.time_ns() % (2**31)
    folder = out_dir or Path("bench-results") / time.strftime("%Y%m%d-%H%M%S")
    with contextlib.ExitStack() as stack:
        targets = list(target or [])
        if not targets:
            targets = _pod_targets(stack, env, namespace, endpoint, direct, context)
        try:
            the_model = model or list_models(targets[0])[0]
            send = make_sender(the_model, max_tokens)
            result = BenchResult(the_seed, targets)
            result.sweep = run_sweep(
                send, targets, _ints(lengths), repeats, the_seed, _note(as_json)
            )
            if turns:
                result.turns = run_turns(send, targets, turns, turn_words, the_seed, _note(as_json))
            if concurrency:
                result.concurrency = run_concurrency(
                    send, targets, _ints(concurrency), concurrency_words, the_seed, _note(as_json)
                )
        except (StreamError, OSError) as exc:
            raise _fail(f"{type(exc).__name__}: {exc}") from None
    files = write_results(result, folder)
    if as_json:
        print(json.dumps({**result.as_dict(), "files": [str(f) for f in files]}))
        return
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
    out.print(table)
    out.print(f"wrote {len(files)} files to {folder}")


def _note(quiet: bool) -> Callable[[str], None] | None:
    return None if quiet else (lambda msg: err.print(f"[dim]{msg}[/]"))


def _pod_targets(
    stack: contextlib.ExitStack,
    env: str,
    namespace: str | None,
    endpoint: str | None,
    direct: bool,
    context: str | None,
) -> list[str]:
    from scripts.kube import (
        container_port,
        find_endpoint_deployment,
        model_container_index,
        pods_of,
    )
    from scripts.verify import pick_pods_on_two_nodes

    cfg = _config(env)
    ref = _endpoint(cfg, endpoint, namespace)
    clients = CLIENTS(cfg, context)
    dep = find_endpoint_deployment(clients, ref)
    pair = pick_pods_on_two_nodes(pods_of(clients, dep)) if dep else None
    if pair is None:
        raise _fail(
            f"need two Ready Pods of {ref.namespace}/{ref.name} on different nodes, or --target"
        )
    transport = _transport(direct, context)
    urls = []
    for pod in pair:
        c = pod["spec"]["containers"][model_container_index(pod["spec"]) or 0]
        urls.append(stack.enter_context(transport.open(pod, container_port(c))))
    return urls


# ---- size --------------------------------------------------------------------------------------


@app.command(
    epilog="Example: python -m scripts size ./Qwen2-7B/config.json --json   (or a preset: qwen2-7b)"
)
def size(
    model: Annotated[
        str,
        typer.Argument(
            help="Path to a Hugging Face config.json (or its folder), or a preset: qwen2-7b, "
            "llama-3.1-8b, llama-3.1-70b, llama-3.1-405b, mistral-7b, deepseek-v3."
        ),
    ],
    env: EnvOpt = "dev",
    params: Annotated[
        float | None, typer.Option(help="Parameter count (e.g. 7.6e9) instead of the estimate.")
    ] = None,
    instance_type: Annotated[
        str | None, typer.Option(help="GPU instance type (default: hyperpod.gpu_group).")
    ] = None,
    gpu_nodes: Annotated[
        int | None, typer.Option(help="GPU nodes (default: hyperpod.gpu_group.instance_count).")
    ] = None,
    l2_worker_gib: Annotated[
        float | None,
        typer.Option(
            help="Curvine capacity per worker in GiB "
            "(default: kvcache.curvine.worker.capacity_gib)."
        ),
    ] = None,
    weight_dtype: Annotated[
        str | None, typer.Option(help="Weight dtype (default: torch_dtype).")
    ] = None,
    kv_dtype: Annotated[
        str | None, typer.Option(help="KV cache dtype, e.g. fp8 (default: torch_dtype).")
    ] = None,
    gpu_memory_utilization: Annotated[
        float, typer.Option(help="vLLM --gpu-memory-utilization.")
    ] = 0.9,
    prompt_tokens: Annotated[
        int | None,
        typer.Option(help="Typical prompt length: the L2 pay-off flag and the tier advice."),
    ] = None,
    prefill_tokens_per_s: Annotated[
        float | None,
        typer.Option(help="Measured prefill rate of one replica (bench); default: an estimate."),
    ] = None,
    sessions: Annotated[
        int, typer.Option(min=1, help="Concurrent sessions whose KV should stay cached.")
    ] = 1,
    context_tokens: Annotated[
        int | None, typer.Option(min=1, help="Context length per session (default: prompt).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """KV bytes per token, weights, and how many tokens L0, L1 and L2 hold on this environment;
    with --prompt-tokens, whether each tier's read-back beats recomputing and which L2 to use."""
    from scripts.sizing import GIB, SizingError, load_model_config, size_model, tier_advice

    cfg = _config(env)
    itype = instance_type or cfg.hyperpod.gpu_group.instance_type
    if itype not in GPU_INSTANCES:
        raise _fail(
            f"--instance-type {itype}: known types are {', '.join(GPU_INSTANCES)}", Exit.USAGE
        )
    inst = GPU_INSTANCES[itype]
    curvine = cfg.kvcache.curvine
    if l2_worker_gib is not None:
        worker_gib = l2_worker_gib
    else:  # without Curvine there is no L2 pool
        worker_gib = float(curvine.worker.capacity_gib) if curvine.enabled else 0.0
    ts = cfg.tiered_storage
    try:
        label, model_cfg = load_model_config(model)
        report = size_model(
            label,
            model_cfg,
            instance_type=itype,
            gpus=inst.gpus,
            gpu_memory_gib=inst.gpu_memory_gib,
            instance_memory_gib=inst.memory_gib,
            gpu_nodes=gpu_nodes or cfg.hyperpod.gpu_group.instance_count,
            tiered_storage_percent=ts.instance_memory_allocation_percentage
            if ts.mode == "Enable"
            else 0,
            l2_worker_gib=worker_gib,
            params=int(params) if params else None,
            weight_dtype=weight_dtype,
            kv_dtype=kv_dtype,
            gpu_memory_utilization=gpu_memory_utilization,
            prompt_tokens=prompt_tokens,
        )
        advice = (
            tier_advice(
                model_cfg,
                prompt_tokens=prompt_tokens,
                sessions=sessions,
                context_tokens=context_tokens or prompt_tokens,
                curvine_pool_bytes=int(
                    (l2_worker_gib or curvine.worker.capacity_gib) * GIB * report.gpu_nodes
                ),
                fsx_capacity_gib=cfg.kvcache.fsx.storage_capacity_gib,
                fsx_throughput_mb_per_tib=cfg.kvcache.fsx.throughput_mb_per_tib,
                gpus=inst.gpus,
                prefill_tokens_per_s=prefill_tokens_per_s,
                params=int(params) if params else None,
                kv_dtype=kv_dtype,
            )
            if prompt_tokens
            else None
        )
    except SizingError as exc:
        raise _fail(str(exc), Exit.USAGE) from None
    if as_json:
        data = report.as_dict()
        if advice is not None:
            data["tier_advice"] = advice.as_dict()
        print(json.dumps(data))
        return
    out.print(
        f"{report.model}: {report.attention}, {report.kv_bytes_per_token:,} KV bytes/token, "
        f"{report.params / 1e9:.2f}B params ({report.params_source}), "
        f"weights {report.weight_bytes / GIB:.1f} GiB"
    )
    table = Table(title=f"{itype} x {report.gpu_nodes} nodes")
    for col in ("tier", "GiB", "tokens", "scope"):
        table.add_column(col)
    for t in report.tiers:
        table.add_row(t.name, f"{t.bytes / GIB:,.1f}", f"{t.tokens:,}", t.scope)
    out.print(table)
    for flag in report.flags:
        out.print(f"[yellow]! {flag}[/]")
    if advice is None:
        return
    reads = Table(
        title=f"{advice.prompt_tokens:,}-token prompt ({advice.prompt_bytes / 1e9:.2f} GB of KV):"
        f" recompute {advice.recompute_seconds:.3f} s at {advice.prefill_tokens_per_s:,.0f}"
        f" tokens/s ({advice.prefill_source})"
    )
    for col in ("tier", "read s", "beats recompute"):
        reads.add_column(col)
    for r in advice.reads:
        reads.add_row(r.tier, f"{r.seconds:.3f}", "yes" if r.beats_recompute else "no")
    out.print(reads)
    out.print(
        f"working set: {advice.sessions:,} sessions x {advice.context_tokens:,} tokens = "
        f"{advice.working_set_tb:.3f} TB"
    )
    out.print(f"recommend: {advice.recommendation} ({advice.reason})")


# ---- teardown / recreate -----------------------------------------------------------------------


def _teardown(
    env: str, yes: bool, allow_prod: bool, as_json: bool, emit: bool = True
) -> tuple[Exit, dict[str, Any]]:
    """Plan (and with ``yes`` run) the teardown; returns the exit code and the JSON object (printed
    unless ``emit`` is off). Steps go to stdout as a list, or to stderr with --json."""
    from scripts.teardown import execute_teardown, is_prod, plan_teardown

    cfg = _config(env)
    if is_prod(cfg) and not allow_prod:
        raise _fail(
            f"refused: {env} is a production environment; pass --allow-prod to tear it down",
            Exit.REFUSED,
        )
    clients = CLIENTS(cfg, None)
    plan = plan_teardown(clients, cfg)
    if not yes:
        payload = {"environment": env, "dry_run": True, **plan.as_dict()}
        if as_json and emit:
            print(json.dumps(payload))
            return Exit.OK, payload
    if not as_json:
        table = Table(
            title=f"teardown plan: {env} ({'deleting' if yes else 'dry run: nothing is deleted'})"
        )
        for col in ("kind", "id", "detail"):
            table.add_column(col)
        for item in plan.items():
            table.add_row(item.kind, item.id, item.detail)
        out.print(table)
        for note in plan.notes:
            out.print(f"note: {note}")
    if not yes:
        out.print("Nothing deleted. Re-run with --yes to delete the above in order.")
        return Exit.OK, payload
    done: list[str] = []

    def log(msg: str) -> None:
        done.append(msg)
        if as_json:
            PROGRESS.line(msg)
        else:
            out.print(f"- {msg}")

    try:
        execute_teardown(clients, cfg, log, show=PROGRESS)
    except OperationError as exc:
        payload = {"environment": env, "ok": False, "error": str(exc), "steps": done}
        if as_json and emit:
            print(json.dumps(payload))
        if emit:
            err.print(f"error: {exc}", markup=False)
        return Exit.OPERATION_FAILED, payload
    payload = {"environment": env, "ok": True, "steps": done}
    if as_json and emit:
        print(json.dumps(payload))
    return Exit.OK, payload


@app.command(
    epilog="Example: python -m scripts teardown --env dev          (list only)\n\n"
    "         python -m scripts teardown --env dev --yes    (delete)"
)
def teardown(
    env: EnvOpt = "dev",
    yes: Annotated[bool, typer.Option("--yes", help="Delete; without it only list.")] = False,
    allow_prod: Annotated[
        bool, typer.Option("--allow-prod", help="Allow a prod environment.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete endpoints, PVCs, stacks (reverse order) and tagged leftovers; re-runnable."""
    raise typer.Exit(_teardown(env, yes, allow_prod, as_json)[0])


@app.command(epilog="Example: python -m scripts recreate --env test --yes")
def recreate(
    env: EnvOpt = "dev",
    yes: Annotated[
        bool, typer.Option("--yes", help="Required: recreate deletes everything first.")
    ] = False,
    allow_prod: Annotated[
        bool, typer.Option("--allow-prod", help="Allow a prod environment.")
    ] = False,
    skip_verify: Annotated[bool, typer.Option(help="Do not run verify after the deploy.")] = False,
    direct: DirectOpt = False,
    wait_minutes: Annotated[
        float, typer.Option(help="verify first waits this long for Tiered Storage, nodes, rollout.")
    ] = 30,
    as_json: JsonOpt = False,
) -> None:
    """Teardown, then `make deploy ENV=<env>`, then verify; reports each phase with its time."""
    from scripts.kube import fmt_duration

    if not yes:
        raise _fail("refused: recreate deletes the environment first; pass --yes", Exit.REFUSED)
    clock = PROGRESS.clock
    phases: list[dict[str, Any]] = []
    result: dict[str, Any] = {"command": "recreate", "environment": env, "phases": phases}

    def phase(name: str, run: Callable[[], tuple[Exit, dict[str, Any] | None]]) -> Exit:
        PROGRESS.line(f"recreate {env}: {name} started")
        started = clock.monotonic()
        error: str | None = None
        try:
            code, detail = run()
        except Exception as exc:  # translated into the phase's result, or re-raised (a bug)
            failure = describe_failure(exc)
            if failure is None:
                raise
            code, detail, error = failure.code, None, failure.message
        seconds = clock.monotonic() - started
        entry: dict[str, Any] = {"phase": name, "ok": code == Exit.OK, "seconds": round(seconds, 1)}
        if error is None and detail is not None and not detail.get("ok", True):
            error = detail.get("error")
        if error:
            entry["error"] = error
        phases.append(entry)
        if detail is not None:
            result[name] = detail
        verdict = "done" if code == Exit.OK else f"failed (exit {int(code)})"
        PROGRESS.line(f"recreate {env}: {name} {verdict} after {fmt_duration(seconds)}")
        return code

    def deploy() -> tuple[Exit, dict[str, Any] | None]:
        if not as_json:
            out.print(f"deploying: make deploy ENV={env}")
        if DEPLOY(env) != 0:
            raise _fail(
                "make deploy failed; fix it and run `make deploy` then `python -m scripts verify`"
            )
        return Exit.OK, None

    steps: list[tuple[str, Callable[[], tuple[Exit, dict[str, Any] | None]]]] = [
        ("teardown", lambda: _teardown(env, True, allow_prod, as_json, emit=False)),
        ("deploy", deploy),
    ]
    if not skip_verify:
        steps.append(
            (
                "verify",
                lambda: _verify(
                    env, None, None, as_json, False, direct, None, {}, wait_minutes, not as_json
                ),
            )
        )
    code = Exit.OK
    for name, run in steps:
        code = phase(name, run)
        if code != Exit.OK:
            break
    result["ok"] = code == Exit.OK
    result["exit_code"] = int(code)
    failed = next((p for p in phases if not p["ok"]), None)
    if failed is not None and failed.get("error"):
        result["error"] = failed["error"]  # as in every command's failure object
    if as_json:
        print(json.dumps(result, default=str))
    else:
        table = Table(title=f"recreate: {env}")
        for col in ("phase", "result", "time"):
            table.add_column(col)
        for p in phases:
            table.add_row(p["phase"], "ok" if p["ok"] else "failed", fmt_duration(p["seconds"]))
        out.print(table)
    if failed is not None and failed.get("error"):  # the last line, as for every command
        err.print(f"error: {failed['error']}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


# ---- durations ---------------------------------------------------------------------------------


@app.command(epilog="Example: python -m scripts report --env dev --window 1h")
def report(
    env: EnvOpt = "dev",
    window: Annotated[str, typer.Option(help="How far back: 15m, 1h, 1d.")] = "1h",
    as_json: JsonOpt = False,
    png: Annotated[
        Path | None, typer.Option(help="PNG of the panels (default dist/<env>/report.png).")
    ] = None,
    endpoint: Annotated[
        str | None, typer.Option(help="Prometheus query URL (default: the AMP workspace).")
    ] = None,
) -> None:
    """Each tier's hit rate, TTFT percentiles and L2 use over a window, from the metrics store."""
    from scripts.report import main as report_main

    argv = ["--env", env, "--window", window, *(["--json"] if as_json else [])]
    argv += [*(["--png", str(png)] if png else []), *(["--endpoint", endpoint] if endpoint else [])]
    raise typer.Exit(report_main(argv))


@app.command(epilog="Example: python -m scripts durations --env test --json")
def durations(
    env: EnvOpt = "dev",
    cdk_out: Annotated[
        Path,
        typer.Option(
            "--cdk-out",
            help="Cloud assembly of this environment, for the table's per-property overrides "
            "(used when it holds a manifest.json).",
        ),
    ] = Path("cdk.out"),
    as_json: JsonOpt = False,
) -> None:
    """Measured create/delete minutes of every resource (CloudFormation events of the deployed
    stacks) beside the minutes scripts/deploy_durations.yaml assumes."""
    from dataclasses import asdict

    from botocore.exceptions import ClientError

    from scripts.deploy_plan import DURATIONS_FILE, Durations, measured_rows
    from scripts.teardown import stack_names

    cfg = _config(env)
    cfn = CLIENTS(cfg, None).aws("cloudformation")
    table = Durations.load()
    outdir = cdk_out if (cdk_out / "manifest.json").is_file() else None
    rows, missing = [], []
    for stack in stack_names(cfg):
        try:
            rows += measured_rows(cfn, [stack], table, outdir)
        except ClientError as exc:
            if "does not exist" not in exc.response["Error"].get("Message", ""):
                raise
            missing.append(stack)
    if as_json:
        print(
            json.dumps(
                {
                    "environment": env,
                    "durations_file": DURATIONS_FILE.name,
                    "cdk_out": str(outdir) if outdir else None,
                    "rows": [asdict(r) for r in rows],
                    "missing_stacks": missing,
                }
            )
        )
        return
    grid = Table(title=f"measured vs assumed minutes: {env} ({DURATIONS_FILE.name})")
    for col in ("stack", "resource", "type", "phase", "assumed", "measured", "ratio"):
        grid.add_column(col)
    for r in rows:
        ratio = f"{r.measured / r.assumed:.2f}" if r.assumed else "-"
        grid.add_row(
            r.stack, r.logical_id, r.type, r.phase, f"{r.assumed:.1f}", f"{r.measured:.1f}", ratio
        )
    out.print(grid)
    for stack in missing:
        out.print(f"note: stack {stack} does not exist (not deployed, or deleted)")


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
