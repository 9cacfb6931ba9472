"""``verify``'s scaler row and ``verify --chaos``'s scale-out stage.

Doubles: FakeKube (tests/doubles/fake_kube.py) holding the recorded endpoint and, for an
autoscaled one, KEDA's ScaledObject and HPA (tests/support/scaler_objects.py), which these
tests first hold to KEDA 2.17.1's CRD and to the Kubernetes OpenAPI schema, so the shapes read
are the real ones. The scale-out stage: model servers (tests/doubles/fake_vllm.py with
fake_tiers), a map transport for port-forward, a write hook for the operator and the
Deployment controller (a new Ready Pod once the IEC asks for more replicas than run), and a
fake clock for the waits."""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Iterator
from pathlib import Path

import kubernetes_validate
import pytest

from infra.facts.versions import SUPPORTED_KUBERNETES
from scripts.lib.checks import Check
from scripts.lib.progress import Reporter
from scripts.lib.verify.chaos import SCALED_OUT, ChaosOptions, run_chaos
from scripts.lib.verify.scaler import check_scaler
from tests.doubles.fake_kube import FakeKube
from tests.doubles.fake_tiers import TierSpec
from tests.doubles.fake_vllm import FakeVllm
from tests.support.endpoint_objects import IECS, PODS, recorded_cfg
from tests.support.progress import FakeClock
from tests.support.scaler_objects import HPAS, SCALED_OBJECTS, keda_hpa, scaled_object
from tests.support.schemas import SCHEMAS, crd_schema, strict, validate
from tests.support.verify import MapTransport, _clients, _seed_cluster

CFG = recorded_cfg()
REF = CFG.kvcache.endpoints[0]
IEC = f"{IECS}/vllm-kvcache"
AUTO = {"minReplicaCount": 1, "maxReplicaCount": 4}


def _autoscaled(kube: FakeKube) -> None:
    _seed_cluster(kube)
    iec = kube.get(IEC)
    assert iec is not None
    iec["spec"]["autoScalingSpec"] = dict(AUTO)


def test_the_keda_objects_the_tests_read_have_the_real_shapes() -> None:
    crd = SCHEMAS / "keda" / "keda.sh_scaledobjects.yaml"
    for so in (scaled_object(), scaled_object(ready=False, active=False)):
        validate(so, strict(crd_schema(crd, "v1alpha1")))
    version = SUPPORTED_KUBERNETES[CFG.eks.kubernetes_version].schema_version
    for hpa in (keda_hpa(), keda_hpa(scaling_active=False)):
        kubernetes_validate.validate(hpa, version, strict=True)


def test_an_autoscaled_endpoint_shows_its_scaler_active_and_its_signal(kube: FakeKube) -> None:
    _autoscaled(kube)
    kube.put(SCALED_OBJECTS, scaled_object())
    kube.put(HPAS, keda_hpa(current="2500m", desired=3, replicas=2))
    row = check_scaler(_clients(kube, {}), REF)
    assert row.status == "pass", row
    # What the HPA computed from: 2.5 waiting requests per replica against a target of 5.
    assert "s0-prometheus 2.5 per replica (target 5)" in row.detail
    assert "desired 3 / current 2 (min 1, max 4)" in row.detail
    assert "active" in row.detail and "idle" not in row.detail


def test_an_idle_scaler_still_passes_and_says_so(kube: FakeKube) -> None:
    _autoscaled(kube)
    kube.put(SCALED_OBJECTS, scaled_object(active=False))
    kube.put(HPAS, keda_hpa(current="0", desired=1, replicas=1))
    row = check_scaler(_clients(kube, {}), REF)
    assert row.status == "pass" and "idle" in row.detail


def _unjudged(obj: dict[str, object]) -> dict[str, object]:
    """As the API server holds it before its controller has written any condition."""
    fresh = copy.deepcopy(obj)
    status = fresh["status"]
    assert isinstance(status, dict)
    status.pop("conditions")
    return fresh


