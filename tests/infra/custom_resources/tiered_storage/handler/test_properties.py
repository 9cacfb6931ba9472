"""The Tiered Storage handler's properties and config values, exactly (pure, no double).

CloudFormation sends every property as a string; these pin what is accepted, the message of
what is not, and the API shape each config becomes.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.custom_resources.tiered_storage.handler.errors import HandlerError
from infra.custom_resources.tiered_storage.handler.properties import (
    Request,
    TieredStorage,
    parse_bool,
    parse_properties,
)

PCT = "InstanceMemoryAllocationPercentage"
GOOD = {
    "ClusterName": "kv-1",
    "Mode": "Enable",
    "InstanceMemoryAllocationPercentage": "20",
    "RestoreOnDelete": "true",
    "InstanceGroupsHash": "abc",
}


def test_properties_become_a_typed_request() -> None:
    assert parse_properties(GOOD) == Request("kv-1", TieredStorage("Enable", 20), True, "abc")
    minimal = {"ClusterName": "kv-1", "Mode": "Disable", "InstanceMemoryAllocationPercentage": 20}
    assert parse_properties(minimal) == Request("kv-1", TieredStorage("Disable"), False, "")


@pytest.mark.parametrize(
    "props",
    [
        {k: v for k, v in GOOD.items() if k != "ClusterName"},
        {**GOOD, "ClusterName": ""},
        {**GOOD, "ClusterName": "-kv"},
        {**GOOD, "ClusterName": "kv_1"},
    ],
)
def test_a_missing_or_bad_cluster_name_is_refused_naming_the_config_key(
    props: dict[str, Any],
) -> None:
    with pytest.raises(HandlerError) as err:
        parse_properties(props)
    name = props.get("ClusterName", "")
    assert str(err.value) == (
        f"ClusterName = {name!r}: allowed: a HyperPod cluster name (1-63 letters, digits, "
        "hyphens); fix: check hyperpod.cluster_name / existing_cluster.hyperpod_cluster_name"
    )


def test_a_missing_mode_is_refused() -> None:
    with pytest.raises(HandlerError) as err:
        parse_properties({k: v for k, v in GOOD.items() if k != "Mode"})
    assert str(err.value) == (
        "Mode = '': allowed: Enable or Disable (case-sensitive); "
        "fix: set tiered_storage.mode in config/<env>.yaml and deploy again"
    )


BOOLS = [
    ("true", True),
    ("TRUE", True),
    ("false", False),
    ("False", False),
    (True, True),
    (False, False),
]


@pytest.mark.parametrize(("raw", "value"), BOOLS)
def test_booleans(raw: Any, value: bool) -> None:
    assert parse_bool(raw, "RestoreOnDelete") is value


def test_a_bad_boolean_names_the_property() -> None:
    with pytest.raises(HandlerError, match=r"^RestoreOnDelete = 'yes': allowed: true or false$"):
        parse_bool("yes", "RestoreOnDelete")


@pytest.mark.parametrize(
    ("config", "api"),
    [
        (TieredStorage("Enable", 20), {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}),
        (TieredStorage("Enable"), {"Mode": "Enable"}),
        (TieredStorage("Disable"), {"Mode": "Disable"}),
        (TieredStorage("Disable", 35), {"Mode": "Disable"}),
    ],
)
def test_disable_sends_mode_only(config: TieredStorage, api: dict[str, Any]) -> None:
    assert config.to_api() == api


@pytest.mark.parametrize(
    ("config", "current", "satisfied"),
    [
        (TieredStorage("Disable"), None, True),
        (TieredStorage("Enable", 20), None, False),
        (TieredStorage("Enable", 20), {"Mode": "Enable", PCT: 20}, True),
        (TieredStorage("Enable", 20), {"Mode": "Enable", PCT: 30}, False),
        (
            TieredStorage("Enable"),
            {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 30},
            True,
        ),
        (TieredStorage("Disable", 20), {"Mode": "Disable"}, True),
        (TieredStorage("Disable"), {"Mode": "Enable"}, False),
    ],
)
def test_satisfied_by(config: TieredStorage, current: Any, satisfied: bool) -> None:
    assert config.satisfied_by(current) is satisfied


@pytest.mark.parametrize(
    ("config", "text"),
    [
        (TieredStorage("Enable", 20), "Enable (20% of instance memory)"),
        (TieredStorage("Enable"), "Enable"),
        (TieredStorage("Disable", 20), "Disable"),
    ],
)
def test_str_says_the_percentage_only_when_enabled(config: TieredStorage, text: str) -> None:
    assert str(config) == text


def test_a_bad_restore_on_delete_property_is_named() -> None:
    with pytest.raises(HandlerError, match=r"^RestoreOnDelete = 'yes': allowed: true or false$"):
        parse_properties({**GOOD, "RestoreOnDelete": "yes"})
