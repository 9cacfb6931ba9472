"""``verify``'s stages in order on a recorded environment: all pass with an L2 hit, unpatched Pods
and a wrong Tiered Storage fail, an endpoint without L2 skips its rows, a second Pod that hits
nothing fails.

Doubles: botocore's Stubber for SageMaker DescribeCluster and the EKS add-ons, FakeKube for the
cluster, two local OpenAI-compatible servers (FakeVllm) for the cross-Pod test
(tests/support/verify.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from scripts.lib.verify.run import run_verify
from tests.doubles.fake_kube import FakeKube
from tests.doubles.fake_vllm import FakeVllm
from tests.support.endpoint_objects import PODS
from tests.support.lmcache_logs import MISS, SEED_HIT, SEED_RETRIEVE, SEED_STORE
from tests.support.verify import CFG, REF, MapTransport, _clients, _seed_cluster, _stubbed_aws


@pytest.fixture
def servers() -> Iterator[tuple[FakeVllm, FakeVllm]]:
    with FakeVllm(0.02) as a, FakeVllm(0.005) as b:
        yield a, b


def test_all_stages_pass_and_l2_verdict(kube: FakeKube, servers: tuple[FakeVllm, FakeVllm]) -> None:
    _seed_cluster(kube)
    kube.logs["models/vllm-kvcache-7d9f-1"] = f"{MISS}\n{SEED_STORE}\n"
    kube.logs["models/vllm-kvcache-7d9f-2"] = f"{SEED_HIT}\n{SEED_RETRIEVE}\n"
    transport = MapTransport(
        {"vllm-kvcache-7d9f-1": servers[0].url, "vllm-kvcache-7d9f-2": servers[1].url}
    )
    checks, cross = run_verify(
        _clients(kube, _stubbed_aws()),
        CFG,
        REF,
        transport,
        prompt_words=300,
        seed=11,
        log_wait_s=0,
    )
    # No metrics store in this double: the metrics row is skipped and the logs decide.
    by_stage = {c.stage: c for c in checks}
    metrics = by_stage.pop("metrics: tier hit rates")
    assert metrics.status == "skip" and "logs are used" in metrics.detail, metrics
    # A fixed replica count: no scaler to read.
    assert by_stage.pop("scaler models/vllm-kvcache").status == "skip"
    assert [c.status for c in by_stage.values()] == ["pass"] * 12, checks
    assert by_stage["Curvine probes"].detail == "3 Pods Ready"
    # The recorded Pods, Ready on both GPU nodes, run a CUDA 12 image there.
    assert by_stage["GPU driver"].detail.startswith("2 GPU node(s) run CUDA 12:")
    assert by_stage["weights cache on Curvine's NVMe"].detail == (
        "no weights cache under /opt/dlami/nvme"
    )
    assert cross is not None and cross.node_a != cross.node_b
    assert cross.verdict.hit_ratio == 1.0 and cross.verdict.l2_read_ms == pytest.approx(55.75)
    # Byte-identical prompt on both Pods, on the container's port (8000 in the recording).
    assert servers[0].prompts == servers[1].prompts and len(servers[0].prompts[0].split()) == 300
    assert [p for _, p in transport.opened] == [8000, 8000]
    # Logs were read from the model container (found by its env, not by index): each Pod's whole
    # log before the test (LMCache's degraded line is written at start), its window after.
    log_reads = [p for m, p, _ in kube.requests if p.endswith("/log")]
    assert len(log_reads) == 4 and log_reads[:2] == log_reads[2:]


def test_unpatched_pods_and_wrong_tiered_storage_fail(kube: FakeKube) -> None:
    _seed_cluster(kube, patched=False)
    aws = _stubbed_aws(tiered_pct=40, addon_status={"aws-fsx-csi-driver": "DEGRADED"})
    checks, cross = run_verify(_clients(kube, aws), CFG, REF, MapTransport({}))
    by_stage = {c.stage: c for c in checks}
    assert (
        by_stage["tiered storage"].status == "fail" and "40%" in by_stage["tiered storage"].detail
    )
    assert (
        by_stage["add-ons ACTIVE"].status == "fail"
        and "aws-fsx-csi-driver=DEGRADED" in by_stage["add-ons ACTIVE"].detail
    )
    pods = by_stage["Pods carry L2 settings"]
    assert pods.status == "fail" and "no mount" in pods.detail
    url = by_stage["LMCACHE_REMOTE_URL is Curvine"]
    # One row names each Pod, the value it runs with, the value wanted and the fix.
    assert url.status == "fail"
    for pod in ("vllm-kvcache-7d9f-1", "vllm-kvcache-7d9f-2"):
        assert f"Pod {pod}: LMCACHE_REMOTE_URL=sagemaker-hyperpod://$(NODE_IP):9200" in url.detail
    assert "(want fs://localhost:0/mnt/curvine/l2cache/)" in url.detail
    assert "kubectl get clusterpolicy hyperpod-kvcache-l2-curvine" in url.fix
    assert "delete pod vllm-kvcache-7d9f-1 vllm-kvcache-7d9f-2" in url.fix
    assert by_stage["cross-Pod L2"].status == "skip" and cross is None


def test_zero_hit_on_second_pod_fails(kube: FakeKube, servers: tuple[FakeVllm, FakeVllm]) -> None:
    _seed_cluster(kube)
    kube.logs["models/vllm-kvcache-7d9f-1"] = SEED_STORE
    kube.logs["models/vllm-kvcache-7d9f-2"] = MISS
    transport = MapTransport(
        {"vllm-kvcache-7d9f-1": servers[0].url, "vllm-kvcache-7d9f-2": servers[1].url}
    )
    checks, cross = run_verify(
        _clients(kube, _stubbed_aws()), CFG, REF, transport, prompt_words=50, log_wait_s=0
    )
    assert checks[-1].stage == "cross-Pod L2" and checks[-1].status == "fail"
    assert cross is not None and cross.verdict.hit_ratio == 0.0


def test_an_endpoint_without_l2_skips_the_l2_stages(kube: FakeKube) -> None:
    _seed_cluster(kube, patched=False)
    no_l2 = REF.model_copy(update={"l2_backend": "none"})
    checks, cross = run_verify(_clients(kube, _stubbed_aws()), CFG, no_l2, MapTransport({}))
    by_stage = {c.stage: c.status for c in checks}
    assert by_stage["Pods carry L2 settings"] == "skip" and by_stage["cross-Pod L2"] == "skip"
    assert cross is None


def _with_hash_seed(kube: FakeKube) -> None:
    """The operator's Pods as rendered for a tieredstorage endpoint: its env's PYTHONHASHSEED
    kept, the sagemaker-hyperpod:// URL untouched."""
    for path, pod in kube.objects.items():
        if not path.startswith(PODS + "/"):
            continue
        for c in pod["spec"]["containers"]:
            if any(e["name"] == "LMCACHE_REMOTE_URL" for e in c.get("env") or []):
                c["env"].append({"name": "PYTHONHASHSEED", "value": "0"})


