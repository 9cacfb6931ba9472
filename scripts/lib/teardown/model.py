"""What teardown plans and how long it waits: the items of a plan, the timeouts, the log."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

Log = Callable[[str], None]
DENIED_CODES = ("UnauthorizedOperation", "AccessDenied", "AccessDeniedException")


@dataclass
class Item:
    kind: str
    id: str
    detail: str = ""


@dataclass
class Plan:
    kubernetes: list[Item] = field(default_factory=list)
    stacks: list[Item] = field(default_factory=list)
    leftovers: list[Item] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def items(self) -> list[Item]:
        return self.kubernetes + self.stacks + self.leftovers


@dataclass
class Timeouts:
    endpoint_s: float = 1800
    pvc_s: float = 600
    stack_s: float = 5400
    sweep_s: float = 600
    lambda_eni_s: float = 2700  # Lambda frees its ENIs up to ~40 minutes after the function goes
    interval_s: float = 10
