"""The App every synth of this project starts from, and the context of cdk.json (feature flags
and defaults) for apps created without the CDK CLI.

`make synth`, the tests and the benchmark run ``app.py`` directly so that synth needs neither the
CLI nor the network; they must see the same feature flags the CLI would pass.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_cdk import App

CDK_JSON = Path(__file__).resolve().parents[2] / "cdk.json"


def cdk_json_context() -> dict[str, Any]:
    context: dict[str, Any] = json.loads(CDK_JSON.read_text())["context"]
    return context


def new_app(outdir: str | None = None, context: dict[str, Any] | None = None) -> App:
    """An App with cdk.json's context (``context`` replaces it) and without aws-cdk-lib's
    built-in template validation.

    That validator is cfn-lint compiled to WebAssembly (its report names cfn-lint's rule IDs) and
    only warns; cfn-lint itself, pinned, runs on every template after synth (`make validate`,
    the tests, CI) and fails on an error. Running both took about 4 s of dev's 9 s synth.
    Validation plugins (cdk-nag) still run.
    """
    return App(
        context=cdk_json_context() if context is None else context,
        outdir=outdir,
        builtin_cloud_formation_validation=False,
    )