def test_a_tieredstorage_endpoint_keeps_the_operators_url_and_runs_the_cross_node_test(
    kube: FakeKube, servers: tuple[FakeVllm, FakeVllm]
) -> None:
    """No Curvine driver, claim or policy rows: the Pods must carry sagemaker-hyperpod://, and the
    cross-Pod test (two nodes) says whether the managed tier served the second node."""
    _seed_cluster(kube, patched=False)
    _with_hash_seed(kube)
    kube.logs["models/vllm-kvcache-7d9f-1"] = f"{MISS}\n{SEED_STORE}\n"
    kube.logs["models/vllm-kvcache-7d9f-2"] = f"{SEED_HIT}\n{SEED_RETRIEVE}\n"
    transport = MapTransport(
        {"vllm-kvcache-7d9f-1": servers[0].url, "vllm-kvcache-7d9f-2": servers[1].url}
    )
    ts = REF.model_copy(update={"l2_backend": "tieredstorage"})
    checks, cross = run_verify(
        _clients(kube, _stubbed_aws()), CFG, ts, transport, prompt_words=50, seed=3, log_wait_s=0
    )
    by_stage = {c.stage: c for c in checks}
    assert by_stage["CSIDriver curvine"].status == "skip"
    assert by_stage["PVC models"].status == "skip"
    url = by_stage["LMCACHE_REMOTE_URL is Tiered Storage"]
    assert url.status == "pass" and "sagemaker-hyperpod://" in url.detail
    assert "LMCACHE_REMOTE_URL is Curvine" not in by_stage
    assert by_stage["cross-Pod L2"].status == "pass"
    assert cross is not None and cross.node_a != cross.node_b


