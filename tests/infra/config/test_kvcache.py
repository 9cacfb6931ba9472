"""Synth-time rules of the Kubernetes layer: each bad value fails with one line naming the field.
Pure config parsing, no double."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import ConfigError, RuleViolation, parse_config
from infra.config.locks import check_lock, lock_of
from tests.support.config import with_overrides

# parse_config checks a lock only when given one: the lock test passes its own.
BASE: dict[str, Any] = {"account": "111122223333", "environment": "dev"}


def _fail(kv: dict[str, Any], **extra: Any) -> str:
    with pytest.raises(ConfigError) as err:
        parse_config({**BASE, "kvcache": kv, **extra}, "config/test.yaml")
    text = str(err.value)
    assert "\n" not in text and text.startswith("config/test.yaml: ")
    return text


def test_defaults_parse() -> None:
    cfg = parse_config(BASE, "config/test.yaml")
    assert cfg.kvcache.endpoints[0].routing_strategy == "prefixaware"


def test_routing_strategy_must_be_one_of_four() -> None:
    text = _fail({"endpoints": [{"routing_strategy": "random"}]})
    assert "kvcache.endpoints.0.routing_strategy = 'random'" in text
    assert "prefixaware, kvaware, session, roundrobin" in text


def test_replicas_must_fit_gpus_with_surge_slot() -> None:
    text = _fail({"endpoints": [{"replicas": 2, "rollout": "surge"}]})
    assert "kvcache.endpoints.0.replicas = 2" in text and "deadlock" in text
    text = _fail({"endpoints": [{"replicas": 3}]})
    assert "3 GPUs > 2 GPUs (2 nodes x 1)" in text


def test_weights_must_fit_gpu_memory_with_arithmetic() -> None:
    text = _fail({"endpoints": [{"model": {"parameters_billion": 70}}]})
    assert "70.0e9 params x 2.0 bytes / tensor-parallel 1 = 130.4 GiB > 48 GiB" in text


def test_l2_requires_tiered_storage() -> None:
    text = _fail({}, tiered_storage={"mode": "Disable"})
    assert "kvcache.l2_backend = 'curvine'" in text and "tiered_storage.mode" in text


def test_gpu_type_must_have_local_nvme() -> None:
    text = _fail({"endpoints": [{"instance_type": "ml.c5.4xlarge"}]})
    assert "kvcache.endpoints.0.instance_type = 'ml.c5.4xlarge'" in text and "NVMe" in text


def test_master_replicas_odd_and_images_pinned() -> None:
    assert "1, 3 or 5" in _fail({"curvine": {"master": {"replicas": 2}}})
    assert "latest" in _fail({"endpoints": [{"image": "vllm/vllm-openai:latest"}]})


def test_lock_refuses_changes_after_first_deploy() -> None:
    cfg = parse_config(BASE, "config/test.yaml")
    lock = lock_of(cfg)
    check_lock(cfg, lock)  # unchanged: accepted
    changed = parse_config(
        {**BASE, "kvcache": {"curvine": {"master": {"replicas": 3}}}}, "config/test.yaml"
    )
    with pytest.raises(RuleViolation) as err:
        check_lock(changed, lock)
    assert (
        err.value.field == "kvcache.curvine.master.replicas"
        and "cannot change" in err.value.allowed
    )
    rerouted = parse_config(
        {**BASE, "kvcache": {"endpoints": [{"routing_strategy": "kvaware"}]}}, "config/test.yaml"
    )
    with pytest.raises(RuleViolation) as err:
        check_lock(rerouted, lock)
    assert err.value.field == "kvcache.endpoints.0.routing_strategy"
    assert "only when the endpoint is created" in err.value.allowed


def test_kyverno_install_false_is_refused_on_a_created_cluster() -> None:
    raw = with_overrides({"kvcache.kyverno": {"install": False}})
    with pytest.raises(ConfigError, match=r"kvcache\.kyverno\.install"):
        parse_config(raw, "config/dev.yaml", "dev")
