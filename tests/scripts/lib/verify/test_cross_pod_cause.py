"""Why verify's cross-Pod test missed, from what the two Pods show: the rendered dev endpoint's Pod
(the operator's rendering, then the L2 policy: ``tests/support/runtime.py``) and a copy changed
the way each cause changes a Pod. LMCache's lines are in the formats real servers printed
(``tests/support/lmcache_logs.py``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from k8s.app import build_charts, manifests
from scripts.lib.bench_compare.scrape import DEGRADED
from scripts.lib.lmcache_logs import parse_log
from scripts.lib.verify.cross_pod_cause import cause, degraded
from tests.support.config import env_config
from tests.support.lmcache_logs import DEGRADED_0_3, MISS, SEED_STORE
from tests.support.runtime import endpoint_pod, operator_of


@pytest.fixture(scope="module")
def pod() -> dict[str, Any]:
    config = env_config("dev")
    objs = [o for chart in manifests(build_charts(config)).values() for o in chart]
    (e,) = config.kvcache.mounted_l2_endpoints
    rendered = endpoint_pod(objs, e, operator_of(config))
    rendered["metadata"]["name"] = "pod-a"
    rendered["spec"]["nodeName"] = "node-1"
    return rendered


def _second(pod: dict[str, Any]) -> dict[str, Any]:
    b = copy.deepcopy(pod)
    b["metadata"]["name"], b["spec"]["nodeName"] = "pod-b", "node-2"
    return b


STORED, MISSED = parse_log(SEED_STORE), parse_log(MISS)


def test_the_same_mount_and_env_is_a_volume_the_nodes_do_not_share(pod: dict[str, Any]) -> None:
    why = cause((pod, _second(pod)), 0, STORED, MISSED)
    assert "found 0 of the 1925 tokens pod-a stored" in why
    assert "the L2 volume is not shared between nodes node-1 and node-2" in why


def test_another_subpath_is_named(pod: dict[str, Any]) -> None:
    b = _second(pod)
    (mount,) = [m for m in b["spec"]["containers"][0]["volumeMounts"] if "subPath" in m]
    mount["subPath"] = "other"
    why = cause((pod, b), 0, STORED, MISSED)
    assert "subPath qwen3-8b" in why and "subPath other" in why
    assert "they do not share an L2 folder" in why and "not shared between nodes" not in why


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("LMCACHE_CHUNK_SIZE", "512", "256 (LMCache's default) on pod-a, 512 on pod-b"),
        ("PYTHONHASHSEED", "1", "PYTHONHASHSEED is 0 on pod-a, 1 on pod-b"),
    ],
)
def test_env_that_keys_the_chunks_otherwise_is_named(
    pod: dict[str, Any], name: str, value: str, said: str
) -> None:
    b = _second(pod)
    b["spec"]["containers"][0]["env"].append({"name": name, "value": value})
    why = cause((pod, b), 0, STORED, MISSED)
    assert said in why and "their chunk keys differ" in why


def test_a_degraded_lmcache_is_named_from_its_log_or_its_metrics(pod: dict[str, Any]) -> None:
    b = _second(pod)
    logs = [STORED, parse_log(f"{DEGRADED_0_3}\n{MISS}")]
    found = degraded([pod, b], logs, [None, None])
    assert found is not None and found.status == "fail"
    assert "Pod pod-b: LMCache started in its degraded mode (recompute)" in found.detail
    assert "Unsupported device platform" in found.detail and "pod-a" not in found.detail
    by_metrics = degraded([pod, b], [STORED, MISSED], [DEGRADED, None])
    assert by_metrics is not None and "Pod pod-a" in by_metrics.detail
    assert degraded([pod, b], [STORED, MISSED], [None, None]) is None
