"""cdk.json sets every feature flag that `cdk init` sets for the pinned aws-cdk-lib.

The recommended values are read from the pinned aws-cdk-lib itself (its cx-api module, evaluated
by Node.js from the package's jsii tarball), so a version bump that brings new flags fails here
until cdk.json takes them or records why not.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import aws_cdk
import pytest

from infra.cdk.context import cdk_json_context

# Recommended flags kept at another value on purpose; the reason is in docs/architecture.md.
KEPT = {"@aws-cdk/core:defaultCrossStackReferences": "strong"}


def _recommended(tmp_path: Path) -> dict[str, Any]:
    if shutil.which("node") is None:  # pragma: no cover - Node.js is a prerequisite
        pytest.skip("Node.js is not on PATH")
    tarball = (
        Path(aws_cdk.__file__).parent / "_jsii" / f"aws-cdk-lib@{version('aws-cdk-lib')}.jsii.tgz"
    )
    with tarfile.open(tarball) as archive:
        members = [m for m in archive.getmembers() if m.name.startswith("package/cx-api/lib/")]
        archive.extractall(tmp_path, members=members, filter="data")
    script = (
        "const f = require(process.argv[1]);"
        "process.stdout.write(JSON.stringify(f.CURRENTLY_RECOMMENDED_FLAGS));"
    )
    features = tmp_path / "package" / "cx-api" / "lib" / "features.js"
    out = subprocess.run(
        ["node", "-e", script, str(features)], capture_output=True, text=True, check=True
    )
    flags: dict[str, Any] = json.loads(out.stdout)
    return flags


def test_cdk_json_sets_every_recommended_flag(tmp_path: Path) -> None:
    recommended = _recommended(tmp_path)
    assert len(recommended) > 50  # the extraction worked
    context = cdk_json_context()
    missing = sorted(k for k in recommended if k not in context)
    assert not missing, f"cdk.json lacks recommended feature flags: {missing}"
    differ = {
        k: (context[k], v) for k, v in recommended.items() if context[k] != v and k not in KEPT
    }
    assert not differ, (
        f"cdk.json differs from the recommended values (cdk.json, recommended): {differ}"
    )
    assert {k: context[k] for k in KEPT} == KEPT
