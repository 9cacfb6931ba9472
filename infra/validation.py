"""Offline validation of synthesized templates: cfn-lint (errors fail; W3005 and W3010 ignored).

W3005 flags a DependsOn that an intrinsic already implies; CDK adds such edges deliberately.
W3010 flags hard-coded AZs: they come from config on purpose (synth makes no lookup); the same
finding of CDK's own validation is acknowledged on the network construct.
"""

from __future__ import annotations

from pathlib import Path

from cfnlint.api import ManualArgs, lint_file
from cfnlint.match import Match

IGNORED_CHECKS = ["W3005", "W3010"]


def templates_in(assembly_dir: Path) -> list[Path]:
    """Top-level stacks and those of nested stages (a pipeline's assembly-*/ directories)."""
    return sorted(assembly_dir.rglob("*.template.json"))


def lint_template(template: Path, regions: list[str]) -> list[Match]:
    config = ManualArgs(regions=regions, ignore_checks=IGNORED_CHECKS)
    return lint_file(template, config=config)


def errors_only(matches: list[Match]) -> list[Match]:
    return [m for m in matches if m.rule.id.startswith("E")]
