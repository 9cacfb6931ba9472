"""``preflight`` on an existing cluster: a weights cache of the owner's inference operator (3.3+)
on the NVMe Curvine's workers fill is refused unless config budgets it, and never allowed inside
Curvine's data directory.

Doubles: FakeKube (tests/doubles/fake_kube.py) serves the Kubernetes API: the objects are as the
API server would store them from operator 3.3's CRDs (k8s/schemas/hyperpod-inference/3.3, and
the ModelWeightsCacheConfig CRD of the same commit: its ``enabled`` defaults to true, its
``hostPath`` to /opt/dlami/nvme, and the server fills neither in the stored objects here, so the
check must apply the defaults itself). A cluster whose operator predates 3.3 has no
modelweightscacheconfigs resource: FakeKube answers its list 404. The full run uses moto and
botocore's Stubber as tests/support/preflight_existing.py describes.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig, parse_config
from infra.facts.instances import GPU_INSTANCES
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.weights_cache import STAGE, check_weights_cache
from tests.doubles.fake_kube import FakeKube
from tests.support.config import ENV, SOURCE, with_overrides
from tests.support.preflight_existing import _addons, _cfg, _eks, _oidc, _run, _sagemaker

GROUP = "/apis/inference.sagemaker.aws.amazon.com/v1"
IECS, MWCCS = "inferenceendpointconfigs", "modelweightscacheconfigs"
NVME_GIB = GPU_INSTANCES["ml.g6e.4xlarge"].nvme_gb * 10**9 // 2**30  # 558


def _cfg_with(**overrides: Any) -> AppConfig:
    """The test environment: Curvine 400 + 10 GiB of each ml.g6e.4xlarge node's NVMe."""
    return parse_config(with_overrides(overrides), SOURCE, ENV)


def _iec(name: str, cache: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"modelName": name, "instanceType": "ml.g6e.4xlarge"}
    if cache is not None:
        spec["modelCacheConfig"] = {"weightsCache": cache}
    return {"metadata": {"name": name, "namespace": "team-a"}, "spec": spec}


def _mwcc(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    source = {"modelSourceType": "s3", "s3Storage": {"bucketName": "b", "region": "us-west-2"}}
    return {
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"modelSourceConfig": source, **spec},
    }


def _check(kube: FakeKube, cfg: AppConfig) -> Check:
    return check_weights_cache(Clients("us-west-2", kube_factory=kube.api_client), cfg)


def _put(kube: FakeKube, plural: str, obj: dict[str, Any]) -> None:
    kube.put(f"{GROUP}/namespaces/{obj['metadata']['namespace']}/{plural}", obj)


def test_an_operator_before_3_3_has_no_weights_cache_to_find() -> None:
    with FakeKube() as kube:
        kube.plurals.discard(MWCCS)  # no ModelWeightsCacheConfig CRD before 3.3
        _put(kube, IECS, _iec("plain", None))
        check = _check(kube, _cfg_with())
    assert (check.status, check.detail) == ("pass", "no weights cache under /opt/dlami/nvme")
    assert kube.writes() == []


def test_a_weights_cache_on_the_default_path_without_a_budget_fails_with_the_numbers() -> None:
    """hostPath left out: the CRD's default, /opt/dlami/nvme, the disk Curvine fills."""
    with FakeKube() as kube:
        _put(kube, IECS, _iec("owner-llm", {"enabled": True}))
        check = _check(kube, _cfg_with())
    assert check.status == "fail"
    assert check.detail == (
        "InferenceEndpointConfig team-a/owner-llm at /opt/dlami/nvme: on the disk Curvine's "
        f"workers fill, with no room budgeted (ml.g6e.4xlarge NVMe {NVME_GIB} GiB: Curvine "
        "capacity 400 (its reserve 10 inside it) + weights cache 0 GiB)"
    )
    assert check.fix == (
        "set kvcache.curvine.worker.weights_cache_gib to the size of the weights cached per node "
        f"(at most {NVME_GIB - 400} with this capacity), or set their hostPath off /opt/dlami/nvme"
    )


def test_a_budgeted_weights_cache_beside_curvine_passes() -> None:
    with FakeKube() as kube:
        _put(kube, IECS, _iec("owner-llm", {"enabled": True, "hostPath": "/opt/dlami/nvme/w"}))
        _put(kube, MWCCS, _mwcc("prewarm", {}))  # enabled and hostPath: the CRD's defaults
        check = _check(kube, _cfg_with(**{"kvcache.curvine.worker.weights_cache_gib": 100}))
    assert check.status == "pass"
    assert "InferenceEndpointConfig team-a/owner-llm at /opt/dlami/nvme/w" in check.detail
    assert "ModelWeightsCacheConfig team-a/prewarm at /opt/dlami/nvme" in check.detail


def test_a_weights_cache_inside_curvines_data_fails_whatever_the_budget() -> None:
    with FakeKube() as kube:
        _put(kube, MWCCS, _mwcc("bad", {"hostPath": "/opt/dlami/nvme/curvine-data/./weights"}))
        check = _check(kube, _cfg_with(**{"kvcache.curvine.worker.weights_cache_gib": 100}))
    assert check.status == "fail"
    assert check.detail == (
        "ModelWeightsCacheConfig team-a/bad writes weights inside Curvine's worker data "
        "/opt/dlami/nvme/curvine-data"
    )


@pytest.mark.parametrize(
    ("plural", "obj"),
    [
        (IECS, _iec("off", {"hostPath": "/opt/dlami/nvme"})),  # enabled defaults to false
        (IECS, _iec("elsewhere", {"enabled": True, "hostPath": "/var/lib/weights"})),
        (IECS, _iec("lookalike", {"enabled": True, "hostPath": "/opt/dlami/nvme-other"})),
        (MWCCS, _mwcc("disabled", {"enabled": False})),
    ],
    ids=["endpoint cache off", "off the NVMe", "a sibling of the mount", "config disabled"],
)
def test_caches_that_are_off_or_off_the_nvme_pass(plural: str, obj: dict[str, Any]) -> None:
    with FakeKube() as kube:
        _put(kube, plural, obj)
        check = _check(kube, _cfg_with())
    assert check.status == "pass"


def test_without_curvine_the_disk_is_not_checked() -> None:
    with FakeKube() as kube:
        _put(kube, IECS, _iec("owner-llm", {"enabled": True}))
        check = _check(kube, _cfg_with(**{"kvcache.l2_backend": "fsx_lustre"}))
        sent = list(kube.requests)
    assert check.status == "skip" and sent == []


def test_a_refused_list_is_a_warning_not_a_pass() -> None:
    with FakeKube() as kube:
        kube.fail[("GET", f"{GROUP}/{IECS}")] = 403
        check = _check(kube, _cfg_with())
    assert check.status == "warn" and "403" in check.detail


def test_the_existing_cluster_preflight_reports_the_owners_weights_cache(aws: None) -> None:
    eks, stub = _eks()
    _addons(stub)
    stub.activate()
    addons = {
        k: {"mode": "skip"}
        for k in ("cert_manager", "metrics_server", "fsx_csi", "s3_csi", "inference_operator")
    }
    with FakeKube() as kube:
        _put(kube, IECS, _iec("owner-llm", {"enabled": True}))
        checks = _run(_cfg(_oidc(), addons=addons), eks, _sagemaker(), kube=kube.api_client)
    assert checks[STAGE].status == "fail"
    assert "InferenceEndpointConfig team-a/owner-llm" in checks[STAGE].detail
