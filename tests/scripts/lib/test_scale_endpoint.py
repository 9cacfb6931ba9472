"""Scaling an endpoint out by one and back (``scripts.lib.scale_endpoint``) against FakeKube,
the local API server behind the official client (tests/doubles/fake_kube.py): the recorded
endpoint, its Deployment and two Ready Pods; a write hook stands in for the operator and the
Deployment controller (or KEDA's HPA, under autoscaling): once the IEC asks for a third replica,
a third Pod appears, Ready. The fields written are held to the operator's CRD schema."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from infra.config import AppConfig
from scripts.lib.errors import OperationError
from scripts.lib.progress import Reporter
from scripts.lib.scale_endpoint import RESTORE, scaled_out
from tests.doubles.fake_kube import FakeKube
from tests.support.endpoint_objects import IECS, PODS, recorded_cfg
from tests.support.progress import FakeClock
from tests.support.schemas import crd_schema, strict, validate
from tests.support.verify import _clients, _seed_cluster

IEC = f"{IECS}/vllm-kvcache"
NEW = "vllm-kvcache-7d9f-3"


def _quiet() -> Reporter:
    return Reporter(clock=FakeClock().clock(), tty=False, enabled=False)


def _iec(kube: FakeKube) -> dict[str, Any]:
    got = kube.get(IEC)
    assert got is not None
    return got


def _set_spec(kube: FakeKube, **spec: Any) -> None:
    _iec(kube)["spec"].update(spec)


def _wanted(iec: dict[str, Any]) -> int:
    spec = iec["spec"]
    auto = spec.get("autoScalingSpec")
    return int(auto.get("minReplicaCount", 1)) if auto else int(spec.get("replicas", 1))


def _controller(kube: FakeKube) -> list[int]:
    """After every write: a third Ready Pod once the IEC wants three. Returns what it saw."""
    seen: list[int] = []

    def on_write(fake: FakeKube, method: str, path: str) -> None:
        if path != IEC:
            return
        wanted = _wanted(_iec(fake))
        seen.append(wanted)
        if wanted >= 3 and fake.get(f"{PODS}/{NEW}") is None:
            pod = copy.deepcopy(fake.get(f"{PODS}/vllm-kvcache-7d9f-1"))
            assert pod is not None
            pod["metadata"]["name"] = NEW
            fake.put(PODS, pod)

    kube.after_write.append(on_write)
    return seen


def _cfg() -> AppConfig:
    return recorded_cfg()


def _schema_checks(iec: dict[str, Any], cfg: AppConfig) -> None:
    crd = cfg.addons.inference_operator.operator.crd_path
    spec_schema = crd_schema(crd, "v1")["properties"]["spec"]["properties"]
    for key in ("replicas", "autoScalingSpec"):
        if key in iec["spec"]:
            validate(iec["spec"][key], strict(spec_schema[key]))


def test_the_replica_count_goes_up_by_one_for_the_new_pod_and_back_afterwards(
    kube: FakeKube,
) -> None:
    cfg = _cfg()
    _seed_cluster(kube)
    _set_spec(kube, replicas=2)
    seen = _controller(kube)
    with scaled_out(_clients(kube, {}), cfg.kvcache.endpoints[0], 600, show=_quiet()) as pod:
        assert pod["metadata"]["name"] == NEW
        during = copy.deepcopy(_iec(kube))
    assert during["spec"]["replicas"] == 3
    assert json.loads(during["metadata"]["annotations"][RESTORE]) == {
        "path": "/spec/replicas",
        "value": 2,
    }
    _schema_checks(during, cfg)
    after = _iec(kube)
    assert after["spec"]["replicas"] == 2 and RESTORE not in after["metadata"]["annotations"]
    assert seen == [3, 2]


def test_one_more_than_the_pods_running_when_more_run_than_the_spec_asks(kube: FakeKube) -> None:
    """Mid-rollout (a surge Pod) two Pods run for ``replicas: 1``: one more than the spec asks
    would add none; one more than run adds the Pod to measure."""
    cfg = _cfg()
    _seed_cluster(kube)
    _set_spec(kube, replicas=1)
    seen = _controller(kube)
    with scaled_out(_clients(kube, {}), cfg.kvcache.endpoints[0], 600, show=_quiet()) as pod:
        assert pod["metadata"]["name"] == NEW
    assert seen == [3, 1] and _iec(kube)["spec"]["replicas"] == 1


def test_a_failure_while_scaled_out_still_puts_the_count_back(kube: FakeKube) -> None:
    _seed_cluster(kube)
    _set_spec(kube, replicas=2)
    _controller(kube)
    with (
        pytest.raises(RuntimeError),
        scaled_out(_clients(kube, {}), _cfg().kvcache.endpoints[0], 600, show=_quiet()),
    ):
        raise RuntimeError("the benchmark broke")
    assert _iec(kube)["spec"]["replicas"] == 2


def test_a_new_pod_that_never_comes_fails_the_wait_and_restores(kube: FakeKube) -> None:
    _seed_cluster(kube)
    _set_spec(kube, replicas=2)
    ref = _cfg().kvcache.endpoints[0]
    with (
        pytest.raises(OperationError, match="a new Pod of models/vllm-kvcache"),
        scaled_out(_clients(kube, {}), ref, 60, interval_s=10, show=_quiet()),
    ):
        pass
    assert _iec(kube)["spec"]["replicas"] == 2


def test_an_autoscaled_endpoint_gets_its_floor_raised_not_its_replicas(kube: FakeKube) -> None:
    """KEDA's HPA owns the replica count of an autoscaled endpoint: the floor it may not go
    below is what adds the Pod."""
    cfg = _cfg()
    _seed_cluster(kube)
    _set_spec(kube, replicas=1, autoScalingSpec={"minReplicaCount": 1, "maxReplicaCount": 4})
    seen = _controller(kube)
    with scaled_out(_clients(kube, {}), cfg.kvcache.endpoints[0], 600, show=_quiet()):
        during = copy.deepcopy(_iec(kube))
    assert during["spec"]["autoScalingSpec"]["minReplicaCount"] == 3
    assert during["spec"]["replicas"] == 1
    _schema_checks(during, cfg)
    assert _iec(kube)["spec"]["autoScalingSpec"] == {"minReplicaCount": 1, "maxReplicaCount": 4}
    assert seen == [3, 1]


def test_an_endpoint_at_its_maximum_is_refused_and_left_alone(kube: FakeKube) -> None:
    _seed_cluster(kube)
    _set_spec(kube, autoScalingSpec={"minReplicaCount": 1, "maxReplicaCount": 2})
    before = copy.deepcopy(_iec(kube))
    ref = _cfg().kvcache.endpoints[0]
    with (
        pytest.raises(OperationError, match="maxReplicaCount 2"),
        scaled_out(_clients(kube, {}), ref, 600, show=_quiet()),
    ):
        pass
    assert _iec(kube) == before
    assert kube.writes() == []


def test_an_endpoint_one_below_its_maximum_may_reach_it(kube: FakeKube) -> None:
    """Two Pods running, the ceiling three: the floor raised to three is the ceiling itself, a
    count the scaler may hold; only a floor past the ceiling is refused."""
    _seed_cluster(kube)
    _set_spec(kube, autoScalingSpec={"minReplicaCount": 1, "maxReplicaCount": 3})
    _controller(kube)
    ref = _cfg().kvcache.endpoints[0]
    with scaled_out(_clients(kube, {}), ref, 600, show=_quiet()) as pod:
        floor = _iec(kube)["spec"]["autoScalingSpec"]["minReplicaCount"]
    assert pod["metadata"]["name"] == NEW and floor == 3
    assert _iec(kube)["spec"]["autoScalingSpec"] == {"minReplicaCount": 1, "maxReplicaCount": 3}


def test_a_run_killed_while_scaled_out_is_restored_by_the_next_one(kube: FakeKube) -> None:
    """The annotation an interrupted run left says what to write back; the next run restores
    it before it measures, then restores again after."""
    _seed_cluster(kube)
    _set_spec(kube, replicas=3)
    _iec(kube)["metadata"]["annotations"] = {
        "owner": "kept",
        RESTORE: json.dumps({"path": "/spec/replicas", "value": 2}),
    }
    seen = _controller(kube)
    with scaled_out(_clients(kube, {}), _cfg().kvcache.endpoints[0], 600, show=_quiet()):
        assert _iec(kube)["spec"]["replicas"] == 3
    after = _iec(kube)
    assert after["spec"]["replicas"] == 2
    assert after["metadata"]["annotations"] == {"owner": "kept"}
    assert seen == [2, 3, 2]
