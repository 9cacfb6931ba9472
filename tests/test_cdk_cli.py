"""The CDK CLI synthesizes the same templates as `python app.py`, with no AWS credentials.

One CLI synth (``node_modules/.bin/cdk``, installed by ``npm ci``; ``make test`` runs it) and one
direct synth run side by side. Both get an empty HOME, credential files that do not exist and no
instance metadata, so any context lookup (e.g. availability zones) fails the CLI synth.

What is normalised before comparing, and why: the CLI turns on path and asset metadata by default
(``aws:cdk:enable-path-metadata``, ``aws:cdk:enable-asset-metadata``), so its templates carry
``Metadata`` entries ``aws:cdk:path`` and ``aws:asset:*`` that a direct synth leaves out; these
are removed, as is a ``CDKMetadata`` resource with its condition (version reporting, also a CLI
default). Asset hashes are not normalised: they must match, and they do.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import cx_api

from app import synth_messages
from tests.support import background

ROOT = Path(__file__).resolve().parents[1]
CDK = ROOT / "node_modules" / ".bin" / "cdk"
PYTHON = ROOT / ".venv" / "bin" / "python"

pytestmark = pytest.mark.skipif(
    not CDK.exists(), reason="node_modules/.bin/cdk is not installed: run `npm ci` (make test does)"
)


def no_credentials_env(home: Path) -> dict[str, str]:
    home.mkdir()
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(home / "no-such-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "no-such-credentials"),
        "CDK_DISABLE_CLI_TELEMETRY": "true",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def normalised(template: dict[str, Any]) -> dict[str, Any]:
    resources = template.get("Resources", {})
    resources.pop("CDKMetadata", None)
    for resource in resources.values():
        metadata = resource.get("Metadata", {})
        for key in [k for k in metadata if k == "aws:cdk:path" or k.startswith("aws:asset:")]:
            del metadata[key]
        if "Metadata" in resource and not metadata:
            del resource["Metadata"]
    conditions = template.get("Conditions", {})
    conditions.pop("CDKMetadataAvailable", None)
    if "Conditions" in template and not conditions:
        del template["Conditions"]
    return template


def templates(outdir: Path) -> dict[str, dict[str, Any]]:
    return {
        path.name: normalised(json.loads(path.read_text()))
        for path in sorted(outdir.glob("*.template.json"))
    }


def _synth_both(workdir: str) -> dict[str, Any]:
    """The CLI synth and the direct synth, side by side (run in the background process)."""
    tmp = Path(workdir)
    env = no_credentials_env(tmp / "home")
    cli_out, direct_out = tmp / "cli", tmp / "direct"
    python = str(PYTHON) if PYTHON.exists() else sys.executable
    # cdk.json's "app" runs .venv/bin/python: no activated virtualenv is needed.
    cli = subprocess.Popen(
        [str(CDK), "synth", "-c", "env=dev", "--output", str(cli_out), "--quiet", "--no-notices"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    direct = subprocess.run(
        [python, "app.py", "-c", "env=dev", "--outdir", str(direct_out)],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    cli_stdout, cli_stderr = cli.communicate(timeout=600)
    return {
        "cli": (cli.returncode, cli_stdout + cli_stderr),
        "direct": (direct.returncode, direct.stderr),
    }


_WORKDIR: list[str] = []


def _start() -> None:
    """Called when the test is collected: the synths run while the rest of the suite does."""
    if CDK.exists() and not _WORKDIR:
        _WORKDIR.append(tempfile.mkdtemp(prefix="cdk-cli-"))
        background.submit(("cdk-cli",), _synth_both, _WORKDIR[0])


@pytest.mark.background(start=_start)
def test_cdk_cli_synth_matches_direct_synth_without_credentials() -> None:
    _start()
    workdir = Path(_WORKDIR[0])
    try:
        _compare(workdir, background.result(("cdk-cli",), _synth_both, str(workdir)))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _compare(workdir: Path, ran: dict[str, Any]) -> None:
    cli_out, direct_out = workdir / "cli", workdir / "direct"
    (direct_code, direct_stderr), (cli_code, cli_output) = ran["direct"], ran["cli"]
    assert direct_code == 0, direct_stderr[-3000:]
    assert cli_code == 0, cli_output[-3000:]
    manifest = json.loads((cli_out / "manifest.json").read_text())
    assert not manifest.get("missing"), f"synth asked for context lookups: {manifest['missing']}"

    # make synth shows the person running it every warning (e.g. the missing HyperPod chart).
    warnings = synth_messages(cx_api.CloudAssembly(str(direct_out)))
    assert all(line in direct_stderr for line in warnings), direct_stderr[-3000:]

    cli_templates, direct_templates = templates(cli_out), templates(direct_out)
    assert sorted(cli_templates) == sorted(direct_templates)
    stacks = [
        a["properties"]["templateFile"]
        for a in json.loads((direct_out / "manifest.json").read_text())["artifacts"].values()
        if a["type"] == "aws:cloudformation:stack"
    ]
    assert len(stacks) >= 5 and sorted(direct_templates) == sorted(stacks)
    for name, template in direct_templates.items():
        assert cli_templates[name] == template, f"{name} differs between the CLI and app.py"
