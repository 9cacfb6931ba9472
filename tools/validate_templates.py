"""`make validate`: cfn-lint every template of a cloud assembly; exit 1 on any error.

Usage: python -m tools.validate_templates cdk.out [--after COMMAND ...]

With ``--after``, COMMAND (the synth that writes the assembly; `make synth` passes it) runs first,
and the linting workers load cfn-lint meanwhile instead of after it (about 0.9 s of the 2 s).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from infra.cdk.validation import errors_only, lint_templates, linter, templates_in


def _warm_up() -> None:
    """A worker's first task, before any template exists: import cfn-lint and load its rules."""
    linter()


def _lint(templates: list[Path], regions: list[str]) -> dict[Path, tuple[list[str], int]]:
    """Each template's findings as text and its error count (run in a worker process)."""
    found = lint_templates(templates, regions)
    return {t: ([str(m) for m in found[t]], len(errors_only(found[t]))) for t in templates}


def shares(templates: list[Path], workers: int) -> list[list[Path]]:
    """The templates split into ``workers`` groups of about the same total size, largest first
    (cfn-lint's time grows with a template's size, after a fixed cost per run)."""
    groups: list[list[Path]] = [[] for _ in range(workers)]
    sizes = [0] * workers
    for template in sorted(templates, key=lambda t: t.stat().st_size, reverse=True):
        smallest = sizes.index(min(sizes))
        groups[smallest].append(template)
        sizes[smallest] += template.stat().st_size
    return [group for group in groups if group]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assembly", type=Path, help="cloud assembly directory (cdk.out)")
    parser.add_argument(
        "--after",
        nargs=argparse.REMAINDER,
        default=[],
        metavar="COMMAND",
        help="run COMMAND first (the synth); cfn-lint loads meanwhile",
    )
    args = parser.parse_args(argv)
    # One cfn-lint worker per core (it is CPU-bound and the templates are independent), started
    # now so that each loads cfn-lint while COMMAND runs.
    workers = os.cpu_count() or 1
    with ProcessPoolExecutor(max_workers=workers, initializer=_warm_up) as pool:
        for _ in range(workers):
            pool.submit(int)  # the executor starts a worker per task it cannot hand to an idle one
        if args.after:
            code = subprocess.run(args.after, check=False).returncode
            if code:
                return code
        return report(args.assembly, pool, workers)


def report(assembly: Path, pool: ProcessPoolExecutor, workers: int) -> int:
    """Lint the assembly's templates on the pool, print one line each (and their findings)."""
    templates = templates_in(assembly)
    if not templates:
        print(f"no templates in {assembly}: run `make synth` first", file=sys.stderr)
        return 1
    manifest = json.loads((assembly / "manifest.json").read_text())
    regions = sorted(
        {
            a["environment"].rsplit("/", 1)[-1]
            for a in manifest["artifacts"].values()
            if a.get("type") == "aws:cloudformation:stack"
        }
    )
    groups = shares(templates, min(len(templates), workers))
    results: dict[Path, tuple[list[str], int]] = {}
    for found in pool.map(_lint, groups, [regions] * len(groups)):
        results.update(found)
    failed = 0
    for template in templates:
        matches, errors = results[template]
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
