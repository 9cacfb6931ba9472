"""The context of cdk.json (feature flags and defaults) for apps created without the CDK CLI.

`make synth`, the tests and the benchmark run ``app.py`` directly so that synth needs neither the
CLI nor the network; they must see the same feature flags the CLI would pass.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CDK_JSON = Path(__file__).resolve().parents[1] / "cdk.json"


def cdk_json_context() -> dict[str, Any]:
    context: dict[str, Any] = json.loads(CDK_JSON.read_text())["context"]
    return context
