"""HyperPod managed Tiered Storage (the ``tieredstorage`` L2 tier and the ai-toolkit daemon the
operator mounts into every endpoint Pod with an L2), applied by a custom resource."""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator

from infra.config.base import Section
from infra.config.errors import RuleViolation

MIN_PERCENT, MAX_PERCENT = 20, 100


class TieredStorageConfig(Section):
    mode: Literal["Enable", "Disable"] = "Enable"
    """``Enable`` turns on HyperPod Tiered Storage: the ai-toolkit daemon on every node, the L2 of
    endpoints on ``tieredstorage``, whose shared memory the operator mounts into every endpoint
    Pod with an L2 (so curvine and fsx_lustre need it on too). Not L1: L1 is LMCache's CPU cache
    in the Pod's own memory (``kvcache.endpoints[].memory_gib``)."""
    instance_memory_allocation_percentage: int = 20
    """Share of each instance's memory reserved for the daemon, in percent (20-100; the API
    allows 0-100, the service refuses under 20). It serves only endpoints on ``tieredstorage``:
    without one keep 20, the least the service accepts; the node's Pods cannot request it."""

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
