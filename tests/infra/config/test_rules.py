"""One test per config rule: the exact one-line message a user sees (no double: pure parsing)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config import ConfigError, load_config, parse_config
from infra.config.loader import CONFIG_DIR
from tools.config_reference import REFERENCE, updated_reference

SOURCE = "config/dev.yaml"


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load((CONFIG_DIR / "dev.yaml").read_text())
    return raw


def error_for(base: dict[str, Any], path: str, value: Any) -> str:
    raw = copy.deepcopy(base)
    *parents, leaf = path.split(".")
    node = raw
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value
    with pytest.raises(ConfigError) as info:
        parse_config(raw, SOURCE, "dev")
    message = str(info.value)
    assert "\n" not in message
    return message


def test_every_environment_file_loads() -> None:
    for path in CONFIG_DIR.glob("*.yaml"):
        assert load_config(path.stem).environment == path.stem


def test_account(base: dict[str, Any]) -> None:
    assert error_for(base, "account", "12345") == (
        "config/dev.yaml: account = '12345': allowed: a 12-digit account id, quoted in YAML; "
        'fix: run `aws sts get-caller-identity --query Account` and write it as "123456789012"'
    )


def test_region(base: dict[str, Any]) -> None:
    assert error_for(base, "region", "uswest2") == (
        "config/dev.yaml: region = 'uswest2': allowed: a region code like us-west-2; "
        "fix: fix region"
    )


def test_az_id_form(base: dict[str, Any]) -> None:
    assert error_for(base, "network.hyperpod_subnet.az_id", "us-west-2b") == (
        "config/dev.yaml: network.hyperpod_subnet.az_id = 'us-west-2b': allowed: an AZ id like "
        "usw2-az2 (not an AZ name like us-west-2b); fix: run `aws ec2 "
        "describe-availability-zones --query 'AvailabilityZones[].[ZoneName,ZoneId]'` and use "
        "the ZoneId"
    )


def test_az_id_of_another_region(base: dict[str, Any]) -> None:
    assert error_for(base, "network.hyperpod_subnet.az_id", "use1-az4") == (
        "config/dev.yaml: network.hyperpod_subnet.az_id = 'use1-az4': allowed: an AZ id of "
        "region us-west-2 (usw2-az1, usw2-az2, ...); fix: pick an AZ id in the configured region"
    )


def test_hyperpod_cluster_name(base: dict[str, Any]) -> None:
    assert error_for(base, "hyperpod.cluster_name", "kv_cache") == (
        "config/dev.yaml: hyperpod.cluster_name = 'kv_cache': allowed: "
        "^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$: 1-63 letters, digits and hyphens, starting and "
        "ending with a letter or digit; fix: rename hyperpod.cluster_name (no underscores or dots)"
    )


def test_eks_cluster_name(base: dict[str, Any]) -> None:
    assert error_for(base, "eks.cluster_name", "-bad").startswith(
        "config/dev.yaml: eks.cluster_name = '-bad': allowed: 1-100 characters"
    )


def test_kubernetes_version_not_supported_by_hyperpod(base: dict[str, Any]) -> None:
    assert error_for(base, "eks.kubernetes_version", "1.27") == (
        "config/dev.yaml: eks.kubernetes_version = '1.27': allowed: 1.33, 1.34 (HyperPod "
        "supports 1.28, 1.29, 1.30, 1.31, 1.32, 1.33, 1.34); fix: set eks.kubernetes_version "
        'to "1.34" (quoted)'
    )


def test_kubernetes_version_hyperpod_only(base: dict[str, Any]) -> None:
    assert error_for(base, "eks.kubernetes_version", "1.30") == (
        "config/dev.yaml: eks.kubernetes_version = '1.30': allowed: 1.33, 1.34 (HyperPod accepts "
        "1.30, but this toolkit pins kubectl layers and cdk8s-plus only for the minors listed); "
        "fix: set eks.kubernetes_version to 1.34"
    )


def test_instance_type_needs_ml_prefix(base: dict[str, Any]) -> None:
    assert error_for(base, "hyperpod.system_group.instance_type", "c5.4xlarge") == (
        "config/dev.yaml: hyperpod.system_group.instance_type = 'c5.4xlarge': allowed: a HyperPod "
        "instance type with the ml. prefix (ml.g6e.4xlarge); fix: write ml.c5.4xlarge"
    )


def test_gpu_group_needs_local_nvme(base: dict[str, Any]) -> None:
    assert error_for(base, "hyperpod.gpu_group.instance_type", "ml.g5.12xlarge") == (
        "config/dev.yaml: hyperpod.gpu_group.instance_type = 'ml.g5.12xlarge': allowed: G6e "
        "(ml.g6e.*) or P5 (ml.p5.*, ml.p5e.*, ml.p5en.*): types with local NVMe for the L2 pool; "
        "fix: set hyperpod.gpu_group.instance_type to e.g. ml.g6e.4xlarge"
    )


def test_two_gpu_nodes_when_an_endpoint_uses_curvine(base: dict[str, Any]) -> None:
    assert error_for(base, "hyperpod.gpu_group.instance_count", 1) == (
        "config/dev.yaml: hyperpod.gpu_group.instance_count = 1: allowed: at least 2 while an "
        "endpoint's L2 is curvine (Curvine pools the GPU nodes' NVMe): one node cannot show "
        "cross-node reuse; fix: set hyperpod.gpu_group.instance_count to 2 or more, or move the "
        "endpoints off curvine (kvcache.l2_backend or the endpoint's l2_backend)"
    )


def test_instance_count_lower_bound(base: dict[str, Any]) -> None:
    assert error_for(base, "hyperpod.system_group.instance_count", 0) == (
        "config/dev.yaml: hyperpod.system_group.instance_count = 0: allowed: greater than or "
        "equal to 1; fix: change hyperpod.system_group.instance_count in config/dev.yaml"
    )


@pytest.mark.parametrize("size", [99, 16385])
def test_ebs_volume_size_range(base: dict[str, Any], size: int) -> None:
    assert error_for(base, "hyperpod.gpu_group.ebs_volume_size_gib", size) == (
        f"config/dev.yaml: hyperpod.gpu_group.ebs_volume_size_gib = {size}: allowed: 100 to 16384 "
        "GiB (container images and model weights live on this volume); fix: set "
        "ebs_volume_size_gib between 100 and 16384"
    )


def test_unknown_key_is_a_typo(base: dict[str, Any]) -> None:
    assert error_for(base, "eks.endpoint_acess", "private") == (
        "config/dev.yaml: eks.endpoint_acess = 'private': allowed: only the keys documented in "
        "docs/configuration.md; fix: remove or rename the key (check for a typo)"
    )


def test_enum_lists_allowed_values(base: dict[str, Any]) -> None:
    assert error_for(base, "eks.endpoint_access", "public") == (
        "config/dev.yaml: eks.endpoint_access = 'public': allowed: 'public_and_private' or "
        "'private'; fix: change eks.endpoint_access in config/dev.yaml"
    )


def test_hyperpod_cidr_must_not_overlap_vpc(base: dict[str, Any]) -> None:
    assert error_for(base, "network.hyperpod_subnet.cidr", "10.192.0.0/16") == (
        "config/dev.yaml: network.hyperpod_subnet.cidr = '10.192.0.0/16': allowed: a CIDR that "
        "does not overlap the VPC's primary CIDR (10.192.0.0/16); fix: use a separate range, "
        "e.g. 10.1.0.0/16"
    )


@pytest.mark.parametrize("value", [19, 101, "abc", True])
def test_tiered_storage_percentage(base: dict[str, Any], value: Any) -> None:
    message = error_for(base, "tiered_storage.instance_memory_allocation_percentage", value)
    assert message == (
        f"config/dev.yaml: tiered_storage.instance_memory_allocation_percentage = {value!r}: "
        "allowed: an integer from 20 to 100; fix: set "
        "tiered_storage.instance_memory_allocation_percentage to 20 (the default) or more"
    )


def test_environment_must_match_file(base: dict[str, Any]) -> None:
    assert error_for(base, "environment", "prod") == (
        "config/dev.yaml: environment = 'prod': allowed: 'dev' (the file's name); "
        "fix: set environment: dev"
    )


def test_unknown_environment() -> None:
    with pytest.raises(ConfigError) as info:
        load_config("staging")
    assert str(info.value).startswith("config: env = 'staging': allowed: ")


def test_app_prints_one_line_and_no_traceback(repo_root: Path) -> None:
    result = subprocess.run(
        [sys.executable, "app.py", "-c", "env=staging"],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error: config: env = 'staging': allowed: ")
    assert "Traceback" not in result.stderr


def test_configuration_reference_is_current() -> None:
    text = REFERENCE.read_text()
    assert updated_reference(text) == text, "run `make docs`"
