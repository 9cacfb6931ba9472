"""The physical resource id: which cluster, and what Delete must put back.

Why the id and not somewhere else: it is the only value CloudFormation keeps for the resource and
hands back on every Update and Delete, it needs no extra AWS resource (table, SSM parameter) or
permission, and it survives failed updates and rollbacks. The record is written once, at Create,
and Update returns the id unchanged (a new id would make CloudFormation Delete the old one, i.e.
restore the pre-app config). Only a changed ClusterName yields a new id: then CloudFormation's
Delete of the old id restores the old cluster, which is what replacing the target means.

Format (cluster names are ``[a-zA-Z0-9-]``, so ``:`` cannot occur inside them)::

    tiered-storage:<cluster>:keep                  Delete does nothing (the app created the cluster)
    tiered-storage:<cluster>:restore:unset         Delete sets Mode=Disable (it had no config)
    tiered-storage:<cluster>:restore:Disable
    tiered-storage:<cluster>:restore:Enable        (a config without a percentage)
    tiered-storage:<cluster>:restore:Enable@35
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .properties import TieredStorage

PREFIX = "tiered-storage"
# The Provider framework answers a failed Create with this id and skips the Delete that follows;
# decode() treats it (and anything else not ours) as "nothing applied" as a second line of defence.
CREATE_FAILED_MARKER = "AWSCDK::CustomResourceProviderFramework::CREATE_FAILED"
_ID = re.compile(
    rf"^{PREFIX}:(?P<cluster>[a-zA-Z0-9-]{{1,63}}):"
    r"(?:(?P<keep>keep)|restore:(?P<before>unset|Disable|Enable(?:@(?P<pct>[0-9]{1,3}))?))$"
)


@dataclass(frozen=True)
class Record:
    cluster_name: str
    restore_to: TieredStorage | None
    """What Delete applies; None: leave the cluster alone."""


def encode(cluster_name: str, before: Mapping[str, Any] | None, *, restore: bool) -> str:
    """The id for Create; ``before`` is the TieredStorageConfig DescribeCluster returned."""
    if not restore:
        return f"{PREFIX}:{cluster_name}:keep"
    if not before:
        return f"{PREFIX}:{cluster_name}:restore:unset"
    mode = before.get("Mode")
    pct = before.get("InstanceMemoryAllocationPercentage")
    if mode == "Enable" and isinstance(pct, int):
        return f"{PREFIX}:{cluster_name}:restore:Enable@{pct}"
    return f"{PREFIX}:{cluster_name}:restore:{'Enable' if mode == 'Enable' else 'Disable'}"


def decode(physical_id: str) -> Record | None:
    """The record in an id this handler wrote; None for any other id (nothing was applied)."""
    m = _ID.match(physical_id)
    if not m:
        return None
    if m["keep"]:
        return Record(m["cluster"], None)
    before = m["before"]
    if before == "unset":
        # The API cannot "unset" the field; Disable is what an absent config behaves like.
        return Record(m["cluster"], TieredStorage("Disable"))
    if before == "Disable":
        return Record(m["cluster"], TieredStorage("Disable"))
    return Record(m["cluster"], TieredStorage("Enable", int(m["pct"]) if m["pct"] else None))
