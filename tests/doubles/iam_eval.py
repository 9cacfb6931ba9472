"""IAM's evaluation of identity-policy Allow statements, as far as this project's policies use it.

From the IAM User Guide ("Policy evaluation logic", "IAM JSON policy elements: Condition
operators"): a request is allowed when some Allow statement matches its action (``*`` and ``?``
wildcards, case-insensitive), its resource (wildcards, case-sensitive) and every condition of
that statement: all operators must hold, within an operator every key, and a key holds when the
request's value matches any of the listed values. A condition key the request does not carry
fails every operator except ``Null`` ("true": the key is absent; "false": present).

Supported operators: StringEquals, StringLike, ArnEquals, ArnLike, Null. Anything else (Deny,
NotAction, NotResource, set operators, ...IfExists, policy variables) raises ``Unsupported``, so a
policy cannot pass on a feature this model does not have.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

OPERATORS = {"StringEquals", "StringLike", "ArnEquals", "ArnLike", "Null"}


class Unsupported(ValueError):
    """The policy uses an IAM feature this evaluator does not model."""


@dataclass(frozen=True)
class Request:
    action: str
    resource: str
    context: Mapping[str, str] = field(default_factory=dict)


def _listed(value: Any) -> list[str]:
    return value if isinstance(value, list) else [value]


def _glob(pattern: str, text: str, *, case: bool) -> bool:
    if "${" in pattern:
        raise Unsupported(f"policy variable in {pattern!r}")
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, text, 0 if case else re.IGNORECASE) is not None


def _operator_holds(operator: str, block: Mapping[str, Any], context: Mapping[str, str]) -> bool:
    if operator not in OPERATORS:
        raise Unsupported(f"condition operator {operator}")
    for key, values in block.items():
        wanted = [str(v) for v in _listed(values)]
        got = context.get(key)
        if operator == "Null":
            if (got is None) != (wanted == ["true"]):
                return False
            continue
        if got is None:
            return False
        if operator in ("StringEquals", "ArnEquals"):
            ok = got in wanted
        else:
            ok = any(_glob(w, got, case=True) for w in wanted)
        if not ok:
            return False
    return True


def statement_allows(statement: Mapping[str, Any], request: Request) -> bool:
    if set(statement) - {"Sid", "Effect", "Action", "Resource", "Condition"}:
        raise Unsupported(f"statement elements {sorted(statement)}")
    if statement["Effect"] != "Allow":
        raise Unsupported(f"Effect {statement['Effect']}")
    if not any(_glob(a, request.action, case=False) for a in _listed(statement["Action"])):
        return False
    if not any(_glob(r, request.resource, case=True) for r in _listed(statement["Resource"])):
        return False
    return all(
        _operator_holds(op, block, request.context)
        for op, block in statement.get("Condition", {}).items()
    )


def allows(statements: list[Mapping[str, Any]], request: Request) -> bool:
    """Would these Allow statements (an identity policy, no Deny) let ``request`` through?"""
    return any(statement_allows(s, request) for s in statements)


def covers(pattern: str, resource: str) -> bool:
    """Does the policy resource ``pattern`` match every ARN the resource ``resource`` does (a
    resource pattern is covered when the wider pattern matches it read literally)?"""
    return fnmatch.fnmatchcase(resource, pattern.replace("[", "[[]"))


def resolve(value: Any, values: Mapping[str, str]) -> Any:
    """A template value with ``Ref``/``Fn::ImportValue``/``Fn::Join`` replaced by the strings
    ``values`` gives for the referenced names (pseudo parameters, export names), and
    ``Fn::GetAtt`` by ``<LogicalId.Attribute>``."""
    if isinstance(value, list):
        return [resolve(v, values) for v in value]
    if isinstance(value, dict):
        if len(value) == 1:
            ((fn, arg),) = value.items()
            if fn in ("Ref", "Fn::ImportValue"):
                if arg not in values:
                    raise Unsupported(f"{fn} {arg} has no value given")
                return values[arg]
            if fn == "Fn::Join":
                return arg[0].join(resolve(p, values) for p in arg[1])
            if fn == "Fn::GetAtt":  # another resource's attribute: a name of its own
                return f"<{arg[0]}.{arg[1]}>"
            if fn.startswith("Fn::") or fn == "Condition":
                raise Unsupported(f"intrinsic {fn}")
        return {k: resolve(v, values) for k, v in value.items()}
    return value


def import_names(value: Any) -> set[str]:
    """Every export name a template value imports (``Fn::ImportValue``)."""
    if isinstance(value, dict):
        if set(value) == {"Fn::ImportValue"}:
            return {value["Fn::ImportValue"]}
        return {n for v in value.values() for n in import_names(v)}
    if isinstance(value, list):
        return {n for v in value for n in import_names(v)}
    return set()


def policy_statements(
    template: Mapping[str, Any], sid: str, values: Mapping[str, str], imports: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The statements of the one ``AWS::IAM::Policy`` holding a statement ``sid``, resolved with
    ``values`` (pseudo parameters) and, for each import, the value of the first ``imports`` key
    its export name contains (an import matching none raises)."""
    (policy,) = [
        r["Properties"]["PolicyDocument"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy"
        and any(s.get("Sid") == sid for s in r["Properties"]["PolicyDocument"]["Statement"])
    ]
    named = dict(values)
    for name in import_names(policy):
        matched = [v for part, v in imports.items() if part in name]
        if not matched:
            raise Unsupported(f"import {name} has no value given")
        named[name] = matched[0]
    statements: list[dict[str, Any]] = resolve(policy, named)["Statement"]
    return statements
