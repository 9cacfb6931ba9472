"""``hpkv <command>`` (or ``python -m scripts <command>``): the operations CLI. This module is the
typer app and its commands' options; the error layer is ``scripts.cli_group``, each command's
work a plain function in ``scripts.commands``. Each command reads config/<env>.yaml; exit codes
are in ``scripts.lib.errors.Exit``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from typer.exceptions import Abort

from scripts.cli_bench import bench_app
from scripts.cli_group import EXIT_CODES, Commands
from scripts.commands import (
    dashboard,
    patch,
    preflight,
    recreate,
    report,
    size,
    teardown,
    verify,
    wait_tiered_storage,
)
from scripts.lib.errors import CliError, Exit
from scripts.options import (
    ContextOpt,
    DirectOpt,
    EndpointOpt,
    EnvOpt,
    JsonOpt,
    MaxTokensOpt,
    NamespaceOpt,
    SeedOpt,
    dtype_name,
    gpu_instance_type,
    png_path,
    query_url,
    report_window,
)

# NODE_JS: only `manifests` renders the charts, which imports cdk8s; cdk8s starts Node.js (jsii)
# and fails where Node.js is absent. Its module is imported when the command runs, so every other
# command, and `preflight` (which reports a missing Node.js), runs without it.

# jsii prints an 11-line Node.js end-of-life banner when a command first loads cdk8s on Node 20,
# which the README supports: silenced (as the Makefile and app.py do), so the command's own
# output comes first.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

app = typer.Typer(
    cls=Commands,
    add_completion=False,
    no_args_is_help=True,
    help=f"Operations CLI for the tiered KV cache on HyperPod. {EXIT_CODES}",
    epilog="Example: hpkv verify --env dev   (then: hpkv <command> --help)",
)


@app.command("preflight", epilog="Example: hpkv preflight --env dev")
def preflight_command(env: EnvOpt = "dev", as_json: JsonOpt = False) -> None:
    """Credentials, HyperPod quotas, instance types in the AZ id, kubectl/helm/node versions."""
    raise typer.Exit(preflight.run(preflight.PreflightOptions(env=env, as_json=as_json)))


@app.command("verify", epilog="Example: hpkv verify --env dev --endpoint qwen3-8b -n inference")
def verify_command(
    env: EnvOpt = "dev",
    namespace: NamespaceOpt = None,
    endpoint: EndpointOpt = None,
    as_json: JsonOpt = False,
    skip_l2_test: Annotated[bool, typer.Option(help="Only the static checks.")] = False,
    direct: DirectOpt = False,
    context: ContextOpt = None,
    prompt_words: Annotated[
        int, typer.Option(min=1, help="Prompt length (~tokens) of the L2 test.")
    ] = 1900,
    max_tokens: MaxTokensOpt = 4,
    seed: SeedOpt = None,
    min_hit_ratio: Annotated[
        float, typer.Option(min=0, max=1, help="Pass when the 2nd Pod hits this share.")
    ] = 0.5,
    port: Annotated[
        int | None, typer.Option(min=1, max=65535, help="Model port (default: the container's).")
    ] = None,
    wait_minutes: Annotated[
        float,
        typer.Option(
            min=0,
            help="First wait up to this long for each of: Tiered Storage (InService, config "
            "read back), the GPU nodes Ready, the endpoint's rollout; progress on stderr.",
        ),
    ] = 0,
    chaos: Annotated[
        bool,
        typer.Option(
            "--chaos",
            help="Then break things on purpose (DISRUPTIVE): delete an endpoint Pod, scale the "
            "endpoint out by one and back, delete one Curvine worker, and check that L2 serves "
            "again. Asks first unless --yes.",
        ),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Run --chaos without asking.")] = False,
) -> None:
    """Check a live environment stage by stage, then prove cross-Pod reuse through L2."""
    if chaos and not yes:
        _confirm_chaos(env, endpoint)
    code, _ = verify.run(
        verify.VerifyOptions(
            env=env,
            namespace=namespace,
            endpoint=endpoint,
            as_json=as_json,
            skip_l2_test=skip_l2_test,
            direct=direct,
            context=context,
            prompt_words=prompt_words,
            max_tokens=max_tokens,
            seed=seed,
            min_hit_ratio=min_hit_ratio,
            port=port,
            wait_minutes=wait_minutes,
            chaos=chaos,
        )
    )
    raise typer.Exit(code)


def _confirm_chaos(env: str, endpoint: str | None) -> None:
    """Ask on a terminal; refuse (exit 3) where no one can answer, and on no answer."""
    who = endpoint or "the first endpoint"
    what = (
        f"verify --chaos deletes an endpoint Pod ({who}), scales it out by one and back, and "
        f"deletes one Curvine worker Pod in {env}: requests slow down while they come back"
    )
    if not _can_ask():
        raise CliError(f"refused: {what}; pass --yes to run it", Exit.REFUSED)
    try:
        confirmed = typer.confirm(f"{what}. Go on?", default=False, err=True)
    except Abort:  # Ctrl-D (end of input) or Ctrl-C at the question: a no
        typer.echo("", err=True)  # the answer's line was never ended
        confirmed = False
    if not confirmed:
        raise CliError("refused: --chaos not confirmed; nothing was deleted", Exit.REFUSED)


def _can_ask() -> bool:
    """Standard input is a terminal someone can answer on: not closed, absent or a pipe."""
    stdin = sys.stdin
    try:
        return stdin is not None and not stdin.closed and stdin.isatty()
    except (ValueError, OSError):  # closed underneath, or a file descriptor no longer valid
        return False


@app.command(
    "wait-tiered-storage",
    epilog="Example: hpkv wait-tiered-storage --env dev --timeout-minutes 45",
)
def wait_tiered_storage_command(
    env: EnvOpt = "dev",
    timeout_minutes: Annotated[
        float, typer.Option(min=0, help="Give up after this long (0: check once).")
    ] = 45,
    interval_seconds: Annotated[
        float, typer.Option(min=1, help="Seconds between polls (DescribeCluster).")
    ] = 30,
    as_json: JsonOpt = False,
) -> None:
    """Follow the Tiered Storage update: poll DescribeCluster until the config reads back and
    the cluster is InService (progress on stderr)."""
    options = wait_tiered_storage.WaitOptions(
        env=env,
        timeout_minutes=timeout_minutes,
        interval_seconds=interval_seconds,
        as_json=as_json,
    )
    raise typer.Exit(wait_tiered_storage.run(options))


@app.command("patch", epilog="Example: hpkv patch --env dev --endpoint qwen3-8b --dry-run")
def patch_command(
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
        int, typer.Option(min=1, help="Wait at most this long for each rollout step.")
    ] = 15,
    as_json: JsonOpt = False,
    context: ContextOpt = None,
) -> None:
    """Point an endpoint's L2 at Curvine without Kyverno (pause operator, patch, restore)."""
    options = patch.PatchOptions(
        env=env,
        namespace=namespace,
        endpoint=endpoint,
        deployment=deployment,
        dry_run=dry_run,
        timeout_minutes=timeout_minutes,
        as_json=as_json,
        context=context,
    )
    raise typer.Exit(patch.run(options))


