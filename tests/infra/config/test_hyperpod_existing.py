"""Rules of the existing-VPC and existing-cluster sections, with the exact line a user sees or
the field it names (pure parsing, no double)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from infra.config import ConfigError, parse_config
from tests.support.config import (
    EXISTING_GROUPS,
    QUICK_INSTALL_CLUSTER,
    QUICK_INSTALL_PRIVATE,
    QUICK_INSTALL_S3_ROLE,
    env_raw,
    use_existing_cluster,
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
    raw = env_raw()
    use_existing_cluster(raw, {**QUICK_INSTALL_CLUSTER, **QUICK_INSTALL_PRIVATE, **cluster})
    hyperpod = {k: v for k, v in raw["hyperpod"].items() if k not in ("gpu_group", "system_group")}
    raw["hyperpod"] = {**hyperpod, **copy.deepcopy(groups)}
    return raw


def test_an_existing_cluster_with_its_groups_written_out_parses() -> None:
    assert _parse(_existing()) is None


@pytest.mark.parametrize(
    ("given", "missing", "kind"),
    [
        ({}, "gpu_group", "GPU"),
        ({"gpu_group": EXISTING_GROUPS["gpu_group"]}, "system_group", "CPU (system)"),
    ],
)
def test_each_group_must_be_written_out_for_an_existing_cluster(
    given: dict[str, Any], missing: str, kind: str
) -> None:
    assert _parse(_existing(given)) == (
        f"{SOURCE}: hyperpod.{missing}.name = (missing): allowed: set with existing_cluster: name, "
        f"instance_type and instance_count of the existing cluster's {kind} instance group (the "
        "defaults describe a cluster this app creates); fix: run `aws sagemaker describe-cluster "
        "--cluster-name hyperpod-cluster --query 'InstanceGroups[].[InstanceGroupName,"
        "InstanceType,CurrentCount]'` (or `hpkv preflight`) and write "
        f"hyperpod.{missing}"
    )


@pytest.mark.parametrize(
    ("field", "value", "kind"),
    [
        ("vpc_id", "vpc-0aaaa1111bbbb2222", None),
        ("vpc_id", "vpc-0aaaa111", None),
        ("vpc_id", "vpc-0aaa111", "vpc"),
        ("vpc_id", "subnet-0aaaa1111bbbb2222", "vpc"),
        ("vpc_id", "vpc-0aaaa1111bbbb22223", "vpc"),
        ("kubectl_security_group_id", "sg-0eeee5555ffff6666", None),
        ("kubectl_security_group_id", "sg-0EEEE5555FFFF6666", "sg"),
    ],
)
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


@pytest.mark.parametrize(
    ("drop", "field"),
    [
        ("vpc_id", "existing_cluster.vpc_id"),
        ("kubectl_security_group_id", "existing_cluster.kubectl_security_group_id"),
    ],
)
def test_private_endpoint_needs_vpc_and_security_group(drop: str, field: str) -> None:
    cluster = {**QUICK_INSTALL_CLUSTER, **QUICK_INSTALL_PRIVATE}
    del cluster[drop]
    with pytest.raises(ConfigError) as err:
        parse_config({"account": "111122223333", "existing_cluster": cluster}, "t.yaml", "dev")
    assert err.value.field == field
    assert "\n" not in str(err.value)


def test_a_security_group_without_kubectl_subnets_is_refused() -> None:
    """The VPC describes the cluster (the ALB controller's role is scoped to it) with a public
    endpoint too; the kubectl handler's security group means nothing outside the VPC."""
    cluster = {**QUICK_INSTALL_CLUSTER, "kubectl_security_group_id": "sg-0eeee5555ffff6666"}
    raw = {"account": "111122223333", "existing_cluster": cluster, "hyperpod": EXISTING_GROUPS}
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "t.yaml", "dev")
    assert err.value.field == "existing_cluster.kubectl_security_group_id"
    assert parse_config({**raw, "existing_cluster": QUICK_INSTALL_CLUSTER}, "t.yaml", "dev")


