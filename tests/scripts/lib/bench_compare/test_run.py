"""``bench compare``'s runner around the scale-out workload: a replica that cannot join, whatever
stopped it, is that tier's failed verdict with the reason, and the other tiers run on.

On a cluster a replica joins by scaling the endpoint out (``scripts.lib.scale_endpoint``), which
can fail two ways: the API server refuses the change (Kubernetes answers an error: no right to
patch the InferenceEndpointConfig, a concurrent change) or the endpoint cannot grow (already at
``maxReplicaCount``, or no new Pod Ready in time). Doubles: FakeKube holding the recorded endpoint
(its answers are the real client's exceptions), the fake model servers of
tests/support/bench_fleet.py for the tiers that do join."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import load_config
from scripts.commands.bench_compare import compare_tiers
from scripts.lib.bench_compare.run import Overrides
from scripts.lib.bench_compare.targets import BenchTarget, scale_out_joiner
from scripts.lib.bench_compare.workloads import Waits
from tests.doubles.fake_kube import FakeKube
from tests.support.bench_fleet import fleet
from tests.support.endpoint_objects import IECS, recorded_cfg
from tests.support.verify import MapTransport, _clients, _seed_cluster

pytestmark = pytest.mark.waits  # on the fake model servers' injected delays

IEC = f"{IECS}/vllm-kvcache"


def _refuse_the_patch(kube: FakeKube) -> None:
    kube.fail[("PATCH", IEC)] = 403  # no right to patch the InferenceEndpointConfig


def _at_its_maximum(kube: FakeKube) -> None:
    iec = kube.get(IEC)
    assert iec is not None
    iec["spec"]["autoScalingSpec"] = {"minReplicaCount": 2, "maxReplicaCount": 2}


@pytest.mark.parametrize(
    ("world", "why"),
    [
        (_refuse_the_patch, "Kubernetes API: 403 Forbidden"),
        (_at_its_maximum, "2 replicas of at most maxReplicaCount 2"),
    ],
    ids=["kubernetes-refuses", "at-its-maximum"],
)
def test_a_replica_that_cannot_join_fails_its_tier_and_the_others_run_on(
    kube: FakeKube, world: Any, why: str
) -> None:
    _seed_cluster(kube)
    world(kube)
    cfg = recorded_cfg()
    ref = cfg.kvcache.endpoints[0]
    bench = load_config("dev")
    with fleet(("curvine", "tieredstorage")) as servers:
        targets = [
            BenchTarget(tier, f"models/{tier}", (a.url, b.url), (a.url, b.url))  # type: ignore[arg-type]
            for tier, (a, b) in servers.items()
        ]
        joiners = {
            "models/curvine": scale_out_joiner(_clients(kube, {}), ref, MapTransport({}), False),
            "models/tieredstorage": servers.joiner("tieredstorage"),
        }
        result = compare_tiers(
            bench,
            targets,
            3,
            Overrides(workloads=("scale_out",)),
            Waits(settle_s=0, flush_s=0),
            joiners,
        )
    by_tier = {v.l2_backend: v for v in result.verdicts}
    assert by_tier["curvine"].status == "fail"
    reason = by_tier["curvine"].reason
    assert reason.startswith("no replica joined: ") and why in reason and "\n" not in reason
    assert by_tier["tieredstorage"].status == "pass", by_tier["tieredstorage"]
    # Nothing was left changed on the endpoint.
    iec = kube.get(IEC)
    assert iec is not None and "annotations" not in iec["metadata"]
