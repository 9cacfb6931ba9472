"""The rules that encode what AWS accepts, one by one: the YAML reader that refuses a key given
twice, the VPC's CIDR association table, the AZ-id prefix of every region, the tag rules and
HyperPod's instance types as the bundled botocore's models state them, and the ARNs of an
existing cluster. The entry point's one line for each is in tests/test_app_config_errors.py.

No double: botocore's data files are read from the installed package, as the app reads them.
"""

from __future__ import annotations

import copy
from ipaddress import IPv4Network
from typing import Any

import pytest

from infra.config.errors import RuleViolation
from infra.config.hyperpod import cluster_instance_type
from infra.config.network import az_id_prefix, region_zones
from infra.config.rules_network import _example, association_refusal
from infra.config.tags import check_tags
from infra.config.yaml_source import DuplicateKey, scalar_as_written, unique_key_load
from infra.facts.aws_models import character_class, cluster_instance_types, regions, tag_rules
from infra.facts.instances import GPU_INSTANCES
from tests.support.config import refusal

# --- YAML ---------------------------------------------------------------------------------------


def test_a_key_given_twice_in_a_list_item_is_refused_with_both_lines() -> None:
    text = "kvcache:\n  endpoints:\n    - name: a\n      cpu: 7\n      cpu: 8\n"
    with pytest.raises(DuplicateKey) as dup:
        unique_key_load(text)
    assert (dup.value.key, dup.value.first_line, dup.value.line) == ("cpu", 4, 5)


def test_the_same_key_in_two_mappings_and_a_merge_override_are_accepted() -> None:
    text = "a: {x: 1}\nb: {x: 2}\nbase: &b {y: 1}\nc:\n  <<: *b\n  y: 2\n"
    assert unique_key_load(text)["c"] == {"y": 2}


def test_a_scalar_is_quoted_as_the_file_writes_it() -> None:
    text = "eks:\n  kubernetes_version: 1.30\nlist:\n  - v: 012\n"
    assert scalar_as_written(text, ("eks", "kubernetes_version")) == "1.30"
    assert scalar_as_written(text, ("list", 0, "v")) == "012"
    assert scalar_as_written(text, ("eks", "missing")) is None


# --- VPC CIDR association (the VPC user guide's restrictions table) -----------------------------

NET = IPv4Network
# (primary, secondary, AWS refuses it)
ASSOCIATIONS = [
    ("10.192.0.0/16", "10.1.0.0/16", False),
    ("10.192.0.0/16", "100.64.0.0/16", False),
    ("10.192.0.0/16", "52.10.0.0/16", False),
    ("10.192.0.0/16", "192.168.0.0/16", True),
    ("10.192.0.0/16", "172.16.0.0/16", True),
    ("10.192.0.0/16", "198.19.0.0/16", True),
    ("10.1.0.0/16", "10.0.0.0/16", True),  # a VPC block in 10.0.0.0/15
    ("10.2.0.0/16", "10.0.0.0/16", False),
    ("172.20.0.0/16", "172.17.0.0/16", False),
    ("172.20.0.0/16", "172.31.0.0/16", True),
    ("172.20.0.0/16", "10.1.0.0/16", True),
    ("192.168.0.0/20", "192.168.64.0/20", False),
    ("192.168.0.0/20", "10.1.0.0/16", True),
    ("52.10.0.0/16", "10.1.0.0/16", True),  # publicly routable primary
    ("52.10.0.0/16", "100.64.0.0/16", False),
    ("10.192.0.0/16", "169.254.0.0/16", True),
]


@pytest.mark.parametrize(("primary", "secondary", "refused"), ASSOCIATIONS)
def test_a_secondary_cidr_is_refused_as_the_vpc_guide_says(
    primary: str, secondary: str, refused: bool
) -> None:
    assert (association_refusal(NET(primary), NET(secondary)) is not None) is refused


