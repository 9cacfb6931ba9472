"""Cross-replica reuse on LMCache's real engine and fs connector: two processes with the env of two
replicas of one endpoint, each in a mount namespace where the claim's subPath is bound at the
rendered mountPath (as the kubelet binds it), one claim folder behind both. What the first stores,
the second retrieves byte-equal; two endpoints on one claim never read each other's chunks; an L2
that is missing or unreadable is a miss and a recompute, never a crash.

The replicas run as tests/support/runtime_replica.py says (a small L1; a stable chunk hash on
an interpreter older than the image's).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from infra.config import AppConfig, parse_config
from infra.metrics.tiers import L2_READS, LMCACHE_CHUNK_TOKENS, LOADED, l2_hit_share
from k8s.app import build_charts, manifests
from scripts.lib.bench_compare.scrape import parse_counters
from tests.support.config import SOURCE, TIERS_VARIANT, with_overrides
from tests.support.runtime import (
    container_of,
    endpoint_pod,
    needs_mount_namespace,
    operator_of,
)
from tests.support.runtime_replica import TOKENS, WHOLE, replica

pytestmark = needs_mount_namespace
Rendered = dict[str, tuple[AppConfig, list[dict[str, Any]]]]


def _pods(rendered: Rendered, env: str) -> tuple[AppConfig, list[tuple[Any, dict[str, Any]]]]:
    config, objs = rendered[env]
    mounted = config.kvcache.mounted_l2_endpoints
    return config, [(e, endpoint_pod(objs, e, operator_of(config))) for e in mounted]


@pytest.mark.parametrize("env", ["dev", "fsx", TIERS_VARIANT])
def test_what_one_replica_stores_the_other_reads_byte_equal(
    image: str, rendered: Rendered, env: str, tmp_path: Path
) -> None:
    _, ((e, pod), *_) = _pods(rendered, env)
    claims = tmp_path / "claims"
    a = container_of(pod, claims, tmp_path / "pod-a")
    b = container_of(pod, claims, tmp_path / "pod-b")
    stored = replica(image, a, "store", e)
    read = replica(image, b, "retrieve", e)
    assert (read["lookup"], read["retrieved"], read["equal"]) == (WHOLE, WHOLE, True)
    assert read["keys"] == stored["keys"]
    # The chunks sit in the claim, under the endpoint's own subPath.
    (claim,) = [p for p in claims.iterdir()]
    assert {p.name for p in claim.iterdir()} == {e.name}
    assert len(list((claim / e.name).glob("*.data"))) == WHOLE // LMCACHE_CHUNK_TOKENS
    # LMCache's own counters of the reading replica give the read share the judges compute.
    deltas = parse_counters(read["exposition"])
    assert deltas[LOADED] == WHOLE and deltas[L2_READS] == WHOLE // LMCACHE_CHUNK_TOKENS
    bpt = rendered[env][0].observability.kv_bytes_per_token
    assert l2_hit_share(deltas, TOKENS, e.l2_backend, bpt) == 1.0


@pytest.fixture(scope="module")
def two_endpoints() -> tuple[AppConfig, list[dict[str, Any]]]:
    """Two curvine endpoints in one namespace: one claim, two subPaths."""
    raw = with_overrides({})
    first = raw["kvcache"]["endpoints"][0]
    second = {**copy.deepcopy(first), "name": f"{first['name']}-b"}
    raw["kvcache"]["endpoints"] = [{**first, "replicas": 1}, {**second, "replicas": 1}]
    config = parse_config(raw, SOURCE, "dev")
    objs = [o for chart in manifests(build_charts(config)).values() for o in chart]
    return config, objs


def _cross_read(image: str, pods: list[tuple[Any, dict[str, Any]]], tmp: Path) -> int:
    """Tokens the second endpoint retrieves of the prompt the first one stored."""
    (ea, pa), (eb, pb) = pods
    claims = tmp / "claims"
    replica(image, container_of(pa, claims, tmp / "pod-a"), "store", ea)
    got: int = replica(image, container_of(pb, claims, tmp / "pod-b"), "retrieve", eb)["retrieved"]
    return got


def test_two_endpoints_on_one_claim_never_read_each_others_chunks(
    image: str, two_endpoints: tuple[AppConfig, list[dict[str, Any]]], tmp_path: Path
) -> None:
    config, objs = two_endpoints
    pods = [(e, endpoint_pod(objs, e, operator_of(config))) for e in config.kvcache.endpoints]
    assert _cross_read(image, pods, tmp_path) == 0


def test_a_subpath_shared_by_two_endpoints_is_caught(
    image: str, two_endpoints: tuple[AppConfig, list[dict[str, Any]]], tmp_path: Path
) -> None:
    """The same prompt on two endpoints (two models, as far as anyone knows) must not be served
    from one another's KV: with a shared subPath it is, and the check above sees it."""
    config, objs = two_endpoints
    pods = [(e, endpoint_pod(objs, e, operator_of(config))) for e in config.kvcache.endpoints]
    (ea, _), (eb, pb) = pods
    for m in pb["spec"]["containers"][0]["volumeMounts"]:
        if m.get("subPath") == eb.name:
            m["subPath"] = ea.name
    assert _cross_read(image, pods, tmp_path) == WHOLE


@pytest.mark.parametrize("broken", ["not mounted", "a file"])
def test_an_l2_that_is_missing_or_unreadable_is_a_miss_not_a_crash(
    image: str, rendered: Rendered, broken: str, tmp_path: Path
) -> None:
    """Without its claim (the policy did not apply) LMCache writes to the container's own folder,
    which no other replica sees; with a file where the folder should be it turns L2 off. Either way
    the second replica recomputes: no hit, no error, and its counters show no L2 read, which the
    L2 alert and verify's rows read (test_counters.py)."""
    _, ((e, pod), *_) = _pods(rendered, "dev")
    a = container_of(pod, tmp_path / "claims", tmp_path / "pod-a")
    b = container_of(pod, tmp_path / "claims", tmp_path / "pod-b")
    (l2,) = b.claims
    if broken == "not mounted":
        a.mounts.pop(l2)
        b.mounts.pop(l2)
    else:
        blocker = tmp_path / "blocker"
        blocker.write_text("")
        a.mounts[l2] = b.mounts[l2] = blocker
    replica(image, a, "store", e)
    read = replica(image, b, "retrieve", e)
    assert (read["lookup"], read["retrieved"]) == (0, 0)
    assert parse_counters(read["exposition"]).get(L2_READS, 0.0) == 0.0
