#!/usr/bin/env python3
"""CDK entry point. Reads config/<env>.yaml and composes the environment's stacks.

Under the CDK CLI: ``cdk synth -c env=dev``. Without it (``make synth``, no network, no
credentials): ``python app.py -c env=dev --outdir cdk.out``. With ``-c pipeline=true`` the app is
the delivery pipeline defined in that environment's ``pipeline`` section instead. With
``-c manifestsDir=dist/dev`` it also writes the Kubernetes layer there as plain YAML, as
``make manifests`` does (``make synth`` does this): charts built from the config alone, never the
stacks' own, whose deploy-time values are CDK tokens.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

# jsii prints an 11-line Node.js end-of-life banner when the import below starts Node 20, which
# the README supports: silenced before it (as the Makefile does), so an error is the first line.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk import App, Environment, cx_api

from infra.cdk.context import cdk_json_context, new_app
from infra.cdk.nag import enable_checks
from infra.cdk.unresolved import UnresolvedTokenError
from infra.cdk.written import OutputFolder, OutputRefused
from infra.config import AppConfig, ConfigError, load_config
from k8s.render import needs_file_system, needs_workspace, render_config
from stacks.composition import compose
from stacks.pipeline_stack import PipelineStack

# How a refusal names the folder: the context key that gave it (make synth passes dist/<env>).
MANIFESTS_DIR = "-c manifestsDir"


def _direct_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--outdir", default=None)
    return parser.parse_args(argv)


def _pipeline(app: App, config: AppConfig) -> None:
    if not config.pipeline.enabled:
        raise ConfigError(
            f"config/{config.environment}.yaml",
            "pipeline.enabled",
            False,
            "true for -c pipeline",
            "set pipeline.enabled: true (with connection_arn and repository) in this file",
        )
    test_config = load_config(config.pipeline.test_environment)
    PipelineStack(
        app,
        f"{config.project}-pipeline",
        config=config,
        test_config=test_config,
        env=Environment(account=config.account, region=config.region),
        description="HyperPod KV cache: delivery pipeline (test, verify, approval, prod)",
    )


def write_manifests(config: AppConfig, out: Path, stream: TextIO) -> None:
    """dist/<env>/ as `make manifests` writes it. With an FSx L2 the PersistentVolume names the
    deployed file system, and an autoscaled endpoint the deployed AMP workspace, which an
    offline synth cannot read: nothing is written, and one line says how to get the folder."""
    env = config.environment
    deployed = (
        "with kvcache.l2_backend fsx_lustre the L2 PersistentVolume names the deployed file system"
        if needs_file_system(config)
        else "an autoscaled endpoint names the deployed AMP workspace"
        if needs_workspace(config)
        else None
    )
    if deployed is not None:
        print(
            f"warning: {out} not written: {deployed}, which a synth cannot know; run "
            f"`make manifests ENV={env}` after `make deploy ENV={env}`",
            file=stream,
        )
        return
    render_config(config, out, label=MANIFESTS_DIR)


def synth_messages(assembly: cx_api.CloudAssembly) -> list[str]:
    """The assembly's unacknowledged warnings and errors, one line each, as the CLI shows them."""
    levels = (cx_api.SynthesisMessageLevel.WARNING, cx_api.SynthesisMessageLevel.ERROR)
    lines = []
    for stack in assembly.stacks:
        for message in stack.messages:
            if message.level in levels:
                text = " ".join(str(message.entry.data).split())
                lines.append(f"{message.level.value.lower()}: {message.id.lstrip('/')}: {text}")
    return lines


def report(assembly: cx_api.CloudAssembly, stream: TextIO) -> None:
    """Print the warnings of a direct synth (make synth); the CDK CLI prints its own."""
    if os.environ.get("CDK_OUTDIR"):  # set by the CDK CLI, which prints them itself
        return
    for line in synth_messages(assembly):
        print(line, file=stream)


def main(argv: list[str]) -> None:
    args = _direct_args(argv)
    context = cdk_json_context()
    for item in args.context:
        key, _, value = item.partition("=")
        context[key] = value
    # Under the CLI its own context (CDK_CONTEXT_JSON) takes precedence over this.
    app = new_app(args.outdir, context)
    env_name = app.node.try_get_context("env") or "dev"
    chart_dir = app.node.try_get_context("hyperpodChartDir")
    try:
        config = load_config(env_name)
        if str(app.node.try_get_context("pipeline")).lower() == "true":
            _pipeline(app, config)
        else:
            manifests_dir = app.node.try_get_context("manifestsDir")
            if manifests_dir:  # a folder of someone else's is refused before the synth
                OutputFolder(Path(manifests_dir), MANIFESTS_DIR).check()
            compose(app, config, chart_dir=Path(chart_dir) if chart_dir else None)
            if manifests_dir:
                write_manifests(config, Path(manifests_dir), sys.stderr)
    except (ConfigError, UnresolvedTokenError, OutputRefused) as error:
        # A user mistake (output CDK values would reach, a folder of someone else's): one line.
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    enable_checks(app)
    report(app.synth(), sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