@pytest.mark.parametrize("primary", sorted({a[0] for a in ASSOCIATIONS}))
def test_the_suggested_cidr_is_one_aws_accepts(primary: str) -> None:
    example = _example(NET(primary), 16)
    assert example is not None
    assert association_refusal(NET(primary), example) is None
    assert not example.overlaps(NET(primary))


# --- AZ ids -----------------------------------------------------------------------------------


def test_every_region_of_the_commercial_china_and_govcloud_partitions_has_an_az_id_prefix() -> None:
    """A region added to botocore whose name uses a word the table lacks would skip the rule."""
    checked = {r for r, p in regions().items() if p in ("aws", "aws-cn", "aws-us-gov")}
    assert "us-west-2" in checked and "cn-north-1" in checked and "us-gov-west-1" in checked
    assert {r for r in checked if az_id_prefix(r) is None} == set()


AZ_IDS = [
    ("usw2-az4", False),
    ("usw2-az", True),
    ("usw2-az1x", True),
    ("use1-az1", True),
    ("usw2-az9", True),
]


@pytest.mark.parametrize(("az_id", "refused"), AZ_IDS)
def test_an_az_id_is_the_regions_prefix_and_a_number(az_id: str, refused: bool) -> None:
    line = refusal({"network.hyperpod_subnet.az_id": az_id})
    assert (line is not None) is refused, line


AZ_NAMES = [
    (["us-west-2a", "us-west-2d"], False),
    (["us-west-2a", "us-west-2z"], True),
    (["us-west-2e", "us-west-2a"], True),
]


@pytest.mark.parametrize(("names", "refused"), AZ_NAMES)
def test_az_names_are_zones_the_region_has(names: list[str], refused: bool) -> None:
    """us-west-2 has four zones, a to d: a letter past them synthesizes a subnet EC2 refuses."""
    line = refusal({"network.availability_zones": names})
    assert (line is not None) is refused, line
    if refused:
        assert line is not None and "network.availability_zones" in line


def test_the_published_zones_are_of_their_region() -> None:
    """Every name is its Region plus a letter and every id carries the Region's prefix: a table
    mixed up between Regions would refuse good configs."""
    for region in ("us-west-2", "us-east-1", "eu-west-1", "ap-northeast-1", "us-gov-west-1"):
        published = region_zones(region)
        assert published is not None, region
        names, ids = published
        assert names and all(n[:-1] == region and n[-1].isalpha() for n in names), region
        prefix = az_id_prefix(region)
        assert ids and all(i.startswith(f"{prefix}-az") for i in ids), region


def test_a_region_the_table_does_not_know_is_left_to_preflight() -> None:
    assert region_zones("xx-moon-1") is None


ISO = {"region": "us-iso-east-1", "network.hyperpod_subnet.az_id": "usie1-az1"}


@pytest.mark.parametrize(
    ("names", "refused"),
    [(["us-iso-east-1a", "us-iso-east-1b"], False), (["us-iso-east-1a", "us-iso-east-1x"], True)],
)
def test_a_region_whose_zone_ids_are_not_published_checks_its_names_only(
    names: list[str], refused: bool
) -> None:
    """The table records the names of us-iso-east-1 but none of its zone ids: the id is left to
    preflight (the account's DescribeAvailabilityZones), the names are still checked."""
    assert region_zones("us-iso-east-1") == (
        ["us-iso-east-1a", "us-iso-east-1b", "us-iso-east-1c"],
        [],
    )
    line = refusal({**ISO, "network.availability_zones": names})
    assert (line is not None) is refused, line
    if refused:
        assert line is not None and "network.availability_zones" in line


# --- tags ---------------------------------------------------------------------------------------


