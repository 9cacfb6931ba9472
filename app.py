#!/usr/bin/env python3
"""CDK entry point. Reads config/<env>.yaml and composes the environment's stacks.

Under the CDK CLI: ``cdk synth -c env=dev``. Without it (``make synth``, no network, no
credentials): ``python app.py -c env=dev --outdir cdk.out``. With ``-c pipeline=true`` the app is
the delivery pipeline defined in that environment's ``pipeline`` section instead.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aws_cdk import App, Environment

from infra.cdk_context import cdk_json_context
from infra.config import AppConfig, ConfigError, load_config
from infra.nag import enable_checks
from stacks.composition import compose
from stacks.pipeline_stack import PipelineStack


def _direct_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--outdir", default=None)
    return parser.parse_args(argv)


def _pipeline(app: App, config: AppConfig) -> None:
    if not config.pipeline.enabled:
        raise ConfigError(
            f"config/{config.environment}.yaml", "pipeline.enabled", False, "true for -c pipeline",
            "set pipeline.enabled: true (with connection_arn and repository) in this file",
        )  # fmt: skip
    test_config = load_config(config.pipeline.test_environment)
    PipelineStack(
        app,
        f"{config.project}-pipeline",
        config=config,
        test_config=test_config,
        env=Environment(account=config.account, region=config.region),
        description="HyperPod KV cache: delivery pipeline (test, verify, approval, prod)",
    )


def main(argv: list[str]) -> None:
    args = _direct_args(argv)
    context = cdk_json_context()
    for item in args.context:
        key, _, value = item.partition("=")
        context[key] = value
    # Under the CLI its own context (CDK_CONTEXT_JSON) takes precedence over this.
    app = App(context=context, outdir=args.outdir)
    env_name = app.node.try_get_context("env") or "dev"
    chart_dir = app.node.try_get_context("hyperpodChartDir")
    try:
        config = load_config(env_name)
        if str(app.node.try_get_context("pipeline")).lower() == "true":
            _pipeline(app, config)
        else:
            compose(app, config, chart_dir=Path(chart_dir) if chart_dir else None)
    except ConfigError as error:
        # A user mistake: one line, no traceback.
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    enable_checks(app)
    app.synth()


if __name__ == "__main__":
    main(sys.argv[1:])