@pytest.mark.parametrize(
    ("so", "hpa"),
    [
        (None, None),  # the operator made no ScaledObject (KEDA off)
        (scaled_object(ready=False), keda_hpa()),  # the trigger fails (AMP refuses the query)
        (scaled_object(), None),  # KEDA made no HPA
        (scaled_object(), keda_hpa(scaling_active=False)),  # the HPA gets no metric
        (_unjudged(scaled_object()), keda_hpa()),  # KEDA has not judged the triggers yet
        (scaled_object(), _unjudged(keda_hpa())),  # the HPA has not computed yet
    ],
    ids=["none", "not-ready", "no-hpa", "no-metric", "so-unjudged", "hpa-unjudged"],
)
def test_a_scaler_that_cannot_scale_fails_the_row(
    kube: FakeKube, so: dict[str, object] | None, hpa: dict[str, object] | None
) -> None:
    _autoscaled(kube)
    if so is not None:
        kube.put(SCALED_OBJECTS, so)
    if hpa is not None:
        kube.put(HPAS, hpa)
    row = check_scaler(_clients(kube, {}), REF)
    assert row.status == "fail" and row.fix


def _renamed(name: str, target: str, owner: str | None = None) -> dict[str, object]:
    """A ScaledObject of another name than the walkthrough's, scaling Deployment ``target``,
    owned by the InferenceEndpointConfig ``owner``; its HPA is named after it, as KEDA does."""
    so = scaled_object()
    so["metadata"]["name"] = name
    so["spec"]["scaleTargetRef"]["name"] = target
    so["status"]["hpaName"] = f"keda-hpa-{name}"
    if owner is not None:
        so["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
                "kind": "InferenceEndpointConfig",
                "name": owner,
                "uid": "0b7c1d2e",
                "controller": True,
            }
        ]
    return so


def _hpa_of(so: dict[str, object]) -> dict[str, object]:
    hpa = keda_hpa()
    hpa["metadata"]["name"] = so["status"]["hpaName"]  # type: ignore[index]
    return hpa


@pytest.mark.parametrize(
    ("found", "others"),
    [
        # Named otherwise, scaling the endpoint's Deployment; another endpoint's beside it.
        (_renamed("qwen-autoscaler", "vllm-kvcache"), [_renamed("other-scaler", "other")]),
        # Owned by the endpoint, whatever it scales; one of the walkthrough's name owned by none
        # and scaling another Deployment is not the endpoint's.
        (
            _renamed("owned", "whatever", owner="vllm-kvcache"),
            [_renamed("vllm-kvcache-scaled-object", "other")],
        ),
    ],
    ids=["by-target", "by-owner"],
)
def test_the_scaler_row_finds_the_endpoints_scaled_object_whatever_its_name(
    kube: FakeKube, found: dict[str, object], others: list[dict[str, object]]
) -> None:
    """The name ``<endpoint>-scaled-object`` is the operator walkthrough's, not a fact from its
    source: the row reads the ScaledObject the endpoint owns, else the one that scales its
    Deployment, and the HPA KEDA names in its status."""
    _autoscaled(kube)
    for so in (*others, found):
        kube.put(SCALED_OBJECTS, so)
        kube.put(HPAS, _hpa_of(so))
    other_hpa = _hpa_of(others[0])
    other_hpa["status"]["conditions"][1]["status"] = "False"  # type: ignore[index]
    kube.put(HPAS, other_hpa)
    row = check_scaler(_clients(kube, {}), REF)
    assert row.status == "pass", row
    assert f"ScaledObject {found['metadata']['name']} Ready" in row.detail  # type: ignore[index]


def test_a_scaled_object_of_another_deployment_is_not_the_endpoints(kube: FakeKube) -> None:
    _autoscaled(kube)
    other = _renamed("other-scaler", "other")
    kube.put(SCALED_OBJECTS, other)
    kube.put(HPAS, _hpa_of(other))
    row = check_scaler(_clients(kube, {}), REF)
    assert row.status == "fail" and "no ScaledObject" in row.detail


