"""Google's CEL implementation (cel-cpp, through the ``cel-expr-python`` package pinned in
requirements-dev.txt) with the variables the API server gives an expression, for the CEL the
app renders: the endpoint namespaces' ValidatingAdmissionPolicy (``k8s/admission.py``) and the
matchConditions of the L2 policy's webhook (``k8s/policy.py``).

The API server runs cel-go, not cel-cpp; both implement the CEL specification (langdef.md), so
the language (``has``, macros, the commutative ``&&``/``||`` over errors, heterogeneous
equality) is the same. What differs is the library: Kubernetes adds its own functions (quantity,
url, ip/cidr, the lists and regex libraries, authorizer, ...), none of which cel-cpp has; an
expression using one fails to compile here (``CelCompileError``), it is never guessed. Every
variable is dynamic (``dyn``), as the API server's type checking leaves unknown schemas, and a
null field is dropped first, as the API server's conversion of a typed object drops it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

# ValidatingAdmissionPolicy expressions (and webhook matchConditions, which see a subset).
VARIABLES = ("object", "oldObject", "request", "params", "namespaceObject", "variables")


class CelCompileError(ValueError):
    """The expression does not compile: a syntax error, or a function cel-cpp lacks."""


class CelEvalError(Exception):
    """The expression fails at runtime (a missing key, no such overload): what the API server
    answers with the failure policy."""


@cache
def _env(names: tuple[str, ...]) -> Any:
    return cel.NewEnv(
        variables={name: cel.Type.DYN for name in names},
        extensions=[
            ext_strings.ExtStrings(),
            ext_bindings.ExtBindings(),
            ext_optional.ExtOptional(),
        ],
    )


@cache
def _compiled(expression: str, names: tuple[str, ...]) -> Any:
    try:
        return _env(names).compile(expression)
    except RuntimeError as exc:
        raise CelCompileError(str(exc)) from None


def _plain(value: Any) -> Any:
    """JSON-like data with null fields dropped (a typed Kubernetes object has none)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def evaluate(expression: str, **variables: Any) -> Any:
    """The value of ``expression`` with ``variables`` (``object=...``, ``request=...``); raises
    ``CelEvalError`` where the API server's evaluation would fail."""
    unknown = set(variables) - set(VARIABLES)
    if unknown:
        raise ValueError(f"not a variable of an admission expression: {sorted(unknown)}")
    return evaluate_in(expression, {name: variables.get(name) for name in VARIABLES})


def evaluate_in(expression: str, variables: dict[str, Any]) -> Any:
    """The value of ``expression`` where exactly ``variables`` are declared."""
    names = tuple(sorted(variables))
    data = {name: _plain(value) for name, value in variables.items()}
    result = _compiled(expression, names).eval(data=data)
    if result.type() == cel.Type.ERROR:
        raise CelEvalError(str(result.value()))
    return result.plain_value()


def validation_outcomes(policy: dict[str, Any], pod: dict[str, Any]) -> list[bool | CelEvalError]:
    """What each validation of the ValidatingAdmissionPolicy ``policy`` evaluates to on
    ``pod`` at CREATE: true, false, or the evaluation error. Its variables are evaluated in
    order, each seeing those before it; one that fails fails the validations that read it."""
    spec = policy["spec"]
    request = {"operation": "CREATE", "namespace": pod["metadata"].get("namespace")}
    variables: dict[str, Any] = {}
    failed: dict[str, CelEvalError] = {}
    for v in spec.get("variables", []):
        try:
            variables[v["name"]] = evaluate(
                v["expression"], object=pod, request=request, variables=variables
            )
        except CelEvalError as err:
            failed[v["name"]] = err
    out: list[bool | CelEvalError] = []
    for v in spec["validations"]:
        reads = [err for name, err in failed.items() if f"variables.{name}" in v["expression"]]
        if reads:
            out.append(reads[0])
            continue
        try:
            value = evaluate(v["expression"], object=pod, request=request, variables=variables)
        except CelEvalError as err:
            out.append(err)
            continue
        if not isinstance(value, bool):
            out.append(CelEvalError(f"validation gave {type(value).__name__}, not bool"))
            continue
        out.append(value)
    return out
