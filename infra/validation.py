"""Offline validation of synthesized templates: cfn-lint (errors fail; W3005 and W3010 ignored).

W3005 flags a DependsOn that an intrinsic already implies; CDK adds such edges deliberately.
W3010 flags hard-coded AZs: they come from config on purpose (synth makes no lookup).
This is the project's only template validator: aws-cdk-lib's built-in one is off
(infra/cdk_context.py says why).
"""

from __future__ import annotations

from pathlib import Path

from cfnlint.api import ManualArgs, lint_by_config
from cfnlint.match import Match

IGNORED_CHECKS = ["W3005", "W3010"]


def templates_in(assembly_dir: Path) -> list[Path]:
    """Top-level stacks and those of nested stages (a pipeline's assembly-*/ directories)."""
    return sorted(assembly_dir.rglob("*.template.json"))


def lint_templates(templates: list[Path], regions: list[str]) -> dict[Path, list[Match]]:
    """cfn-lint's findings for each template, from one run: cfn-lint loads its rules and schemas
    once per run (about 0.35 s), so a run per template paid that ten times per environment."""
    config = ManualArgs(
        templates=[str(t) for t in templates], regions=regions, ignore_checks=IGNORED_CHECKS
    )
    found: dict[str, list[Match]] = {str(t): [] for t in templates}
    for match in lint_by_config(config):
        if match.filename not in found:  # a problem with the run itself, not with a template
            raise RuntimeError(f"cfn-lint: {match}")
        found[match.filename].append(match)
    return {t: found[str(t)] for t in templates}


def lint_template(template: Path, regions: list[str]) -> list[Match]:
    return lint_templates([template], regions)[template]


def errors_only(matches: list[Match]) -> list[Match]:
    return [m for m in matches if m.rule.id.startswith("E")]