def test_an_endpoint_without_autoscaling_skips_the_row(kube: FakeKube) -> None:
    _seed_cluster(kube)
    kube.put(SCALED_OBJECTS, scaled_object())  # left over: not the endpoint's business now
    assert check_scaler(_clients(kube, {}), REF).status == "skip"


NEW = "vllm-kvcache-7d9f-3"
A, B = "vllm-kvcache-7d9f-1", "vllm-kvcache-7d9f-2"
OPTS = ChaosOptions(prompt_words=600, seed=5, settle_s=0, flush_s=0, timeout_s=120, interval_s=5)


def _adds_a_pod_when_scaled(kube: FakeKube) -> list[dict[str, object]]:
    """The operator and the Deployment controller: once the IEC asks for more replicas than
    there are Pods, a new one, Ready. Returns the IEC's spec after each write."""
    specs: list[dict[str, object]] = []

    def on_write(fake: FakeKube, method: str, path: str) -> None:
        if path != IEC:
            return
        iec = fake.get(IEC)
        assert iec is not None
        specs.append(copy.deepcopy(iec["spec"]))
        auto = iec["spec"].get("autoScalingSpec")
        wanted = auto["minReplicaCount"] if auto else iec["spec"].get("replicas", 1)
        pods = [k for k in fake.objects if k.startswith(f"{PODS}/")]
        if wanted > len(pods) and fake.get(f"{PODS}/{NEW}") is None:
            pod = copy.deepcopy(fake.get(pods[0]))
            assert pod is not None
            pod["metadata"]["name"] = NEW
            fake.put(PODS, pod)

    kube.after_write.append(on_write)
    return specs


@pytest.fixture
def l2_dir() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as d:
        yield d


def _scale_out_row(kube: FakeKube, l2_dir: str, new_l2_dir: str) -> Check:
    def spec(d: str) -> TierSpec:
        return TierSpec("curvine", d, {"l0": 0.0, "l1": 0.0, "l2": 0.0, "cold": 0.0})

    with (
        FakeVllm(tiers=spec(l2_dir)) as a,
        FakeVllm(tiers=spec(l2_dir)) as b,
        FakeVllm(tiers=spec(new_l2_dir)) as new,
    ):
        transport = MapTransport({A: a.url, B: b.url, NEW: new.url})
        rep = Reporter(clock=FakeClock().clock(), tty=False, enabled=False)
        rows = run_chaos(_clients(kube, {}), CFG, REF, transport, OPTS, show=rep)
        assert len(new.prompts) == 1  # the new Pod's first request: the prefix
    return {c.stage: c for c in rows}[SCALED_OUT]


def test_chaos_scales_an_autoscaled_endpoint_out_and_its_new_pod_reads_l2(
    kube: FakeKube, l2_dir: str
) -> None:
    _autoscaled(kube)
    specs = _adds_a_pod_when_scaled(kube)
    row = _scale_out_row(kube, l2_dir, l2_dir)
    assert row.status == "pass", row
    assert "100.0 % from L2" in row.detail
    # The floor went above the Pods running, then back; replicas were not touched.
    floors = [s["autoScalingSpec"]["minReplicaCount"] for s in specs]  # type: ignore[index]
    assert floors[-1] == 1 and max(floors) > 1
    iec = kube.get(IEC)
    assert iec is not None and iec["spec"]["autoScalingSpec"] == AUTO


def test_chaos_fails_when_the_new_pod_does_not_share_the_l2(
    kube: FakeKube, l2_dir: str, tmp_path: Path
) -> None:
    _seed_cluster(kube)
    _adds_a_pod_when_scaled(kube)
    row = _scale_out_row(kube, l2_dir, str(tmp_path))
    assert row.status == "fail" and "0.0 % from L2" in row.detail
    iec = kube.get(IEC)
    assert iec is not None and iec["spec"].get("replicas", 1) == 1