@pytest.mark.parametrize(
    ("operator", "refused"),
    [
        ({}, True),
        ({"alb_enabled": False}, False),
        ({"mode": "skip"}, False),
        ({"enabled": False}, False),
    ],
)
def test_an_existing_cluster_names_its_vpc_when_the_alb_controllers_role_is_made(
    operator: dict[str, object], refused: bool
) -> None:
    """Without the VPC the controller's role could create security groups in every VPC of the
    account: the config says so in one line, with the command that prints the id."""
    cluster = {k: v for k, v in QUICK_INSTALL_CLUSTER.items() if k != "vpc_id"}
    addons = {"inference_operator": operator}
    if operator.get("enabled") is False or operator.get("mode") == "skip":
        addons |= {
            k: {"mode": "skip"} for k in ("cert_manager", "s3_csi", "fsx_csi", "metrics_server")
        }
    raw = {
        "account": "111122223333",
        "existing_cluster": cluster,
        "hyperpod": EXISTING_GROUPS,
        "addons": addons,
    }
    if not refused:
        assert parse_config(raw, "t.yaml", "dev")
        return
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "t.yaml", "dev")
    assert str(err.value) == (
        "t.yaml: existing_cluster.vpc_id = (missing): allowed: the cluster's VPC id while "
        "addons.inference_operator creates the AWS Load Balancer Controller's role "
        "(alb_enabled): the role may create and change security groups in that VPC only; fix: "
        "run `aws eks describe-cluster --name hyperpod-cluster-eks --query "
        "cluster.resourcesVpcConfig.vpcId` and set existing_cluster.vpc_id, or set "
        "addons.inference_operator.alb_enabled to false when the cluster runs its own controller"
    )


def test_adopted_values_are_refused_off_adopt() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(
            {
                "account": "111122223333",
                "existing_cluster": QUICK_INSTALL_CLUSTER,
                "hyperpod": EXISTING_GROUPS,
                "addons": {"s3_csi": {"mode": "skip", "adopted_role_arn": QUICK_INSTALL_S3_ROLE}},
            },
            "t.yaml",
            "dev",
        )
    assert err.value.field == "addons.s3_csi.adopted_role_arn"


def test_adopting_the_operator_needs_its_configuration() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(
            {
                "account": "111122223333",
                "existing_cluster": QUICK_INSTALL_CLUSTER,
                "hyperpod": EXISTING_GROUPS,
                "addons": {"inference_operator": {"mode": "adopt"}},
            },
            "t.yaml",
            "dev",
        )
    assert err.value.field == "addons.inference_operator.adopted_configuration"
    assert "preflight" in err.value.fix


@pytest.mark.parametrize(
    ("hyperpod", "field"),
    [
        (None, "hyperpod.gpu_group.name"),
        ({"gpu_group": EXISTING_GROUPS["gpu_group"]}, "hyperpod.system_group.name"),
    ],
)
def test_existing_mode_needs_the_groups_written_out(
    hyperpod: dict[str, Any] | None, field: str
) -> None:
    raw: dict[str, Any] = {"account": "111122223333", "existing_cluster": QUICK_INSTALL_CLUSTER}
    if hyperpod is not None:
        raw["hyperpod"] = hyperpod
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "t.yaml", "dev")
    assert err.value.field == field
    assert "describe-cluster --cluster-name hyperpod-cluster" in err.value.fix
    assert "\n" not in str(err.value)


def test_the_groups_written_out_are_accepted() -> None:
    cfg = parse_config(
        {
            "account": "111122223333",
            "existing_cluster": QUICK_INSTALL_CLUSTER,
            "hyperpod": EXISTING_GROUPS,
        },
        "t.yaml",
        "dev",
    )
    assert cfg.hyperpod.gpu_group.name == "gpu"
