"""`make validate`: cfn-lint every template of a cloud assembly; exit 1 on any error.

Usage: python -m scripts.validate_templates cdk.out [--region us-west-2]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from infra.validation import errors_only, lint_template, templates_in


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
    for template in templates:
        matches = lint_template(template, regions)
        errors = errors_only(matches)
        warnings = len(matches) - len(errors)
        status = "FAIL" if errors else "ok"
        print(f"cfn-lint {status}: {template.name} ({len(errors)} errors, {warnings} warnings)")
        for match in matches:
            print(f"  {match}")
        failed += bool(errors)
    print("cdk-nag: ran during synth (AwsSolutions); unacknowledged findings fail the synth")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