app.add_typer(bench_app, name="bench")


@app.command(
    "size", epilog="Example: hpkv size ./Qwen2-7B/config.json --json   (or a preset: qwen2-7b)"
)
def size_command(
    model: Annotated[
        str,
        typer.Argument(
            help="Path to a Hugging Face config.json (or its folder), or a preset: qwen2-7b, "
            "llama-3.1-8b, llama-3.1-70b, llama-3.1-405b, mistral-7b, deepseek-v3."
        ),
    ],
    env: EnvOpt = "dev",
    params: Annotated[
        float | None,
        typer.Option(min=1, help="Parameter count (e.g. 7.6e9) instead of the estimate."),
    ] = None,
    instance_type: Annotated[
        str | None,
        typer.Option(
            help="GPU instance type (default: hyperpod.gpu_group).", callback=gpu_instance_type
        ),
    ] = None,
    gpu_nodes: Annotated[
        int | None,
        typer.Option(min=1, help="GPU nodes (default: hyperpod.gpu_group.instance_count)."),
    ] = None,
    l2_worker_gib: Annotated[
        float | None,
        typer.Option(
            min=0,
            help="Curvine capacity per worker in GiB "
            "(default: kvcache.curvine.worker.capacity_gib).",
        ),
    ] = None,
    weight_dtype: Annotated[
        str | None,
        typer.Option(
            help="Weight dtype (default: torch_dtype).", callback=dtype_name("--weight-dtype")
        ),
    ] = None,
    kv_dtype: Annotated[
        str | None,
        typer.Option(
            help="KV cache dtype, e.g. fp8 (default: torch_dtype).",
            callback=dtype_name("--kv-dtype"),
        ),
    ] = None,
    gpu_memory_utilization: Annotated[
        float, typer.Option(min=0.01, max=1, help="vLLM --gpu-memory-utilization.")
    ] = 0.9,
    prompt_tokens: Annotated[
        int | None,
        typer.Option(
            min=1, help="Typical prompt length: one read-back verdict per tier and the L2 to use."
        ),
    ] = None,
    prefill_tokens_per_s: Annotated[
        float | None,
        typer.Option(
            min=1, help="Measured prefill rate of one replica (bench); default: an estimate."
        ),
    ] = None,
    sessions: Annotated[
        int, typer.Option(min=1, help="Concurrent sessions whose KV should stay cached.")
    ] = 1,
    context_tokens: Annotated[
        int | None, typer.Option(min=1, help="Context length per session (default: prompt).")
    ] = None,
    curvine_read_mb_per_s: Annotated[
        float | None,
        typer.Option(
            min=1, help="Measured Curvine L2 read rate, MB/s (make bench), for the read verdicts."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """KV bytes per token, weights, and how many tokens L0, L1 (LMCache's CPU cache in the Pod)
    and each L2 hold on this environment; with --prompt-tokens, whether each tier's read-back
    beats recomputing and which L2 to use."""
    options = size.SizeOptions(
        model=model,
        env=env,
        params=params,
        instance_type=instance_type,
        gpu_nodes=gpu_nodes,
        l2_worker_gib=l2_worker_gib,
        weight_dtype=weight_dtype,
        kv_dtype=kv_dtype,
        gpu_memory_utilization=gpu_memory_utilization,
        prompt_tokens=prompt_tokens,
        prefill_tokens_per_s=prefill_tokens_per_s,
        sessions=sessions,
        context_tokens=context_tokens,
        curvine_read_mb_per_s=curvine_read_mb_per_s,
        as_json=as_json,
    )
    raise typer.Exit(size.run(options))


@app.command(
    "teardown",
    epilog="Example: hpkv teardown --env dev          (list only)\n\n"
    "         hpkv teardown --env dev --yes    (delete)",
)
def teardown_command(
    env: EnvOpt = "dev",
    yes: Annotated[bool, typer.Option("--yes", help="Delete; without it only list.")] = False,
    allow_prod: Annotated[
        bool, typer.Option("--allow-prod", help="Allow a prod environment.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete endpoints, PVCs, stacks (reverse order) and tagged leftovers; re-runnable."""
    options = teardown.TeardownOptions(env=env, yes=yes, allow_prod=allow_prod, as_json=as_json)
    raise typer.Exit(teardown.run(options)[0])


@app.command("recreate", epilog="Example: hpkv recreate --env test --yes")
def recreate_command(
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
        float,
        typer.Option(
            min=0, help="verify first waits this long for Tiered Storage, nodes, rollout."
        ),
    ] = 30,
    as_json: JsonOpt = False,
) -> None:
    """Teardown, then `make deploy ENV=<env>`, then verify; reports each phase with its time."""
    options = recreate.RecreateOptions(
        env=env,
        yes=yes,
        allow_prod=allow_prod,
        skip_verify=skip_verify,
        direct=direct,
        wait_minutes=wait_minutes,
        as_json=as_json,
    )
    raise typer.Exit(recreate.run(options))


@app.command("report", epilog="Example: hpkv report --env dev --window 1h")
def report_command(
    env: EnvOpt = "dev",
    window: Annotated[
        str, typer.Option(help="How far back: 15m, 1h, 1d.", callback=report_window)
    ] = "1h",
    as_json: JsonOpt = False,
    png: Annotated[
        Path | None,
        typer.Option(help="PNG of the panels (default dist/<env>/report.png).", callback=png_path),
    ] = None,
    endpoint: Annotated[
        str | None,
        typer.Option(help="Prometheus query URL (default: the AMP workspace).", callback=query_url),
    ] = None,
) -> None:
    """Each tier's hit rate, TTFT percentiles and L2 use over a window, from the metrics store."""
    options = report.ReportOptions(
        env=env, window=window, as_json=as_json, png=png, endpoint=endpoint
    )
    raise typer.Exit(report.run(options))


@app.command("manifests", epilog="Example: hpkv manifests --env dev --out dist/dev")
def manifests_command(
    env: EnvOpt = "dev",
    out: Annotated[Path | None, typer.Option(help="Folder to write (default: dist/<env>).")] = None,
) -> None:
    """Write the Kubernetes layer as plain YAML for kubectl or GitOps (one file per chart in apply
    order, kustomization.yaml, README.md) and record the environment's lock."""
    from scripts.commands import manifests  # loads cdk8s: see NODE_JS above

    raise typer.Exit(manifests.run(manifests.ManifestsOptions(env=env, out=out)))


@app.command(
    "dashboard",
    epilog="Example: hpkv dashboard --env dev   (then import dist/dev/grafana-dashboard.json)",
)
def dashboard_command(
    env: EnvOpt = "dev",
    out: Annotated[Path | None, typer.Option(help="Folder (default: dist/<env>).")] = None,
    samples: Annotated[
        Path | None, typer.Option(help="Sample series JSON to render --png from.")
    ] = None,
    png: Annotated[
        Path | None,
        typer.Option(help="Render the panels from --samples into this PNG.", callback=png_path),
    ] = None,
) -> None:
    """Write the Grafana dashboard JSON and the alert rules of this environment."""
    options = dashboard.DashboardOptions(env=env, out=out, samples=samples, png=png)
    raise typer.Exit(dashboard.run(options))


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
