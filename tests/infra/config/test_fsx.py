"""Synth-time rules of kvcache.l2_backend and kvcache.fsx: each bad value fails with one line
naming the field. Pure config parsing, no double."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import ConfigError, parse_config
from infra.config.locks import lock_of
from tests.support.config import EXISTING_GROUPS, existing_cluster

# parse_config checks a lock only when given one: the lock tests pass theirs.
BASE: dict[str, Any] = {"account": "111122223333", "environment": "dev"}
FSX: dict[str, Any] = {"l2_backend": "fsx_lustre"}
PLACEMENT = {
    "hyperpod_subnet_id": "subnet-0aaaa1111bbbb2222",
    "vpc_id": "vpc-0aaaa1111bbbb2222",
    "client_security_group_id": "sg-0eeee5555ffff6666",
}


def _fail(kv: dict[str, Any], lock: dict[str, Any] | None = None, **extra: Any) -> str:
    with pytest.raises(ConfigError) as err:
        parse_config({**BASE, "kvcache": kv, **extra}, "config/test.yaml", lock=lock)
    text = str(err.value)
    assert "\n" not in text and text.startswith("config/test.yaml: ")
    return text


def test_fsx_turns_curvine_off_and_keeps_l2() -> None:
    cfg = parse_config({**BASE, "kvcache": FSX}, "config/test.yaml")
    assert (
        "curvine" not in cfg.kvcache.l2_backends and cfg.kvcache.mounted_l2_backend == "fsx_lustre"
    )
    assert parse_config(BASE, "config/test.yaml").kvcache.l2_backend == "curvine"


def test_the_removed_curvine_switch_is_refused_with_fsx() -> None:
    text = _fail({**FSX, "curvine": {"enabled": True}})
    assert "kvcache.curvine.enabled = True" in text


@pytest.mark.parametrize("gib", [1000, 1800, 3600, 0])
def test_capacity_must_be_a_persistent_2_step(gib: int) -> None:
    text = _fail({**FSX, "fsx": {"storage_capacity_gib": gib}})
    assert (
        f"kvcache.fsx.storage_capacity_gib = {gib}" in text and "1200 or a multiple of 2400" in text
    )


@pytest.mark.parametrize("gib", [1200, 2400, 4800, 24000])
def test_valid_capacities_parse(gib: int) -> None:
    cfg = parse_config({**BASE, "kvcache": {**FSX, "fsx": {"storage_capacity_gib": gib}}}, "x")
    assert cfg.kvcache.fsx.storage_capacity_gib == gib


@pytest.mark.parametrize("mbps", [50, 100, 200, 12, 2000])
def test_throughput_must_be_allowed_for_persistent_2(mbps: int) -> None:
    text = _fail({**FSX, "fsx": {"throughput_mb_per_tib": mbps}})
    assert "125, 250, 500, 1000" in text


def test_bucket_must_be_in_the_environment_region() -> None:
    repo = {"bucket": "amzn-s3-demo-kv", "bucket_region": "eu-west-1"}
    text = _fail({**FSX, "fsx": {"data_repository": repo}})
    assert "kvcache.fsx.data_repository.bucket_region = 'eu-west-1'" in text
    assert "allowed: us-west-2" in text


def test_bucket_is_a_bare_name() -> None:
    repo = {"bucket": "s3://amzn-s3-demo-kv", "bucket_region": "us-west-2"}
    assert "kvcache.fsx.data_repository.bucket" in _fail({**FSX, "fsx": {"data_repository": repo}})


def test_existing_cluster_needs_the_placement_ids() -> None:
    text = _fail(FSX, existing_cluster=existing_cluster(), hyperpod=EXISTING_GROUPS)
    assert "kvcache.fsx.hyperpod_subnet_id = (missing)" in text and "describe-cluster" in text
    cfg = parse_config(
        {
            **BASE,
            "kvcache": {**FSX, "fsx": PLACEMENT},
            "existing_cluster": existing_cluster(),
            "hyperpod": EXISTING_GROUPS,
        },
        "x",
    )
    assert cfg.kvcache.fsx.hyperpod_subnet_id == PLACEMENT["hyperpod_subnet_id"]


def test_created_cluster_refuses_placement_ids() -> None:
    text = _fail({**FSX, "fsx": {"hyperpod_subnet_id": PLACEMENT["hyperpod_subnet_id"]}})
    assert "kvcache.fsx.hyperpod_subnet_id" in text and "HyperPod subnet" in text


def _locked(kv: dict[str, Any]) -> dict[str, Any]:
    return lock_of(parse_config({**BASE, "kvcache": kv}, "x"))


def test_lock_records_each_endpoints_backend() -> None:
    (curvine,) = lock_of(parse_config(BASE, "x"))["endpoints"].values()
    (fsx,) = lock_of(parse_config({**BASE, "kvcache": FSX}, "x"))["endpoints"].values()
    assert (curvine["l2_backend"], fsx["l2_backend"]) == ("curvine", "fsx_lustre")


@pytest.mark.parametrize(("was", "now"), [({}, FSX), (FSX, {})])
def test_switching_backends_needs_confirmation(was: dict[str, Any], now: dict[str, Any]) -> None:
    lock = _locked(was)
    text = _fail(now, lock=lock)
    assert "kvcache.l2_backend" in text and "loses what it cached" in text
    confirmed = parse_config(
        {**BASE, "kvcache": {**now, "l2_backend_switch_confirmed": True}}, "x", lock=lock
    )
    assert confirmed.kvcache.l2_backend == now.get("l2_backend", "curvine")
