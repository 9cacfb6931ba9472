"""Rules of the existing-VPC and existing-cluster sections, with the exact line a user sees
(pure parsing, no double)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from infra.config import ConfigError, parse_config
from tests.synth_support import (
    EXISTING_GROUPS,
    QUICK_INSTALL_CLUSTER,
    QUICK_INSTALL_PRIVATE,
    _dev_raw,
)

SOURCE = "config/dev.yaml"


def _parse(raw: dict[str, Any]) -> str | None:
    try:
        parse_config(raw, SOURCE, "dev")
    except ConfigError as err:
        return str(err)
    return None


def _existing(groups: dict[str, Any] = EXISTING_GROUPS, **cluster: Any) -> dict[str, Any]:
    """dev on a Quick Install cluster with a private endpoint; ``groups`` replaces both
    instance groups of dev.yaml."""
    raw = _dev_raw()
    raw["existing_cluster"] = {**QUICK_INSTALL_CLUSTER, **QUICK_INSTALL_PRIVATE, **cluster}
    hyperpod = {k: v for k, v in raw["hyperpod"].items()
                if k not in ("gpu_group", "system_group")}  # fmt: skip
    raw["hyperpod"] = {**hyperpod, **copy.deepcopy(groups)}
    return raw


def test_an_existing_cluster_with_its_groups_written_out_parses() -> None:
    assert _parse(_existing()) is None


@pytest.mark.parametrize(("given", "missing", "kind"), [
    ({}, "gpu_group", "GPU"),
    ({"gpu_group": EXISTING_GROUPS["gpu_group"]}, "system_group", "CPU (system)"),
])  # fmt: skip
def test_each_group_must_be_written_out_for_an_existing_cluster(
    given: dict[str, Any], missing: str, kind: str
) -> None:
    assert _parse(_existing(given)) == (
        f"{SOURCE}: hyperpod.{missing}.name = (missing): allowed: set with existing_cluster: name, "
        f"instance_type and instance_count of the existing cluster's {kind} instance group (the "
        "defaults describe a cluster this app creates); fix: run `aws sagemaker describe-cluster "
        "--cluster-name hyperpod-cluster --query 'InstanceGroups[].[InstanceGroupName,"
        "InstanceType,CurrentCount]'` (or `python -m scripts preflight`) and write "
        f"hyperpod.{missing}"
    )


@pytest.mark.parametrize(("field", "value", "kind"), [
    ("vpc_id", "vpc-0aaaa1111bbbb2222", None),
    ("vpc_id", "vpc-0aaaa111", None),
    ("vpc_id", "vpc-0aaa111", "vpc"),
    ("vpc_id", "subnet-0aaaa1111bbbb2222", "vpc"),
    ("vpc_id", "vpc-0aaaa1111bbbb22223", "vpc"),
    ("kubectl_security_group_id", "sg-0eeee5555ffff6666", None),
    ("kubectl_security_group_id", "sg-0EEEE5555FFFF6666", "sg"),
])  # fmt: skip
def test_aws_ids_have_their_prefix_and_8_to_17_hex_digits(
    field: str, value: str, kind: str | None
) -> None:
    raw = _existing(**{field: value})
    message = _parse(raw)
    if kind is None:
        assert message is None
    else:
        assert message == (
            f"{SOURCE}: existing_cluster.{field} = {value!r}: allowed: an id like "
            f"{kind}-0abc1234def567890; fix: copy the id into existing_cluster.{field}"
        )
