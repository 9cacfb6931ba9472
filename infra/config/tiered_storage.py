"""HyperPod managed Tiered Storage (the L1 tier), applied by a custom resource."""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator

from infra.config.base import Section
from infra.config.errors import RuleViolation

MIN_PERCENT, MAX_PERCENT = 20, 100


class TieredStorageConfig(Section):
    mode: Literal["Enable", "Disable"] = "Enable"
    """``Enable`` turns on HyperPod Tiered Storage (L1 CPU offload and the ai-toolkit daemon)."""
    instance_memory_allocation_percentage: int = 20
    """Share of each instance's memory given to Tiered Storage, in percent (20-100)."""

    @field_validator("instance_memory_allocation_percentage", mode="before")
    @classmethod
    def _percent(cls, v: object) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or not MIN_PERCENT <= v <= MAX_PERCENT:
            raise RuleViolation(
                f"an integer from {MIN_PERCENT} to {MAX_PERCENT}",
                f"set tiered_storage.instance_memory_allocation_percentage to {MIN_PERCENT} "
                f"(the default) or more",
            )
        return v
