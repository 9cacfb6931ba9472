"""`make validate`: cfn-lint every template of a cloud assembly; exit 1 on any error.

Usage: python -m scripts.validate_templates cdk.out [--region us-west-2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from infra.validation import errors_only, lint_template, templates_in


def _lint(template: Path, regions: list[str]) -> tuple[list[str], int]:
    """One template's findings as text and its error count (run in a worker process)."""
    matches = lint_template(template, regions)
    return [str(m) for m in matches], len(errors_only(matches))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assembly", type=Path, help="cloud assembly directory (cdk.out)")
    args = parser.parse_args(argv)
    templates = templates_in(args.assembly)
    if not templates:
        print(f"no templates in {args.assembly}: run `make synth` first", file=sys.stderr)
        return 1
    manifest = json.loads((args.assembly / "manifest.json").read_text())
    regions = sorted(
        {
            a["environment"].rsplit("/", 1)[-1]
            for a in manifest["artifacts"].values()
            if a.get("type") == "aws:cloudformation:stack"
        }
    )
    failed = 0
    # One template per process: cfn-lint is CPU-bound and the templates are independent.
    workers = min(len(templates), os.cpu_count() or 1)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = pool.map(_lint, templates, [regions] * len(templates))
        for template, (matches, errors) in zip(templates, results, strict=True):
            status = "FAIL" if errors else "ok"
            warnings = len(matches) - errors
            print(f"cfn-lint {status}: {template.name} ({errors} errors, {warnings} warnings)")
            for match in matches:
                print(f"  {match}")
            failed += bool(errors)
    print("cdk-nag: ran during synth (AwsSolutions); unacknowledged findings fail the synth")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
