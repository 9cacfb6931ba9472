"""The CEL evaluator's own checks: CEL's error and equality rules where the policies lean on
them, and the refusal of any CEL it does not model (so a policy cannot pass on it)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.doubles.cel import CelError, Unsupported, evaluate


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
