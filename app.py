#!/usr/bin/env python3
"""CDK entry point. Reads config/<env>.yaml and composes the environment's stacks.

Under the CDK CLI: ``cdk synth -c env=dev``. Without it (``make synth``, no network, no
credentials): ``python app.py -c env=dev --outdir cdk.out``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aws_cdk import App

from infra.cdk_context import cdk_json_context
from infra.config import ConfigError, load_config
from infra.nag import enable_checks
from stacks.composition import compose


def _direct_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-c", "--context", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--outdir", default=None)
    return parser.parse_args(argv)


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
    except ConfigError as error:
        # A user mistake: one line, no traceback.
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    compose(app, config, chart_dir=Path(chart_dir) if chart_dir else None)
    enable_checks(app)
    app.synth()


if __name__ == "__main__":
    main(sys.argv[1:])
