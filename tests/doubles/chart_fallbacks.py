"""Where a Helm chart's templates fall back to a guess, and which values avoid the guess.

A fallback is an action that reads the cluster at render time (``lookup``) or hard-codes an AWS
Region (``default "us-east-1"``, ``$region = "us-east-1"``). Each one sits in branches of
``if``/``else if``/``else``: it runs only when the conditions of the branches before it were
false. Those earlier conditions are the values that avoid it (``if .Values.region`` ... ``else``
... ``lookup``: setting ``region`` skips the lookup).

This reads Go template control flow only (``if``, ``else if``, ``else``, ``range``, ``with``,
``define``, ``block``, ``end``) and evaluates conditions made of ``.Values`` paths, ``and``, ``or``
and ``not``; a condition on a template variable (``$accountId``) is unknown to it, so the site is
reported as not avoided and the test decides what the variable depends on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.DOTALL)
REGION = r'"(?:us|eu|ap|sa|ca|me|af|il|mx)(?:-gov)?-[a-z]+-\d"'
FALLBACK = re.compile(
    rf"\blookup\s|\bdefault\s+{REGION}|\$\w+\s*:?=\s*{REGION}"
)  # a cluster read at render time, or a hard-coded Region
VALUES_PATH = re.compile(r"^\.Values((?:\.[A-Za-z0-9_-]+)+)$")


@dataclass
class Branch:
    condition: str | None
    """None for ``else``."""


@dataclass
class Block:
    keyword: str
    branches: list[Branch] = field(default_factory=list)


@dataclass(frozen=True)
class Fallback:
    file: str
    line: int
    action: str
    skipped_if: tuple[str, ...]
    """Conditions of earlier branches: any one true and the fallback does not run."""
    runs_if: tuple[str, ...]
    """Conditions of the branches it sits in: all must be true for it to run."""


def actions(text: str) -> list[tuple[int, str]]:
    """(line, action body) of every ``{{ ... }}`` that is not a comment."""
    found = []
    for m in ACTION.finditer(text):
        body = m.group(1).strip()
        if body.startswith("/*"):
            continue
        found.append((text.count("\n", 0, m.start()) + 1, body))
    return found


def fallbacks(path: Path, root: Path) -> list[Fallback]:
    stack: list[Block] = []
    found = []
    for line, body in actions(path.read_text()):
        word = body.split(None, 1)[0] if body else ""
        rest = body[len(word) :].strip()
        if word == "if":
            stack.append(Block("if", [Branch(rest)]))
        elif word == "else":
            if not stack or stack[-1].keyword not in ("if", "with", "range"):
                raise ValueError(f"{path}:{line}: else outside if")
            cond = rest[3:].strip() if rest.startswith("if ") else None
            stack[-1].branches.append(Branch(cond))
        elif word in ("range", "with", "define", "block"):
            stack.append(Block(word))
        elif word == "end":
            stack.pop()
        elif FALLBACK.search(body):
            skipped: list[str] = []
            runs: list[str] = []
            for block in stack:
                if block.keyword != "if":
                    continue
                *earlier, current = block.branches
                skipped += [b.condition for b in earlier if b.condition]
                if current.condition:
                    runs.append(current.condition)
            rel = path.relative_to(root).as_posix()
            found.append(Fallback(rel, line, body, tuple(skipped), tuple(runs)))
    if stack:
        raise ValueError(f"{path}: {len(stack)} blocks not closed")
    return found


def truthy(condition: str, values: dict[str, Any]) -> bool | None:
    """Go template truth of ``condition`` under ``values``; None when it reads a variable."""
    tokens = condition.replace("(", " ( ").replace(")", " ) ").split()
    result, rest = _expr(tokens, values)
    if rest:
        raise ValueError(f"cannot read condition {condition!r}")
    return result


def _expr(tokens: list[str], values: dict[str, Any]) -> tuple[bool | None, list[str]]:
    head, rest = tokens[0], tokens[1:]
    if head == "(":
        inner, rest = _call(rest, values)
        return inner, rest[1:]
    if head in ("and", "or", "not"):
        return _call(tokens, values)
    if head.startswith("$"):
        return None, rest
    m = VALUES_PATH.match(head)
    if m is None:
        raise ValueError(f"cannot read {head!r}")
    node: Any = values
    for key in m.group(1).strip(".").split("."):
        node = node.get(key) if isinstance(node, dict) else None
    return bool(node), rest


def _call(tokens: list[str], values: dict[str, Any]) -> tuple[bool | None, list[str]]:
    op, rest = tokens[0], tokens[1:]
    args: list[bool | None] = []
    while rest and rest[0] != ")":
        arg, rest = _expr(rest, values)
        args.append(arg)
    if op == "not":
        (only,) = args
        return (None if only is None else not only), rest
    if op == "and":
        return (False if False in args else None if None in args else True), rest
    if op == "or":
        return (True if True in args else None if None in args else False), rest
    raise ValueError(f"cannot read {op!r}")


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


@dataclass(frozen=True)
class Scope:
    """A chart or subchart: its templates and the values they see."""

    name: str
    templates: Path
    values: dict[str, Any]


def scopes(chart: Path, app_values: dict[str, Any]) -> list[Scope]:
    """The parent chart and each subchart its dependency conditions enable, with the values
    Helm gives each: the subchart's defaults, then the parent's ``<subchart>`` section, and the
    parent's ``global`` merged into the subchart's."""
    parent = merge(_yaml(chart / "values.yaml"), app_values)
    found = [Scope("", chart / "templates", parent)]
    for dep in _yaml(chart / "Chart.yaml").get("dependencies", []):
        condition = dep.get("condition")
        if condition and not truthy(f".Values.{condition}", parent):
            continue
        sub = chart / "charts" / dep["name"]
        own = merge(_yaml(sub / "values.yaml"), parent.get(dep["name"], {}))
        own["global"] = merge(own.get("global", {}), parent.get("global", {}))
        found.append(Scope(dep["name"], sub / "templates", own))
    return found


def _yaml(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text()) if path.is_file() else None
    return data or {}


def unavoided(chart: Path, app_values: dict[str, Any]) -> list[tuple[Fallback, Scope]]:
    """Every fallback that still runs under ``app_values``: no earlier branch is known true."""
    left = []
    for scope in scopes(chart, app_values):
        for template in sorted(scope.templates.glob("*")) if scope.templates.is_dir() else []:
            for fb in fallbacks(template, chart):
                if not any(truthy(c, scope.values) for c in fb.skipped_if):
                    left.append((fb, scope))
    return left
