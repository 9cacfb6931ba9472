"""One-line configuration errors.

Every rule that rejects user input raises ``RuleViolation`` with what is allowed and how to fix it;
the loader turns it (and pydantic's own errors) into a ``ConfigError`` whose ``str`` is a single
line: ``<file>: <field> = <value>: allowed: <allowed>; fix: <fix>``.
"""

from __future__ import annotations

from typing import Any


class RuleViolation(ValueError):
    """Raised inside validators. ``field`` overrides the location pydantic would report."""

    def __init__(self, allowed: str, fix: str, *, field: str | None = None, value: Any = None):
        super().__init__(f"allowed: {allowed}; fix: {fix}")
        self.allowed = allowed
        self.fix = fix
        self.field = field
        self.value = value


class ConfigError(Exception):
    """A user mistake in a config file, printed as one line without a traceback."""

    def __init__(self, source: str, field: str, value: Any, allowed: str, fix: str):
        self.source = source
        self.field = field
        self.value = value
        self.allowed = allowed
        self.fix = fix
        super().__init__(str(self))

    def __str__(self) -> str:
        return one_line(
            f"{self.source}: {self.field} = {_show(self.value)}: "
            f"allowed: {self.allowed}; fix: {self.fix}"
        )


# What str.splitlines breaks a line at: a key or value quoted into the message keeps its line.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_ESCAPES = {ord(c): c.encode("unicode_escape").decode() for c in LINE_BREAKS}


def one_line(text: str) -> str:
    """``text`` with each line break written as its escape (a key of the file may hold one)."""
    return text.translate(_ESCAPES)


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if value is None:
        return "(missing)"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
