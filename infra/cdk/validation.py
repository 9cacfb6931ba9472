"""Offline validation of synthesized templates: cfn-lint (errors fail; W3005 and W3010 ignored).

W3005 flags a DependsOn that an intrinsic already implies; CDK adds such edges deliberately.
W3010 flags hard-coded AZs: they come from config on purpose (synth makes no lookup).
This is the project's only template validator: aws-cdk-lib's built-in one is off
(infra/cdk/context.py says why).

cfn-lint is imported when a Linter is made, not with this module, so that a process can start
linting workers before it pays for the import (tools/validate_templates.py does, to load
cfn-lint while the synth runs).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cfnlint.match import Match

IGNORED_CHECKS = ["W3005", "W3010"]


class Linter:
    """cfn-lint with its rules loaded once (import and rules take about 0.9 s; a template about
    0.02-0.8 s after that), for any number of templates."""

    def __init__(self) -> None:
        # cfn-lint loads when a Linter is made, not with this module (module docstring).
        from cfnlint.config import ConfigMixIn
        from cfnlint.runner import Runner

        self.rules = Runner(ConfigMixIn([], ignore_checks=IGNORED_CHECKS)).rules

    def lint(self, template: Path, regions: list[str]) -> list[Match]:
        # As in __init__: cfn-lint loads with the first Linter.
        from cfnlint.config import ConfigMixIn
        from cfnlint.runner.template.runner import run_template_by_file_path

        config = ConfigMixIn([], regions=regions, ignore_checks=IGNORED_CHECKS)
        return list(run_template_by_file_path(str(template), config, self.rules, False))


@cache
def linter() -> Linter:
    """This process's Linter."""
    return Linter()


def templates_in(assembly_dir: Path) -> list[Path]:
    """Top-level stacks and those of nested stages (a pipeline's assembly-*/ directories)."""
    return sorted(assembly_dir.rglob("*.template.json"))


def lint_templates(templates: list[Path], regions: list[str]) -> dict[Path, list[Match]]:
    return {template: linter().lint(template, regions) for template in templates}


def lint_template(template: Path, regions: list[str]) -> list[Match]:
    return linter().lint(template, regions)


def errors_only(matches: list[Match]) -> list[Match]:
    return [m for m in matches if m.rule.id.startswith("E")]
