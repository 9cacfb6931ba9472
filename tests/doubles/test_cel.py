"""The CEL evaluator's own checks: CEL's error and equality rules where the policies lean on
them, held to Google's CEL implementation (cel-cpp, ``tests.support.cel_engine``), and the
refusal of any CEL it does not model (so a policy cannot pass on it)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.doubles.cel import CelError, Unsupported, evaluate
from tests.support import cel_engine


def test_an_absent_field_is_an_error_that_has_guards_against() -> None:
    with pytest.raises(CelError):
        evaluate("a.b == 1", {"a": {}})
    assert evaluate("!has(a.b) || a.b == 1", {"a": {}}) is True


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("a.missing == 1 || true", True),  # the error is absorbed either side
        ("true || a.missing == 1", True),
        ("a.missing == 1 && false", False),
        ("[0, 1].all(x, x == 0)", False),
        ("[].all(x, x.missing)", True),
        ("{'k': 1}.all(k, k == 'k')", None),  # map literals are not modelled
    ],
)
def test_logical_operators_absorb_errors_as_cel_does(expr: str, want: Any) -> None:
    if want is None:
        with pytest.raises(Unsupported):
            evaluate(expr, {"a": {}})
        return
    assert evaluate(expr, {"a": {}}) is want


def test_an_unresolved_error_stays_an_error() -> None:
    with pytest.raises(CelError):
        evaluate("a.missing == 1 || false", {"a": {}})
    with pytest.raises(CelError):
        evaluate("l.exists(e, e.x == 2)", {"l": [{}, {"x": 1}]})


def test_values_of_different_types_are_unequal() -> None:
    assert evaluate("a == '1'", {"a": 1}) is False
    assert evaluate("a in ['1']", {"a": 1}) is False
    with pytest.raises(CelError):
        evaluate("!a", {"a": 0})


@pytest.mark.parametrize(
    "expr",
    [
        "a > 1",
        "a - 1",
        'a == "x"',
        "a.map(x, x)",
        "a.filter(x, x)",
        "int(a)",
        "has(a)",
        "a.?b",
        "a.b.orValue(1)",
    ],
)
def test_unmodelled_cel_is_refused_when_parsed(expr: str) -> None:
    with pytest.raises(Unsupported):
        evaluate(expr, {"a": {"b": 1}})


CROSS_CHECKED = [
    ("a.b == 1", {"a": {}}),
    ("!has(a.b) || a.b == 1", {"a": {}}),
    ("a.missing == 1 || true", {"a": {}}),
    ("true || a.missing == 1", {"a": {}}),
    ("a.missing == 1 && false", {"a": {}}),
    ("a.missing == 1 || false", {"a": {}}),
    ("[0, 1].all(x, x == 0)", {"a": {}}),
    ("[].all(x, x.missing)", {"a": {}}),
    ("l.exists(e, e.x == 2)", {"l": [{}, {"x": 1}]}),
    ("l.exists(e, e.x == 1)", {"l": [{}, {"x": 1}]}),
    ("l.all(e, e.x == 1)", {"l": [{"x": 2}, {}]}),
    ("a == '1'", {"a": 1}),
    ("a in ['1']", {"a": 1}),
    ("!a", {"a": 0}),
    ("m.all(k, k.startsWith('x'))", {"m": {"xa": 1, "xb": 2}}),
    ("'k' in m && m['k'] == 'v'", {"m": {"k": "v"}}),
    ("m['nope'] == 'v'", {"m": {"k": "v"}}),
    ("l + [3] == [1, 2, 3]", {"l": [1, 2]}),
    ("size(l) == 2 && size('abc') == 3", {"l": [1, 2]}),
    ("a.b ? 'y' : 'n'", {"a": {"b": True}}),
    ("l[5] == 1", {"l": [1]}),
]


@pytest.mark.parametrize(("expr", "env"), CROSS_CHECKED)
def test_the_emulator_agrees_with_cel_cpp(expr: str, env: dict[str, Any]) -> None:
    """The same value of the same type, or an error on both sides, as Google's CEL
    implementation (cel-cpp) gives."""
    got: Any
    try:
        got = evaluate(expr, env)
    except CelError:
        got = "error"
    real: Any
    try:
        real = cel_engine.evaluate_in(expr, env)
    except cel_engine.CelEvalError:
        real = "error"
    assert (got, type(got)) == (real, type(real))
