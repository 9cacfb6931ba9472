"""A Kubernetes LabelSelector (``matchLabels``, ``matchExpressions``) as the API server evaluates
it, shared by the doubles that select by labels. A field or operator it does not know is refused
with the caller's exception type, never guessed."""

from __future__ import annotations

from typing import Any

OPERATORS = {
    "In": lambda present, value, values: present and value in values,
    "NotIn": lambda present, value, values: not present or value not in values,
    "Exists": lambda present, value, values: present,
    "DoesNotExist": lambda present, value, values: not present,
}


def selects(
    selector: dict[str, Any] | None, labels: dict[str, str], refuse: type[Exception]
) -> bool:
    """Whether ``labels`` match ``selector`` (an empty or absent one selects everything)."""
    selector = selector or {}
    unknown = set(selector) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise refuse(f"label selector fields {sorted(unknown)}")
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for req in selector.get("matchExpressions") or []:
        key, op = req["key"], req["operator"]
        holds = OPERATORS.get(op)
        if holds is None:
            raise refuse(f"label selector operator {op!r}")
        if not holds(key in labels, labels.get(key), req.get("values") or []):
            return False
    return True
