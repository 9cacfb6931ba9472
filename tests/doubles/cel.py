"""A small evaluator of the CEL that ValidatingAdmissionPolicies are written in, for tests.

Only the subset the app's policies use, with CEL's meaning (cel-spec, langdef.md): literals (int,
single-quoted string, bool, null, list), field selection and indexing, ``has(a.b)``, the macros
``all`` and ``exists`` (over a list's elements or a map's keys), ``size()``, ``startsWith``, and the
operators ``!``, ``+`` (ints, strings, lists), ``==``, ``!=``, ``in``, ``&&``, ``||`` and ``?:``.

- Reading an absent field or key is an error (CEL's "no such key"), which ``has()`` avoids.
- ``&&`` and ``||`` are commutative over errors: ``false && <error>`` is false, ``true || <error>``
  is true, an error otherwise; ``all`` is false if some element gives false, an error if none does
  but some errs (``exists`` the same with true).
- Values of different types are unequal (heterogeneous equality); ``!`` and the logical operators
  take bools only.

Anything else (another function, macro or operator, double quotes, arithmetic but ``+``) raises
``Unsupported`` when the expression is parsed, so a policy cannot pass on a feature this does not
model. ``evaluate_policy`` applies a ValidatingAdmissionPolicy and its binding to one Pod the way
the API server does (kubernetes.io "Validating Admission Policy": matchConstraints, the binding's
namespaceSelector, variables, validations, failurePolicy).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.doubles.label_selector import selects

Value = Any
Env = dict[str, Value]


class Unsupported(ValueError):
    """The expression uses CEL this evaluator does not model."""


class CelError(Exception):
    """A CEL evaluation error (an absent field, a type with no such overload)."""


_TOKEN = re.compile(
    r"\s*(?:(?P<int>\d+)|(?P<str>'(?:[^'\\]|\\.)*')|(?P<id>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>&&|\|\||==|!=|[!?:.,()\[\]+]))"
)
_SUPPORTED_METHODS = {"all", "exists", "startsWith"}
_SUPPORTED_FUNCTIONS = {"has", "size"}


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise Unsupported(f"CEL token at {text[pos : pos + 20]!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


Node = Callable[[Env], Value]


@dataclass
class _Parser:
    toks: list[tuple[str, str]]
    i: int = 0
    # The last field selection member() read, as (its object, the field): what has() tests.
    last_select: tuple[Node, str] | None = None

    def peek(self) -> str:
        return self.toks[self.i][1] if self.i < len(self.toks) else ""

    def take(self, want: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.toks):
            raise Unsupported("expression ends early")
        tok = self.toks[self.i]
        if want is not None and tok[1] != want:
            raise Unsupported(f"expected {want!r}, found {tok[1]!r}")
        self.i += 1
        return tok

    def expr(self) -> Node:
        cond = self.logical("||")
        if self.peek() != "?":
            return cond
        self.take("?")
        yes = self.expr()
        self.take(":")
        no = self.expr()
        return lambda env: yes(env) if _bool(cond(env)) else no(env)

    def logical(self, op: str) -> Node:
        sub = (lambda: self.logical("&&")) if op == "||" else self.relation
        left = sub()
        while self.peek() == op:
            self.take(op)
            left = _logic(op, left, sub())
        return left

    def relation(self) -> Node:
        left = self.sum()
        op = self.peek()
        if op not in ("==", "!=", "in"):
            return left
        self.take()
        right = self.sum()
        if op == "in":
            return lambda env: _in(left(env), right(env))
        if op == "==":
            return lambda env: _eq(left(env), right(env))
        return lambda env: not _eq(left(env), right(env))

    def sum(self) -> Node:
        left = self.unary()
        while self.peek() == "+":
            self.take("+")
            left = _plus(left, self.unary())
        return left

    def unary(self) -> Node:
        if self.peek() == "!":
            self.take("!")
            inner = self.unary()
            return lambda env: not _bool(inner(env))
        return self.member()

    def member(self) -> Node:
        node = self.primary()
        self.last_select = None
        while self.peek() in (".", "["):
            if self.take()[1] == "[":
                key = self.expr()
                self.take("]")
                node, self.last_select = _index(node, key), None
                continue
            kind, name = self.take()
            if kind != "id":
                raise Unsupported(f"field name expected after '.', found {name!r}")
            if self.peek() == "(":
                node, self.last_select = self.method(node, name), None
            else:
                node, self.last_select = _select(node, name), (node, name)
        return node

    def method(self, target: Node, name: str) -> Node:
        if name not in _SUPPORTED_METHODS:
            raise Unsupported(f"CEL method {name}()")
        self.take("(")
        if name == "startsWith":
            arg = self.expr()
            self.take(")")
            return lambda env: _starts_with(target(env), arg(env))
        var = self.take()
        if var[0] != "id":
            raise Unsupported(f"{name}() needs a variable name first")
        self.take(",")
        body = self.expr()
        self.take(")")
        return _quantifier(name, target, var[1], body)

    def primary(self) -> Node:
        kind, text = self.take()
        if kind == "int":
            return lambda env: int(text)
        if kind == "str":
            value = text[1:-1].replace("\\'", "'")
            return lambda env: value
        if text == "(":
            inner = self.expr()
            self.take(")")
            return inner
        if text == "[":
            items = self._list_items()
            return lambda env: [i(env) for i in items]
        if kind != "id":
            raise Unsupported(f"CEL syntax {text!r}")
        if text in ("true", "false", "null"):
            value = {"true": True, "false": False, "null": None}[text]
            return lambda env: value
        if self.peek() == "(":
            return self.function(text)
        return lambda env: _variable(env, text)

    def _list_items(self) -> list[Node]:
        items: list[Node] = []
        while self.peek() != "]":
            items.append(self.expr())
            if self.peek() == ",":
                self.take(",")
        self.take("]")
        return items

    def function(self, name: str) -> Node:
        if name not in _SUPPORTED_FUNCTIONS:
            raise Unsupported(f"CEL function {name}()")
        self.take("(")
        if name == "size":
            arg = self.expr()
            self.take(")")
            return lambda env: _size(arg(env))
        self.member()
        selected = self.last_select
        self.take(")")
        if selected is None:  # has() takes a field selection only
            raise Unsupported("has() needs a field selection, e.g. has(a.b)")
        parent, field = selected
        return lambda env: _has(parent(env), field)


def parse(text: str) -> Node:
    """The expression as a function of its environment; ``Unsupported`` for unmodelled CEL."""
    parser = _Parser(_tokens(text))
    node = parser.expr()
    if parser.i != len(parser.toks):
        raise Unsupported(f"unexpected {parser.peek()!r}")
    return node


def evaluate(text: str, env: Env) -> Value:
    return parse(text)(env)


def _variable(env: Env, name: str) -> Value:
    if name not in env:
        raise CelError(f"undeclared reference to {name!r}")
    return env[name]


def _bool(v: Value) -> bool:
    if not isinstance(v, bool):
        raise CelError(f"no such overload: expected bool, got {type(v).__name__}")
    return v


def _logic(op: str, left: Node, right: Node) -> Node:
    decisive = op == "||"  # the value that settles the result on either side

    def run(env: Env) -> bool:
        results: list[bool | CelError] = []
        for side in (left, right):
            try:
                value = _bool(side(env))
            except CelError as err:
                results.append(err)
                continue
            if value is decisive:
                return decisive
            results.append(value)
        errors = [r for r in results if isinstance(r, CelError)]
        if errors:
            raise errors[0]
        return not decisive

    return run


def _quantifier(name: str, target: Node, var: str, body: Node) -> Node:
    decisive = name == "exists"

    def run(env: Env) -> bool:
        items = target(env)
        if not isinstance(items, list | dict):
            raise CelError(f"{name}() over {type(items).__name__}")
        error: CelError | None = None
        for item in items:  # a map's keys
            try:
                if _bool(body({**env, var: item})) is decisive:
                    return decisive
            except CelError as err:
                error = error or err
        if error is not None:
            raise error
        return not decisive

    return run


def _select(node: Node, name: str) -> Node:
    def run(env: Env) -> Value:
        obj = node(env)
        if isinstance(obj, _Lazy):
            return obj.get(name)
        if not isinstance(obj, dict):
            raise CelError(f"no such field {name!r} on {type(obj).__name__}")
        if name not in obj:
            raise CelError(f"no such key: {name}")
        return obj[name]

    return run


def _index(node: Node, key: Node) -> Node:
    def run(env: Env) -> Value:
        obj, k = node(env), key(env)
        if isinstance(obj, dict) and isinstance(k, str):
            if k not in obj:
                raise CelError(f"no such key: {k}")
            return obj[k]
        if isinstance(obj, list) and isinstance(k, int) and not isinstance(k, bool):
            if not 0 <= k < len(obj):
                raise CelError(f"index out of range: {k}")
            return obj[k]
        raise CelError(f"no such overload: {type(obj).__name__}[{type(k).__name__}]")

    return run


def _has(obj: Value, field: str) -> bool:
    if isinstance(obj, _Lazy):
        return field in obj.names
    if not isinstance(obj, dict):
        raise CelError(f"has() on {type(obj).__name__}")
    return field in obj


def _same_type(a: Value, b: Value) -> bool:
    return type(a) is type(b) or (isinstance(a, dict) and isinstance(b, dict))


def _eq(a: Value, b: Value) -> bool:
    return _same_type(a, b) and a == b


def _in(item: Value, container: Value) -> bool:
    if isinstance(container, list):
        return any(_eq(item, c) for c in container)
    if isinstance(container, dict):
        return item in container
    raise CelError(f"no such overload: in {type(container).__name__}")


def _plus(left: Node, right: Node) -> Node:
    def run(env: Env) -> Value:
        a, b = left(env), right(env)
        if _same_type(a, b) and isinstance(a, int | str | list) and not isinstance(a, bool):
            return a + b
        raise CelError(f"no such overload: {type(a).__name__} + {type(b).__name__}")

    return run


def _size(v: Value) -> int:
    if isinstance(v, str | list | dict):
        return len(v)
    raise CelError(f"no such overload: size({type(v).__name__})")


def _starts_with(s: Value, prefix: Value) -> bool:
    if isinstance(s, str) and isinstance(prefix, str):
        return s.startswith(prefix)
    raise CelError("no such overload: startsWith")


class _Lazy:
    """``variables``: each evaluated on first use, as the API server does."""

    def __init__(self, exprs: dict[str, str], env: Env):
        self.names, self._exprs, self._env = set(exprs), exprs, env
        self._done: dict[str, Value] = {}
        self._nodes = {name: parse(text) for name, text in exprs.items()}

    def get(self, name: str) -> Value:
        if name not in self._exprs:
            raise CelError(f"no such variable: {name}")
        if name not in self._done:
            self._done[name] = self._nodes[name](self._env)
        return self._done[name]


# --- the policy as the API server applies it -------------------------------------------------


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    return selects(selector, labels, Unsupported)


def _rule_matches(resources: dict[str, Any] | None, resource: str, operation: str) -> bool:
    if resources is None:
        return True
    if set(resources) - {"resourceRules", "namespaceSelector"}:
        raise Unsupported(f"matchResources fields {sorted(resources)}")
    for rule in resources.get("resourceRules", []):
        if (
            "" in rule["apiGroups"]
            and "v1" in rule["apiVersions"]
            and operation in rule["operations"]
            and resource in rule["resources"]
        ):
            return True
    return "resourceRules" not in resources


def evaluate_policy(
    policy: dict[str, Any],
    binding: dict[str, Any],
    pod: dict[str, Any],
    namespace_labels: dict[str, str],
    operation: str = "CREATE",
    resource: str = "pods",
) -> list[str]:
    """The messages the API server would refuse ``pod`` with; [] when admitted (or when the
    policy does not apply to it). An evaluation error refuses under ``failurePolicy: Fail``."""
    spec, bspec = policy["spec"], binding["spec"]
    if bspec["policyName"] != policy["metadata"]["name"] or "Deny" not in bspec.get(
        "validationActions", []
    ):
        return []
    if set(spec) - {"failurePolicy", "matchConstraints", "variables", "validations"}:
        raise Unsupported(f"policy fields {sorted(spec)}")
    constraints, match = spec["matchConstraints"], bspec.get("matchResources")
    if not _rule_matches(constraints, resource, operation):
        return []
    for m in (constraints, match or {}):
        if "namespaceSelector" in m and not _selects(m["namespaceSelector"], namespace_labels):
            return []
    out = []
    for v, outcome in zip(spec["validations"], validation_outcomes(policy, pod), strict=True):
        if isinstance(outcome, CelError):
            if spec.get("failurePolicy", "Fail") == "Fail":
                out.append(f"{v['message']} (evaluation error: {outcome})")
            continue
        if not outcome:
            out.append(v["message"])
    return out


def validation_outcomes(policy: dict[str, Any], pod: dict[str, Any]) -> list[bool | CelError]:
    """What each of the policy's validations evaluates to on ``pod`` (its variables evaluated
    when first read): true, false, or the evaluation error."""
    spec = policy["spec"]
    env: Env = {"object": pod}
    env["variables"] = _Lazy({v["name"]: v["expression"] for v in spec.get("variables", [])}, env)
    out: list[bool | CelError] = []
    for v in spec["validations"]:
        node = parse(v["expression"])
        try:
            out.append(_bool(node(env)))
        except CelError as err:
            out.append(err)
    return out
