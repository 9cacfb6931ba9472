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
import shutil
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import cx_api

from app import synth_messages
from tests.support import cdk_cli

pytestmark = pytest.mark.skipif(
    not cdk_cli.CDK.exists(),
    reason="node_modules/.bin/cdk is not installed: run `npm ci` (make test does)",
)


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


@pytest.mark.background
def test_cdk_cli_synth_matches_direct_synth_without_credentials(run_folder: Path) -> None:
    try:
        _compare(run_folder / cdk_cli.FOLDER, cdk_cli.result(run_folder))
    finally:
        shutil.rmtree(run_folder / cdk_cli.FOLDER, ignore_errors=True)


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
