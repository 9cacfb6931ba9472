"""The physical id format of the Tiered Storage handler, exactly (pure functions, no double).

Each before-state has one id, and decode gives back what Delete must restore; any id the
handler did not write (the Provider framework's failed-Create marker, another resource's id)
means nothing was applied.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.custom_resources.tiered_storage.handler.physical_id import (
    CREATE_FAILED_MARKER,
    Record,
    decode,
    encode,
)
from infra.custom_resources.tiered_storage.handler.properties import TieredStorage

CASES: list[tuple[Any, bool, str, TieredStorage | None]] = [
    (
        {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 35},
        False,
        "tiered-storage:c-1:keep",
        None,
    ),
    (None, True, "tiered-storage:c-1:restore:unset", TieredStorage("Disable")),
    ({}, True, "tiered-storage:c-1:restore:unset", TieredStorage("Disable")),
    ({"Mode": "Disable"}, True, "tiered-storage:c-1:restore:Disable", TieredStorage("Disable")),
    ({"Mode": "Enable"}, True, "tiered-storage:c-1:restore:Enable", TieredStorage("Enable")),
    (
        {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 35},
        True,
        "tiered-storage:c-1:restore:Enable@35",
        TieredStorage("Enable", 35),
    ),
    (
        {"Mode": "Enable", "InstanceMemoryAllocationPercentage": "35"},
        True,
        "tiered-storage:c-1:restore:Enable",
        TieredStorage("Enable"),
    ),
    (
        {"Mode": "Disable", "InstanceMemoryAllocationPercentage": 35},
        True,
        "tiered-storage:c-1:restore:Disable",
        TieredStorage("Disable"),
    ),
    (
        {"InstanceMemoryAllocationPercentage": 35},
        True,
        "tiered-storage:c-1:restore:Disable",
        TieredStorage("Disable"),
    ),
]


@pytest.mark.parametrize(("before", "restore", "physical_id", "restore_to"), CASES)
def test_each_before_state_has_one_id_and_decodes_to_what_delete_restores(
    before: Any, restore: bool, physical_id: str, restore_to: TieredStorage | None
) -> None:
    assert encode("c-1", before, restore=restore) == physical_id
    assert decode(physical_id) == Record("c-1", restore_to)


@pytest.mark.parametrize(
    "foreign",
    [
        "",
        CREATE_FAILED_MARKER,
        "tiered-storage:c-1",
        "tiered-storage:c_1:keep",
        "tiered-storage:c-1:restore:Enable@1234",
        "tiered-storage:c-1:restore:enable",
        "x-tiered-storage:c-1:keep",
        "tiered-storage:c-1:keep:extra",
        "other:c-1:keep",
        "tiered-storage:" + "c" * 64 + ":keep",
    ],
)
def test_an_id_the_handler_did_not_write_means_nothing_was_applied(foreign: str) -> None:
    assert decode(foreign) is None


def test_the_longest_cluster_name_and_percentage_round_trip() -> None:
    name = "c" * 63
    physical_id = encode(
        name, {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 100}, restore=True
    )
    assert decode(physical_id) == Record(name, TieredStorage("Enable", 100))
