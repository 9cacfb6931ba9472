"""A hand-written cloud assembly: stacks, their dependencies and their resources, as `cdk synth`
writes them (manifest.json and one template a stack)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_assembly(outdir: Path, stacks: dict[str, tuple[list[str], dict[str, Any]]]) -> Path:
    """stacks: name -> (stack dependencies, template Resources)."""
    outdir.mkdir(parents=True, exist_ok=True)
    artifacts: dict[str, Any] = {}
    for name, (deps, resources) in stacks.items():
        (outdir / f"{name}.template.json").write_text(json.dumps({"Resources": resources}))
        artifacts[name] = {
            "type": "aws:cloudformation:stack",
            "dependencies": [*deps, f"{name}.assets"],
            "properties": {"templateFile": f"{name}.template.json"},
        }
        artifacts[f"{name}.assets"] = {"type": "cdk:asset-manifest"}
    (outdir / "manifest.json").write_text(json.dumps({"artifacts": artifacts}))
    return outdir
