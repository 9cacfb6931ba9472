"""What a lock file (``k8s/locks/<env>.json``) records, and the whole line a user sees when the
config disagrees with it, word for word (pure parsing, no double).

Each test passes the lock it means to ``parse_config``; ``load_config`` reads the environment's
lock file itself (the last test, on files in a temporary directory).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config import ConfigError, load_config, parse_config
from infra.config.locks import lock_of
from tests.support.config import BASE, SOURCE, refusal, with_overrides

ENDPOINT = "inference/qwen3-8b"  # the endpoint of config/dev.yaml
FSX = {"kvcache.l2_backend": "fsx_lustre"}
KVAWARE = {
    "kvcache.endpoints": [{**BASE["kvcache"]["endpoints"][0], "routing_strategy": "kvaware"}]
}

# --- what a lock records -------------------------------------------------------------------------


def test_a_lock_file_records_the_curvine_master_count_when_the_l2_is_curvine() -> None:
    config = parse_config(with_overrides({"kvcache.curvine.master.replicas": 3}), SOURCE, "dev")
    assert lock_of(config) == {
        "curvine_master_replicas": 3,
        "endpoints": {ENDPOINT: {"l2_backend": "curvine", "routing_strategy": "prefixaware"}},
    }


def test_a_lock_file_records_no_curvine_masters_when_the_l2_is_fsx() -> None:
    """Curvine is not deployed: a master count in the lock would pin a cluster that does not
    exist, and refuse a later switch back to Curvine with another count."""
    config = parse_config(
        with_overrides({**FSX, "kvcache.curvine.master.replicas": 3}), SOURCE, "dev"
    )
    assert lock_of(config)["curvine_master_replicas"] is None


# --- the Curvine master count --------------------------------------------------------------------


def test_a_changed_curvine_master_count_is_refused_with_the_way_to_rebuild() -> None:
    field = "kvcache.curvine.master.replicas"
    assert refusal({field: 3}, lock={"curvine_master_replicas": 1, "endpoints": {}}) == (
        f"{SOURCE}: {field} = 3: allowed: 1 (recorded in k8s/locks/dev.json: Curvine cannot "
        "change its master count after install); fix: set it back to 1; to rebuild Curvine with "
        "3 masters (L2 data is lost), delete Curvine, remove curvine_master_replicas from "
        "k8s/locks/dev.json"
    )


# --- endpoint routing strategies -----------------------------------------------------------------


def test_a_lock_file_without_endpoints_pins_no_routing_strategy() -> None:
    """A lock written by hand, or before any endpoint, may lack the key: nothing is pinned."""
    assert refusal(KVAWARE, lock={"curvine_master_replicas": 1}) is None


def test_a_changed_routing_strategy_is_refused_with_the_recorded_one() -> None:
    field = "kvcache.endpoints.0.routing_strategy"
    assert refusal(
        KVAWARE, lock={"endpoints": {ENDPOINT: {"routing_strategy": "prefixaware"}}}
    ) == (
        f"{SOURCE}: {field} = 'kvaware': allowed: 'prefixaware' (the operator accepts "
        "intelligentRoutingSpec only when the endpoint is created; recorded in "
        "k8s/locks/dev.json); fix: set it back to 'prefixaware', or create a new endpoint "
        "under another name"
    )


# --- switching an endpoint's L2 backend ----------------------------------------------------------


def _switch_line(field: str, now: str, was: str) -> str:
    return (
        f"{SOURCE}: {field} = {now!r}: allowed: {was!r} (recorded for endpoint {ENDPOINT} in "
        "k8s/locks/dev.json): switching an endpoint's L2 loses what it cached there; fix: set "
        f"it back to {was!r}, or add kvcache.l2_backend_switch_confirmed: true for the deploy "
        "that switches (then remove it)"
    )


@pytest.mark.parametrize(
    ("overrides", "field", "now", "was"),
    [
        # the section's backend, inherited by the endpoint
        (FSX, "kvcache.l2_backend", "fsx_lustre", "curvine"),
        # the endpoint's own
        (
            {"kvcache.endpoints.0.l2_backend": "tieredstorage"},
            "kvcache.endpoints.0.l2_backend",
            "tieredstorage",
            "curvine",
        ),
        (
            {"kvcache.endpoints.0.l2_backend": "none"},
            "kvcache.endpoints.0.l2_backend",
            "none",
            "curvine",
        ),
    ],
)
def test_switching_an_endpoints_l2_backend_is_refused_until_the_switch_is_confirmed(
    overrides: dict[str, Any], field: str, now: str, was: str
) -> None:
    lock = {"endpoints": {ENDPOINT: {"l2_backend": was, "routing_strategy": "prefixaware"}}}
    assert refusal(overrides, lock) == _switch_line(field, now, was)
    assert refusal({**overrides, "kvcache.l2_backend_switch_confirmed": True}, lock) is None


def test_a_lock_written_before_backends_were_per_endpoint_still_pins_them() -> None:
    """Such a lock records one ``l2_backend`` for all (absent: curvine) and endpoints without
    one: each recorded endpoint keeps that backend."""
    old = {"endpoints": {ENDPOINT: {"routing_strategy": "prefixaware"}}}
    assert refusal(FSX, old) == _switch_line("kvcache.l2_backend", "fsx_lustre", "curvine")
    assert refusal(FSX, {**old, "l2_backend": "fsx_lustre"}) is None
    assert refusal({}, {**old, "l2_backend": "fsx_lustre"}) == _switch_line(
        "kvcache.l2_backend", "curvine", "fsx_lustre"
    )


def test_a_new_endpoint_takes_any_backend() -> None:
    """Nothing is recorded for it, so it has nothing to lose."""
    lock = {"endpoints": {"inference/other": {"l2_backend": "none"}}}
    assert refusal(FSX, lock) is None


# --- where a lock is read ------------------------------------------------------------------------


def test_load_config_reads_the_environments_lock_file_once_the_config_is_valid(
    tmp_path: Path,
) -> None:
    """The loader, not a validator, reads ``<lock_dir>/<env>.json``: a lock beside the config is
    applied; the same config with no lock file there loads."""
    configs, locks = tmp_path / "config", tmp_path / "locks"
    configs.mkdir()
    locks.mkdir()
    (configs / "dev.yaml").write_text(yaml.safe_dump(with_overrides(KVAWARE)))
    assert load_config("dev", configs, locks).kvcache.endpoints[0].routing_strategy == "kvaware"
    recorded = {"endpoints": {ENDPOINT: {"routing_strategy": "prefixaware"}}}
    (locks / "dev.json").write_text(json.dumps(recorded))
    with pytest.raises(ConfigError) as err:
        load_config("dev", configs, locks)
    assert str(err.value).startswith(
        "config/dev.yaml: kvcache.endpoints.0.routing_strategy = 'kvaware': allowed: "
        "'prefixaware' (the operator accepts intelligentRoutingSpec only when the endpoint is "
        "created; recorded in k8s/locks/dev.json)"
    )
