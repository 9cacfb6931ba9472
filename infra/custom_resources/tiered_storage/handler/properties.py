"""Resource properties -> typed request.

CloudFormation sends every property as a string ("20", "true"), and botocore checks neither enums
nor ranges client-side, so the handler validates here and names the config key to fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import HandlerError

MODES = ("Enable", "Disable")
# Same limits as infra/config/tiered_storage.py (this package cannot import it in Lambda).
MIN_PERCENT, MAX_PERCENT = 20, 100
CONFIG_HINT = "set tiered_storage.{key} in config/<env>.yaml and deploy again"


@dataclass(frozen=True)
class TieredStorage:
    """A TieredStorageConfig; ``percentage`` is None when the API value has none (or Disable)."""

    mode: str
    percentage: int | None = None

    def to_api(self) -> dict[str, Any]:
        # Disable sends Mode only: the percentage is optional in the API shape and meaningless
        # once the daemon is removed.
        if self.mode == "Disable" or self.percentage is None:
            return {"Mode": self.mode}
        return {"Mode": self.mode, "InstanceMemoryAllocationPercentage": self.percentage}

    def satisfied_by(self, current: Mapping[str, Any] | None) -> bool:
        """True when the cluster's current config already is this one (absent counts as Disable)."""
        if not current:
            return self.mode == "Disable"
        if current.get("Mode") != self.mode:
            return False
        if self.mode == "Enable" and self.percentage is not None:
            return current.get("InstanceMemoryAllocationPercentage") == self.percentage
        return True

    def __str__(self) -> str:
        if self.mode == "Enable" and self.percentage is not None:
            return f"Enable ({self.percentage}% of instance memory)"
        return self.mode


@dataclass(frozen=True)
class Request:
    cluster_name: str
    desired: TieredStorage
    restore_on_delete: bool
    instance_groups_hash: str


_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


def parse_properties(props: Mapping[str, Any]) -> Request:
    """Validate CloudFormation's (string) properties; raise HandlerError naming the bad one."""
    name = str(props.get("ClusterName", ""))
    if not _NAME.match(name):
        raise HandlerError(
            f"ClusterName = {name!r}: allowed: a HyperPod cluster name (1-63 letters, digits, "
            "hyphens); fix: check hyperpod.cluster_name / existing_cluster.hyperpod_cluster_name"
        )
    mode = str(props.get("Mode", ""))
    if mode not in MODES:
        raise HandlerError(
            f"Mode = {mode!r}: allowed: {' or '.join(MODES)} (case-sensitive); "
            f"fix: {CONFIG_HINT.format(key='mode')}"
        )
    percentage = parse_percentage(props.get("InstanceMemoryAllocationPercentage"))
    return Request(
        cluster_name=name,
        desired=TieredStorage(mode, percentage if mode == "Enable" else None),
        restore_on_delete=parse_bool(props.get("RestoreOnDelete", "false"), "RestoreOnDelete"),
        instance_groups_hash=str(props.get("InstanceGroupsHash", "")),
    )


def parse_percentage(raw: Any) -> int:
    fix = CONFIG_HINT.format(key="instance_memory_allocation_percentage")
    allowed = f"an integer from {MIN_PERCENT} to {MAX_PERCENT}"
    # bool is an int subclass; "20.0" and " 20" are not what the config renders, so reject them.
    if isinstance(raw, bool) or not (
        isinstance(raw, int) or (isinstance(raw, str) and re.fullmatch(r"[0-9]+", raw))
    ):
        raise HandlerError(
            f"InstanceMemoryAllocationPercentage = {raw!r}: not an integer; allowed: {allowed}; "
            f"fix: {fix}"
        )
    value = int(raw)
    if not MIN_PERCENT <= value <= MAX_PERCENT:
        raise HandlerError(
            f"InstanceMemoryAllocationPercentage = {raw!r}: allowed: {allowed}; fix: {fix}"
        )
    return value


def parse_bool(raw: Any, name: str) -> bool:
    text = str(raw).lower()
    if text not in ("true", "false"):
        raise HandlerError(f"{name} = {raw!r}: allowed: true or false")
    return text == "true"