def test_the_tag_pattern_is_read_from_the_model_as_a_character_class() -> None:
    chars = character_class(r"^([\p{L}\p{Z}\p{N}_.:/=+\-@]*)$")
    assert chars.admits("team ml/infra=é+1@x") and not chars.admits("a;b")
    with pytest.raises(ValueError):
        character_class(r"^[a-z]{1,3}$")
    rules = tag_rules()
    assert (rules.key_max, rules.value_min, rules.value_max) == (128, 1, 256)


@pytest.mark.parametrize(
    "tags", [{"Team": "ml"}, {"cost-center": "a b:c/d=e+f-g@h_i.j"}, {"k" * 128: "v" * 256}]
)
def test_tags_aws_accepts_pass(tags: dict[str, str]) -> None:
    check_tags(tags)


@pytest.mark.parametrize(
    "tags",
    [
        {"AWS:team": "ml"},
        {"k" * 129: "v"},
        {"team": "v" * 257},
        {"team": ""},
        {"te#am": "ml"},
        {"project": "x"},
        {f"t{i}": "v" for i in range(49)},
    ],
)
def test_tags_aws_refuses_are_refused(tags: dict[str, str]) -> None:
    with pytest.raises(RuleViolation):
        check_tags(tags)


# --- HyperPod instance types --------------------------------------------------------------------


def test_every_gpu_instance_the_app_describes_is_one_hyperpod_offers() -> None:
    assert set(GPU_INSTANCES) <= set(cluster_instance_types())


@pytest.mark.parametrize(
    ("itype", "hint"),
    [
        ("ml.g6e.5xlarge", "ml.g6e.4xlarge"),
        ("g6e.4xlarge", "write ml.g6e.4xlarge"),
        ("ml.zz9.large", "the families"),
    ],
)
def test_an_instance_type_hyperpod_does_not_offer_is_refused_with_a_hint(
    itype: str, hint: str
) -> None:
    with pytest.raises(RuleViolation) as refused:
        cluster_instance_type(itype)
    assert hint in f"{refused.value.allowed} {refused.value.fix}"


# --- existing cluster ARNs ----------------------------------------------------------------------

EXISTING_CLUSTER: dict[str, Any] = {
    "eks_cluster_name": "team-eks",
    "hyperpod_cluster_name": "team-hyperpod",
    "hyperpod_cluster_arn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef123456",
    "oidc_provider_arn": "arn:aws:iam::111122223333:oidc-provider/"
    "oidc.eks.us-west-2.amazonaws.com/id/EXAMPLE",
    "kubectl_role_arn": "arn:aws:iam::111122223333:role/kubectl",
    "vpc_id": "vpc-0aaaa1111bbbb2222",
}
GROUPS = {
    "gpu_group": {"name": "gpu", "instance_type": "ml.g6e.4xlarge", "instance_count": 2},
    "system_group": {"name": "system", "instance_type": "ml.c5.4xlarge", "instance_count": 1},
}


def existing(**arns: str) -> dict[str, Any]:
    return {
        "account": "111122223333",
        "hyperpod": copy.deepcopy(GROUPS),
        "existing_cluster": {**EXISTING_CLUSTER, **arns},
    }


@pytest.mark.parametrize(
    ("field", "arn"),
    [
        (
            "hyperpod_cluster_arn",
            "arn:aws-cn:sagemaker:us-west-2:111122223333:cluster/abcdef123456",
        ),
        ("hyperpod_cluster_arn", "arn:aws:sagemaker:us-east-1:111122223333:cluster/abcdef123456"),
        (
            "oidc_provider_arn",
            "arn:aws:iam::999988887777:oidc-provider/oidc.eks.us-west-2.amazonaws.com/id/EXAMPLE",
        ),
        ("kubectl_role_arn", "arn:aws:iam::999988887777:role/kubectl"),
    ],
)
def test_an_existing_cluster_arn_of_another_account_region_or_partition_is_refused(
    field: str, arn: str
) -> None:
    assert refusal(existing()) is None
    line = refusal(existing(**{field: arn}))
    assert line is not None and f"existing_cluster.{field} = '{arn}'" in line, line