def test_a_tieredstorage_endpoint_repointed_at_curvine_fails_its_url_row(kube: FakeKube) -> None:
    _seed_cluster(kube, patched=True)
    ts = REF.model_copy(update={"l2_backend": "tieredstorage"})
    checks, cross = run_verify(_clients(kube, _stubbed_aws()), CFG, ts, MapTransport({}))
    url = {c.stage: c for c in checks}["LMCACHE_REMOTE_URL is Tiered Storage"]
    assert url.status == "fail" and "LMCACHE_REMOTE_URL=fs://localhost:0" in url.detail
    assert checks[-1].stage == "cross-Pod L2" and checks[-1].status == "skip" and cross is None


def test_an_fsx_or_l1_only_endpoint_is_not_checked_for_curvines_driver(kube: FakeKube) -> None:
    """Neither mounts a Curvine volume: the CSIDriver row is skipped, not failed, when Curvine's
    driver is absent; an L1-only endpoint also has no claim row."""
    _seed_cluster(kube, patched=False)
    del kube.objects["/apis/storage.k8s.io/v1/csidrivers/curvine"]
    for backend in ("none", "fsx_lustre"):
        ref = REF.model_copy(update={"l2_backend": backend})
        checks, _ = run_verify(_clients(kube, _stubbed_aws()), CFG, ref, None)
        by_stage = {c.stage: c for c in checks}
        assert by_stage["CSIDriver curvine"].status == "skip", backend
    none = REF.model_copy(update={"l2_backend": "none"})
    checks, _ = run_verify(_clients(kube, _stubbed_aws()), CFG, none, None)
    assert {c.stage: c for c in checks}["PVC models"].status == "skip"


def test_a_weights_cache_added_after_the_deploy_fails_its_row(kube: FakeKube) -> None:
    """An owner's endpoint (operator 3.3+) that caches weights at the CRD's default host path,
    the NVMe Curvine fills, with no budget in config: the row names it; the others still run."""
    _seed_cluster(kube)
    owner = {
        "metadata": {"name": "owner-llm", "namespace": "team-a"},
        "spec": {"modelName": "owner-llm", "modelCacheConfig": {"weightsCache": {"enabled": True}}},
    }
    kube.put(
        "/apis/inference.sagemaker.aws.amazon.com/v1/namespaces/team-a/inferenceendpointconfigs",
        owner,
    )
    checks, _ = run_verify(_clients(kube, _stubbed_aws()), CFG, REF, None)
    by_stage = {c.stage: c for c in checks}
    row = by_stage["weights cache on Curvine's NVMe"]
    assert row.status == "fail"
    assert row.detail.startswith("InferenceEndpointConfig team-a/owner-llm at /opt/dlami/nvme:")
    assert "kvcache.curvine.worker.weights_cache_gib" in row.fix
    assert by_stage["Curvine probes"].status == "pass"
