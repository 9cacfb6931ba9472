"""Mutation score per module: ``make mutation`` (or ``python -m tools.mutation [MODULE ...]``).

Runs mutmut 3 (configured in pyproject.toml ``[tool.mutmut]``) once over the modules asked for,
each selected by a mutant-name glob, so mutmut's stats run and its clean run happen once and each
mutant runs only the tests that reached its function (tests/mutation/plugin.py credits the
session fixtures that render and synthesize). Then prints killed / tested per module, with the
seconds its mutants' test runs took. A surviving mutant that cannot change behaviour is listed in
``tools/mutation_equivalents.yaml`` by content (module, function, the line it changes) and counted
as equivalent, outside the score; product files carry no mutation bookkeeping.

``--resume`` carries on from the last results: a kill stands (tests are only ever added), every
other mutant of a module runs again, and a module whose source changed since runs in full.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import subprocess
import sys
import time
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "mutants"
EQUIVALENTS = Path(__file__).with_name("mutation_equivalents.yaml")
TARGET = 85.0


def modules_scored(root: Path = ROOT) -> tuple[str, ...]:
    """Every module under ``[tool.mutmut] source_paths``, read from the tree: a module added to
    a scored folder is scored without another edit. The chart builders (k8s/* but k8s.l2_pod,
    what the L2 policy gives a Pod as plain data) are not among the paths: their survivors are
    construct ids, annotation keys and descriptions, and the schema, rehearsal and invariant
    tests pin what they render."""
    paths = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mutmut"]["source_paths"]
    found: list[str] = []
    for entry in paths:
        top = root / entry
        for path in [top] if top.is_file() else sorted(top.rglob("*.py")):
            if path.name != "__init__.py" and "__pycache__" not in path.parts:
                found.append(".".join(path.relative_to(root).with_suffix("").parts))
    return tuple(found)


MODULES = modules_scored()
KILLED = {1, 3, 24, -24, 36, 152, 255, 37}  # killed, pytest error, timeouts, type check
NOT_TESTED = {None, 34}  # not checked, skipped


def _meta(module: str) -> dict[str, Any]:
    meta = MUTANTS / (module.replace(".", "/") + ".py.meta")
    data: dict[str, Any] = json.loads(meta.read_text()) if meta.exists() else {}
    return data


def results(module: str) -> dict[str, int | None]:
    codes: dict[str, int | None] = _meta(module).get("exit_code_by_key", {})
    return codes


def seconds(module: str) -> float:
    """What this module's mutants' test runs took (mutmut records each)."""
    return float(sum(_meta(module).get("durations_by_key", {}).values()))


@dataclass(frozen=True)
class Equivalent:
    module: str
    function: str
    line: str
    reason: str


def load_equivalents(path: Path = EQUIVALENTS) -> list[Equivalent]:
    return [Equivalent(**entry) for entry in yaml.safe_load(path.read_text()) or []]


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """Top-level functions and methods by name (mutmut writes both kinds at those levels)."""
    found: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        body = node.body if isinstance(node, ast.ClassDef) else [node]
        found.update({f.name: f for f in body if isinstance(f, ast.FunctionDef)})
    return found


def changed_lines(module: str, mutant: str) -> tuple[str, set[str]]:
    """The function mutmut named ``mutant`` after (``x_f__mutmut_3``, ``xǁCǁf__mutmut_3``) and the
    lines of its original, stripped, that the mutant changes or drops (read from mutants/)."""
    path = MUTANTS / (module.replace(".", "/") + ".py")
    text = path.read_text()
    short = mutant.rpartition(".")[2]
    mangled = short.rsplit("__mutmut_", 1)[0]
    function = mangled.split("ǁ")[-1].removeprefix("x_") if "ǁ" in mangled else mangled[2:]
    funcs = _functions(ast.parse(text))

    def lines(node: ast.FunctionDef) -> list[str]:
        source = (ast.get_source_segment(text, node) or "").replace(node.name, function, 1)
        return [line.strip() for line in source.splitlines()]

    before, after = lines(funcs[f"{mangled}__mutmut_orig"]), lines(funcs[short])
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    changed = {
        line
        for tag, i1, i2, _, _ in matcher.get_opcodes()
        if tag in ("replace", "delete")
        for line in before[i1:i2]
    }
    return function, changed


def is_equivalent(module: str, mutant: str, equivalents: list[Equivalent]) -> bool:
    listed = [e for e in equivalents if e.module == module]
    if not listed:
        return False
    function, changed = changed_lines(module, mutant)
    return any(e.function == function and e.line in changed for e in listed)


def score(module: str, equivalents: list[Equivalent] | None = None) -> tuple[str, Counter[str]]:
    counts: Counter[str] = Counter()
    for name, code in results(module).items():
        if code in NOT_TESTED:
            counts["not run"] += 1
        elif code in KILLED:
            counts["killed"] += 1
        elif code in (5, 33):
            counts["no tests"] += 1
        elif is_equivalent(module, name, equivalents or []):
            counts["equivalent"] += 1
        else:
            counts["survived"] += 1
    tested = counts["killed"] + counts["survived"] + counts["no tests"]
    line = f"{module:45s} {counts['killed']:5d}/{tested:<5d}"
    line += f" {100 * counts['killed'] / tested:6.1f}%" if tested else "   n/a "
    line += f"  equivalent {counts['equivalent']}  not run {counts['not run']}"
    return line, counts


def to_run(module: str, resume: bool) -> list[str]:
    """mutmut's mutant arguments for this module: all of it, or with ``resume`` only what is not
    yet killed. mutmut regenerates a module whose source is not older than its mutants (and
    then resets its results), so such a module runs in full."""
    everything = [f"{module}.*"]
    source = ROOT / (module.replace(".", "/") + ".py")
    mutated = MUTANTS / source.relative_to(ROOT)
    if not resume or not mutated.exists() or source.stat().st_mtime >= mutated.stat().st_mtime:
        return everything
    return [name for name, code in results(module).items() if code not in KILLED]


def run_mutmut(names: list[str], max_children: int) -> int:
    """One ``mutmut run`` over ``names``; its progress goes to mutants/mutmut-run.log. On a
    failure (a test that fails without any mutant, a broken stats run) the log's end is printed
    and its exit code returned: the results on disk are then not this run's."""
    path = MUTANTS / "mutmut-run.log"
    path.parent.mkdir(exist_ok=True)
    with path.open("w") as log:
        code = subprocess.run(
            [sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children), *names],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
        ).returncode
    if code:
        lines = path.read_text(errors="replace").replace("\r", "\n").splitlines()
        print("\n".join(line for line in lines[-40:] if line.strip()), file=sys.stderr)
        print(
            f"mutmut run failed (exit {code}); full output: {path.relative_to(ROOT)}",
            file=sys.stderr,
        )
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", default=list(MODULES))
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--report-only", action="store_true", help="print the last results")
    parser.add_argument("--resume", action="store_true", help="rerun only what is not killed")
    args = parser.parse_args(argv)
    start = time.monotonic()
    names = [name for module in args.modules for name in to_run(module, args.resume)]
    if not args.report_only and names:
        code = run_mutmut(names, args.max_children)
        if code:
            return code
    below = []
    equivalents = load_equivalents()
    for module in args.modules:
        line, counts = score(module, equivalents)
        tested = counts["killed"] + counts["survived"] + counts["no tests"]
        if tested and 100 * counts["killed"] / tested < TARGET:
            below.append(module)
        print(f"{line}  tests {seconds(module):.0f} s", flush=True)
    if not args.report_only:
        print(f"mutmut run: {time.monotonic() - start:.0f} s wall for {len(args.modules)} modules")
    if below:
        print(f"below {TARGET:.0f}%: {', '.join(below)} (`mutmut results` lists the survivors)")
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
