"""`verify` against doubles. AWS: botocore Stubber for SageMaker DescribeCluster (moto 5.2 drops
TieredStorageConfig) and for EKS ListAddons/DescribeAddon (to control each add-on's status).
Kubernetes: FakeKube, the local in-memory API server behind the official client. The cross-Pod
test talks to two real local HTTP servers (fake_vllm) through an injected transport."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from infra.config import AppConfig
from scripts.lib import runtime
from scripts.lib.clients import Clients
from scripts.lib.l2_rule import l2_settings
from scripts.lib.patch import compute_patch
from scripts.lib.verify.run import run_verify
from tests.doubles.fake_kube import FakeKube, json_patch
from tests.doubles.fake_vllm import FakeVllm
from tests.scripts.conftest import (
    DEPLOYMENTS,
    IECS,
    PODS,
    RECORDED_ENDPOINT,
    endpoint_config,
    make_cfg,
    recorded_cfg,
    recorded_deployment,
    recorded_endpoint,
)
from tests.scripts.test_lmcache_logs import MISS, SEED_HIT, SEED_RETRIEVE, SEED_STORE

# The stubs below answer for clusters named hyperpod-kvcache (the config's default names).
CFG = recorded_cfg()
REF = recorded_endpoint(CFG)
ADDONS = [
    "cert-manager",
    "aws-mountpoint-s3-csi-driver",
    "aws-fsx-csi-driver",
    "metrics-server",
    "aws-ebs-csi-driver",
    "amazon-sagemaker-hyperpod-inference",
]
CLUSTER_ARN = "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef123456"


def _cluster(status: str, tiered: dict[str, Any] | None) -> dict[str, Any]:
    desc = {
        "ClusterArn": CLUSTER_ARN,
        "ClusterName": "hyperpod-kvcache",
        "ClusterStatus": status,
        "InstanceGroups": [],
    }
    return {**desc, "TieredStorageConfig": tiered} if tiered else desc


def _stubbed_aws(
    tiered_pct: int = 20,
    addon_status: dict[str, str] | None = None,
    before: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    sm = boto3.client("sagemaker", region_name="us-west-2")
    sm_stub = Stubber(sm)
    for desc in before or []:  # what a wait reads first
        sm_stub.add_response("describe_cluster", desc, {"ClusterName": "hyperpod-kvcache"})
    sm_stub.add_response(
        "describe_cluster",
        {
            "ClusterArn": CLUSTER_ARN,
            "ClusterName": "hyperpod-kvcache",
            "ClusterStatus": "InService",
            "InstanceGroups": [],
            "TieredStorageConfig": {
                "Mode": "Enable",
                "InstanceMemoryAllocationPercentage": tiered_pct,
            },
        },
        {"ClusterName": "hyperpod-kvcache"},
    )
    eks = boto3.client("eks", region_name="us-west-2")
    eks_stub = Stubber(eks)
    eks_stub.add_response("list_addons", {"addons": ADDONS}, {"clusterName": "hyperpod-kvcache"})
    for name in ADDONS:
        status = (addon_status or {}).get(name, "ACTIVE")
        eks_stub.add_response(
            "describe_addon",
            {"addon": {"addonName": name, "status": status}},
            {"clusterName": "hyperpod-kvcache", "addonName": name},
        )
    sm_stub.activate()
    eks_stub.activate()
    return {"sagemaker": sm, "eks": eks}


def _patched_pod_template() -> dict[str, Any]:
    dep = recorded_deployment()
    return json_patch(dep, compute_patch(dep, l2_settings(CFG, REF)))["spec"]["template"]


def _seed_cluster(kube: FakeKube, patched: bool = True) -> None:
    dep = recorded_deployment()
    if patched:
        dep["spec"]["template"] = _patched_pod_template()
    kube.put(DEPLOYMENTS, dep)
    kube.put(IECS, endpoint_config())
    kube.put("/apis/storage.k8s.io/v1/csidrivers", {"metadata": {"name": "curvine"}, "spec": {}})
    kube.put(
        "/api/v1/namespaces/default/persistentvolumeclaims",
        {
            "metadata": {"name": "curvine-pvc", "namespace": "default"},
            "spec": {"storageClassName": "curvine-sc", "accessModes": ["ReadWriteMany"]},
            "status": {"phase": "Bound"},
        },
    )
    kube.put(
        "/apis/apps/v1/namespaces/aws-hyperpod/daemonsets",
        {
            "metadata": {"name": "hyperpod-ai-toolkit", "namespace": "aws-hyperpod"},
            "spec": {
                "selector": {"matchLabels": {"app": "ai-toolkit"}},
                "template": {
                    "metadata": {"labels": {"app": "ai-toolkit"}},
                    "spec": {"containers": [{"name": "toolkit", "image": "ai-toolkit:1"}]},
                },
            },
            "status": {
                "numberReady": 2,
                "desiredNumberScheduled": 2,
                "currentNumberScheduled": 2,
                "numberMisscheduled": 0,
            },
        },
    )
    for i in (1, 2):
        kube.put(
            "/api/v1/nodes",
            {
                "metadata": {
                    "name": f"hyperpod-i-0{i}",
                    "labels": {"hyperpod-kvcache/node-role": "gpu-inference"},
                }
            },
        )
        template = copy.deepcopy(dep["spec"]["template"])
        kube.put(
            PODS,
            {
                "metadata": {
                    "name": f"vllm-kvcache-7d9f-{i}",
                    "namespace": "default",
                    "labels": template["metadata"]["labels"],
                },
                "spec": {**template["spec"], "nodeName": f"hyperpod-i-0{i}"},
                "status": {
                    "podIP": f"10.1.0.{i}",
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            },
        )
    _seed_curvine(kube)


CURVINE_PODS = "/api/v1/namespaces/curvine/pods"
CURVINE_EVENTS = "/api/v1/namespaces/curvine/events"


def _curvine_pod(name: str, ready: bool = True, restarts: int = 0) -> dict[str, Any]:
    """A Curvine server Pod as the API server lists it: probed like the rendered ones."""
    probe = {"exec": {"command": ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8995"]}}
    status = {
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        "containerStatuses": [{
            "name": "server", "ready": ready, "restartCount": restarts, "image": "curvine:1",
            "imageID": "", "lastState": {"terminated": {"reason": "Error", "exitCode": 137}}
            if restarts else {}}],
    }  # fmt: skip
    return {
        "metadata": {"name": name, "namespace": "curvine"},
        "spec": {"containers": [{"name": "server", "image": "curvine:1", "readinessProbe": probe,
                                 "livenessProbe": probe, "startupProbe": probe}]},
        "status": status,
    }  # fmt: skip


def _seed_curvine(kube: FakeKube) -> None:
    for name in ("curvine-master-0", "curvine-worker-a", "curvine-worker-b"):
        kube.put(CURVINE_PODS, _curvine_pod(name))
    # A Pod without probes (the CSI controller) is not the row's business.
    csi = {
        "metadata": {"name": "curvine-csi-controller-0", "namespace": "curvine"},
        "spec": {"containers": [{"name": "csi", "image": "csi:1"}]},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }
    kube.put(CURVINE_PODS, csi)


class MapTransport:
    """Stands in for kubectl port-forward: Pod name -> a local server URL."""

    def __init__(self, urls: dict[str, str]) -> None:
        self.urls = urls
        self.opened: list[tuple[str, int]] = []

    @contextlib.contextmanager
    def open(self, pod: dict[str, Any], port: int) -> Iterator[str]:
        self.opened.append((pod["metadata"]["name"], port))
        yield self.urls[pod["metadata"]["name"]]


def _clients(kube: FakeKube, aws: dict[str, Any]) -> Clients:
    return Clients("us-west-2", aws_factory=aws.__getitem__, kube_factory=kube.api_client)


@pytest.fixture
def servers() -> Iterator[tuple[FakeVllm, FakeVllm]]:
    with FakeVllm(0.02) as a, FakeVllm(0.005) as b:
        yield a, b


def test_all_stages_pass_and_l2_verdict(kube: FakeKube, servers: tuple[FakeVllm, FakeVllm]) -> None:
    _seed_cluster(kube)
    kube.logs["default/vllm-kvcache-7d9f-1"] = f"{MISS}\n{SEED_STORE}\n"
    kube.logs["default/vllm-kvcache-7d9f-2"] = f"{SEED_HIT}\n{SEED_RETRIEVE}\n"
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
    assert [c.status for c in by_stage.values()] == ["pass"] * 10, checks
    assert by_stage["Curvine probes"].detail == "3 Pods Ready"
    assert cross is not None and cross.node_a != cross.node_b
    assert cross.verdict.hit_ratio == 1.0 and cross.verdict.l2_read_ms == pytest.approx(55.75)
    # Byte-identical prompt on both Pods, on the container's port (8000 in the recording).
    assert servers[0].prompts == servers[1].prompts and len(servers[0].prompts[0].split()) == 300
    assert [p for _, p in transport.opened] == [8000, 8000]
    # Logs were read from the model container (found by its env, not by index).
    log_reads = [p for m, p, _ in kube.requests if p.endswith("/log")]
    assert len(log_reads) == 2


def test_curvine_pods_failing_their_probes_are_named_with_the_kubelets_message(
    kube: FakeKube,
) -> None:
    """A worker whose readiness probe fails (the server does not accept connections) fails the
    row: it names the Pod, its restarts and the kubelet's probe message, and the command that
    shows more; a Ready Pod's restarts are reported without failing it."""
    _seed_cluster(kube)
    kube.put(CURVINE_PODS, _curvine_pod("curvine-worker-b", ready=False, restarts=3))
    kube.put(CURVINE_PODS, _curvine_pod("curvine-master-0", restarts=1))
    kube.put(CURVINE_EVENTS, {
        "metadata": {"name": "curvine-worker-b.1", "namespace": "curvine"},
        "involvedObject": {"kind": "Pod", "name": "curvine-worker-b", "namespace": "curvine"},
        "reason": "Unhealthy", "type": "Warning",
        "message": "Readiness probe failed: bash: connect: Connection refused"})  # fmt: skip
    checks, _ = run_verify(_clients(kube, _stubbed_aws()), CFG, REF, None)
    row = {c.stage: c for c in checks}["Curvine probes"]
    assert row.status == "fail"
    assert "curvine-worker-b: not Ready, server restarted 3x (last: Error)" in row.detail
    assert "Readiness probe failed: bash: connect: Connection refused" in row.detail
    assert "(2/3 Ready)" in row.detail and "curvine-master-0" not in row.detail
    assert row.fix.startswith("kubectl -n curvine describe pod curvine-worker-b")
    kube.put(CURVINE_PODS, _curvine_pod("curvine-worker-b"))
    checks, _ = run_verify(_clients(kube, _stubbed_aws()), CFG, REF, None)
    row = {c.stage: c for c in checks}["Curvine probes"]
    assert row.status == "pass"
    assert row.detail == "3 Pods Ready; curvine-master-0: server restarted 1x (last: Error)"


def test_the_curvine_probes_row_is_skipped_without_curvine(kube: FakeKube) -> None:
    _seed_cluster(kube)
    endpoint = {**RECORDED_ENDPOINT, "enable_l2_cache": False}
    no_curvine = make_cfg(kvcache={"endpoints": [endpoint], "curvine": {"enabled": False}})
    checks, _ = run_verify(
        _clients(kube, _stubbed_aws()), no_curvine, recorded_endpoint(no_curvine), None
    )
    row = {c.stage: c for c in checks}["Curvine probes"]
    assert row.status == "skip" and "kvcache.curvine.enabled is false" in row.detail


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


def test_a_renamed_model_container_is_still_checked(kube: FakeKube) -> None:
    """The container is found by LMCACHE_REMOTE_URL, as the policy finds it, not by name."""
    _seed_cluster(kube)
    for key, obj in kube.objects.items():
        if key.startswith(PODS + "/"):
            model = next(c for c in obj["spec"]["containers"] if c["name"] == REF.name)
            model["name"] = "inference"
            obj["spec"]["containers"].reverse()
    checks, _ = run_verify(_clients(kube, _stubbed_aws()), CFG, REF, None)
    by_stage = {c.stage: c for c in checks}
    assert by_stage["LMCACHE_REMOTE_URL is Curvine"].status == "pass"
    assert by_stage["Pods carry L2 settings"].status == "pass"


def test_zero_hit_on_second_pod_fails(kube: FakeKube, servers: tuple[FakeVllm, FakeVllm]) -> None:
    _seed_cluster(kube)
    kube.logs["default/vllm-kvcache-7d9f-1"] = SEED_STORE
    kube.logs["default/vllm-kvcache-7d9f-2"] = MISS
    transport = MapTransport(
        {"vllm-kvcache-7d9f-1": servers[0].url, "vllm-kvcache-7d9f-2": servers[1].url}
    )
    checks, cross = run_verify(
        _clients(kube, _stubbed_aws()), CFG, REF, transport, prompt_words=50, log_wait_s=0
    )
    assert checks[-1].stage == "cross-Pod L2" and checks[-1].status == "fail"
    assert cross is not None and cross.verdict.hit_ratio == 0.0


def test_a_mount_without_the_endpoint_subpath_fails(kube: FakeKube) -> None:
    # An older manual patch mounted the whole PVC: the policy mounts subPath <endpoint name>.
    _seed_cluster(kube)
    for key, obj in kube.objects.items():
        if key.startswith(PODS + "/"):
            model = next(c for c in obj["spec"]["containers"] if c["name"] == REF.name)
            for m in model["volumeMounts"]:
                m.pop("subPath", None)
    checks, _ = run_verify(_clients(kube, _stubbed_aws()), CFG, REF, None)
    pods = {c.stage: c for c in checks}["Pods carry L2 settings"]
    assert pods.status == "fail" and "mount at /mnt/curvine/l2cache is" in pods.detail
    assert "'subPath': 'vllm-kvcache'" in pods.detail


def test_an_endpoint_without_l2_skips_the_l2_stages(kube: FakeKube) -> None:
    _seed_cluster(kube, patched=False)
    no_l2 = REF.model_copy(update={"enable_l2_cache": False})
    checks, cross = run_verify(_clients(kube, _stubbed_aws()), CFG, no_l2, MapTransport({}))
    by_stage = {c.stage: c.status for c in checks}
    assert by_stage["Pods carry L2 settings"] == "skip" and by_stage["cross-Pod L2"] == "skip"
    assert cross is None


def test_cli_json_and_exit_code(kube: FakeKube, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from scripts import cli

    _seed_cluster(kube)
    aws = _stubbed_aws()
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: _clients(kube, aws))
    monkeypatch.setattr(runtime, "load_config", lambda env: CFG)
    # No --endpoint/--namespace: the first of kvcache.endpoints, default/vllm-kvcache.
    result = CliRunner().invoke(cli.app, ["verify", "--skip-l2-test", "--json"])
    data = json.loads(result.stdout)
    assert result.exit_code == 0 and data["ok"] is True, result.output
    statuses = {c["stage"]: c["status"] for c in data["checks"]}
    assert statuses["CSIDriver curvine"] == "pass"
    assert statuses["PVC default/curvine-pvc"] == "pass"
    assert statuses["Pods carry L2 settings"] == "pass"
    assert statuses["cross-Pod L2"] == "skip"

    unknown = CliRunner().invoke(cli.app, ["verify", "--endpoint", "nope"])
    assert unknown.exit_code == 2 and "configured: default/vllm-kvcache" in unknown.stderr


ENABLED = {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}


def _fake_progress(monkeypatch: pytest.MonkeyPatch) -> Any:
    from scripts.lib.progress import Reporter
    from tests.scripts.test_progress import FakeClock

    fake = FakeClock()
    monkeypatch.setattr(runtime, "PROGRESS", Reporter(clock=fake.clock(), tty=False))
    return fake


def test_wait_tiered_storage_follows_describe_cluster(
    kube: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from scripts import cli

    _fake_progress(monkeypatch)
    before = [_cluster("InService", None), _cluster("Updating", ENABLED)]
    aws = _stubbed_aws(before=before)  # then InService with the config
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: _clients(kube, aws))
    monkeypatch.setattr(runtime, "load_config", lambda env: CFG)
    result = CliRunner().invoke(cli.app, ["wait-tiered-storage", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["seconds"] == 60  # two 30 s polls of fake time
    assert data["state"].startswith("InService; Mode=Enable 20%")
    lines = result.stderr.splitlines()
    assert "Tiered Storage on hyperpod-kvcache: InService; Mode=None None%" in lines[1]
    assert "Tiered Storage on hyperpod-kvcache: Updating; Mode=Enable 20%" in lines[2]
    assert lines[-1].endswith("Tiered Storage on hyperpod-kvcache: done after 1m00s")


def test_wait_tiered_storage_times_out_in_one_json_object(
    kube: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from scripts import cli

    _fake_progress(monkeypatch)
    aws = _stubbed_aws(before=[_cluster("Updating", None)] * 2)
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: _clients(kube, aws))
    monkeypatch.setattr(runtime, "load_config", lambda env: CFG)
    args = ["wait-tiered-storage", "--json", "--timeout-minutes", "1", "--interval-seconds", "60"]
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 4
    data = json.loads(result.stdout)
    assert data["error"].startswith("timed out after 1m00s waiting for Tiered Storage")
    assert "(last state: Updating; Mode=None" in data["error"]


def test_verify_waits_for_nodes_and_rollout_first(
    kube: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from scripts import cli

    _seed_cluster(kube)
    fake = _fake_progress(monkeypatch)
    nodes = [kube.get(f"/api/v1/nodes/hyperpod-i-0{i}") for i in (1, 2)]
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}

    def sleep_and_join(seconds: float) -> None:  # the second node joins after the first poll
        fake.t += seconds
        for node in nodes:
            assert node is not None
            kube.put("/api/v1/nodes", {**node, "status": ready})

    monkeypatch.setattr(runtime.PROGRESS.clock, "sleep", sleep_and_join)
    dep = kube.get(f"{DEPLOYMENTS}/vllm-kvcache")
    assert dep is not None
    want = dep["spec"]["replicas"]
    dep["status"] = {"replicas": want, "updatedReplicas": want, "readyReplicas": want}
    aws = _stubbed_aws(before=[_cluster("InService", ENABLED)])
    monkeypatch.setattr(runtime, "CLIENTS", lambda cfg, ctx: _clients(kube, aws))
    monkeypatch.setattr(runtime, "load_config", lambda env: CFG)
    args = ["verify", "--skip-l2-test", "--json", "--wait-minutes", "10"]
    result = CliRunner().invoke(cli.app, args)
    data = json.loads(result.stdout)
    assert result.exit_code == 0, result.output
    assert data["waited_seconds"] == {"tiered_storage": 0, "gpu_nodes": 15, "rollout": 0}
    assert "GPU nodes Ready: 0/2 GPU nodes Ready (0s elapsed)" in result.stderr
    assert "rollout of default/vllm-kvcache: done after 0s" in result.stderr


# ---- the metrics row: a local Prometheus-compatible fake (tests/doubles/fake_prometheus.py) ----


def _prom(instant: dict[str, float]) -> Any:
    from tests.doubles.fake_prometheus import FakePrometheus

    return FakePrometheus(instant, {})


def _queries(cfg: AppConfig) -> Any:
    from infra.dashboards import Queries

    return Queries(cfg, cfg.kvcache.endpoints[0], window="1h")


@pytest.mark.parametrize(
    ("l2", "rps", "status"), [(0.31, 2.0, "pass"), (0.0, 2.0, "fail"), (0.0, 0.0, "pass")]
)
def test_metrics_row_reads_the_tier_hit_rates(l2: float, rps: float, status: str) -> None:
    from scripts.lib.report import PromClient
    from scripts.lib.verify.metrics import check_metrics

    cfg = make_cfg(observability={"enabled": True})
    q = _queries(cfg)
    fake = _prom({q.l0_hit_rate(): 0.5, q.l1_hit_rate(): 0.2, q.l2_hit_rate(): l2,
                  q.request_rate(): rps, q.ttft(0.95): 0.25})  # fmt: skip
    with fake.serve() as url:
        check = check_metrics(
            cfg, cfg.kvcache.endpoints[0], lambda: PromClient(url, "us-west-2", None)
        )
    assert check.status == status, check
    assert f"L2 {l2:.0%}" in check.detail and "TTFT p95 250 ms" in check.detail
    if status == "fail":
        assert "near zero while requests flow" in check.detail and "PYTHONHASHSEED" in check.fix


def test_metrics_row_is_skipped_without_samples_or_store() -> None:
    from scripts.lib.report import PromClient
    from scripts.lib.verify.metrics import check_metrics

    cfg = make_cfg(observability={"enabled": True})
    ref = cfg.kvcache.endpoints[0]
    with _prom({}).serve() as url:
        empty = check_metrics(cfg, ref, lambda: PromClient(url, "us-west-2", None))
    assert empty.status == "skip" and "no L2 samples" in empty.detail
    gone = check_metrics(cfg, ref, lambda: PromClient("http://127.0.0.1:9", "us-west-2", None))
    assert gone.status == "skip" and "not reachable" in gone.detail
    off = make_cfg(observability={"enabled": False})
    assert check_metrics(off, ref, lambda: None).status == "skip"


# ---- what operator 3.2 renders, and Pods that still name its sagemaker-hyperpod:// connector ----

OPERATOR_URL = "sagemaker-hyperpod://$(NODE_IP):9200"
EXTRA_CONFIG_3_2 = '{"sagemaker_hyperpod_shared_memory_name": "ai_toolkit_cache"}'


def _pods(kube: FakeKube) -> list[dict[str, Any]]:
    """The endpoint's Pods (the seeded cluster also holds Curvine's)."""
    return [
        obj
        for key, obj in kube.objects.items()
        if "/pods/" in key and obj["metadata"]["namespace"] == REF.namespace
    ]


def _model(pod: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod["spec"]["containers"] if c["name"] == REF.name)


def _verify_rows(kube: FakeKube) -> dict[str, Any]:
    checks, _ = run_verify(_clients(kube, _stubbed_aws()), CFG, REF, None)
    return {c.stage: c for c in checks}


def test_a_repeated_remote_url_whose_last_entry_is_the_operators_fails(kube: FakeKube) -> None:
    """The kubelet keeps the last of two entries with one name: the process runs with the
    operator's URL even though the first entry is Curvine's."""
    _seed_cluster(kube)
    for pod in _pods(kube):
        _model(pod)["env"].append({"name": "LMCACHE_REMOTE_URL", "value": OPERATOR_URL})
    url = _verify_rows(kube)["LMCACHE_REMOTE_URL is Curvine"]
    assert url.status == "fail"
    for pod in ("vllm-kvcache-7d9f-1", "vllm-kvcache-7d9f-2"):
        assert f"Pod {pod}: LMCACHE_REMOTE_URL={OPERATOR_URL}" in url.detail


def test_an_earlier_entry_naming_the_operators_connector_fails_too(kube: FakeKube) -> None:
    _seed_cluster(kube)
    for pod in _pods(kube):
        _model(pod)["env"].insert(0, {"name": "LMCACHE_REMOTE_URL", "value": OPERATOR_URL})
    url = _verify_rows(kube)["LMCACHE_REMOTE_URL is Curvine"]
    assert url.status == "fail" and OPERATOR_URL in url.detail


def test_every_container_carrying_the_url_is_checked(kube: FakeKube) -> None:
    """The rule patches each container that carries LMCACHE_REMOTE_URL; one left on the
    operator's connector fails even when the first is right."""
    _seed_cluster(kube)
    for pod in _pods(kube):
        second = copy.deepcopy(_model(pod))
        second["name"] = "second-model"
        second["env"] = [{"name": "LMCACHE_REMOTE_URL", "value": OPERATOR_URL}]
        second["volumeMounts"] = []
        pod["spec"]["containers"].append(second)
    rows = _verify_rows(kube)
    url, settings = rows["LMCACHE_REMOTE_URL is Curvine"], rows["Pods carry L2 settings"]
    assert (
        url.status == "fail"
        and f"container second-model: LMCACHE_REMOTE_URL={OPERATOR_URL}" in (url.detail)
    )
    assert settings.status == "fail" and "second-model: LMCACHE_REMOTE_SERDE absent" in (
        settings.detail
    )


def _as_operator_3_2_renders(kube: FakeKube) -> None:
    """The recorded Pods as operator 3.2 renders them: its URL and LMCACHE_EXTRA_CONFIG in the
    model container, none of the endpoint's own LMCACHE_* variables, no PYTHONHASHSEED."""
    _seed_cluster(kube, patched=False)
    for pod in _pods(kube):
        env = _model(pod)["env"]
        assert not [e for e in env if e["name"] in ("LMCACHE_REMOTE_SERDE", "PYTHONHASHSEED")]
        env.append({"name": "LMCACHE_EXTRA_CONFIG", "value": EXTRA_CONFIG_3_2})


def test_operator_3_2_pods_that_the_rule_missed_fail_naming_what_they_lack(
    kube: FakeKube,
) -> None:
    _as_operator_3_2_renders(kube)
    rows = _verify_rows(kube)
    url, settings = rows["LMCACHE_REMOTE_URL is Curvine"], rows["Pods carry L2 settings"]
    assert url.status == "fail" and f"LMCACHE_REMOTE_URL={OPERATOR_URL}" in url.detail
    assert settings.status == "fail"
    for missing in ("LMCACHE_REMOTE_SERDE absent", "PYTHONHASHSEED absent",
                    "no mount at /mnt/curvine/l2cache", "no volume"):  # fmt: skip
        assert missing in settings.detail, settings.detail


def test_operator_3_2_pods_admitted_through_the_rule_pass(kube: FakeKube) -> None:
    """The same Pods after the rendered Kyverno rule (tests/k8s/kyverno_eval) mutated them at
    admission: verify finds everything L2 needs."""
    from k8s.policy import rule
    from tests.k8s.kyverno_eval import apply_policy

    _as_operator_3_2_renders(kube)
    policy = {"spec": {"rules": [rule(CFG, REF)]}}
    for key, pod in list(kube.objects.items()):
        if "/pods/" in key:
            admitted = apply_policy(policy, {"kind": "Pod", **pod}, "CREATE")
            kube.objects[key] = {k: v for k, v in admitted.items() if k != "kind"}
    rows = _verify_rows(kube)
    assert rows["LMCACHE_REMOTE_URL is Curvine"].status == "pass", rows
    assert rows["Pods carry L2 settings"].status == "pass", rows


FSX_ID = "fs-0123456789abcdef0"


def _fsx_cfg() -> AppConfig:
    from tests.scripts.conftest import RECORDED_ENDPOINT

    return make_cfg(kvcache={"endpoints": [RECORDED_ENDPOINT], "l2_backend": "fsx_lustre",
                             "l2_backend_switch_confirmed": True})  # fmt: skip


def _cloudformation(cfg: AppConfig, deployed: bool) -> Any:
    """DescribeStacks of the kvcache stack through botocore's Stubber, like the calls above."""
    from infra.fsx_outputs import kvcache_stack_name

    cfn = boto3.client("cloudformation", region_name="us-west-2")
    stub = Stubber(cfn)
    name = kvcache_stack_name(cfg)
    if deployed:
        outputs = [{"OutputKey": "L2FileSystemId", "OutputValue": FSX_ID},
                   {"OutputKey": "L2FileSystemDnsName",
                    "OutputValue": f"{FSX_ID}.fsx.us-west-2.amazonaws.com"},
                   {"OutputKey": "L2FileSystemMountName", "OutputValue": "abcdefgh"}]  # fmt: skip
        stack = {"StackName": name, "CreationTime": "2025-01-01T00:00:00Z",
                 "StackStatus": "CREATE_COMPLETE", "Outputs": outputs}  # fmt: skip
        stub.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": name})
    else:
        stub.add_client_error("describe_stacks", "ValidationError",
                              f"Stack with id {name} does not exist")  # fmt: skip
    stub.activate()
    return cfn


def test_on_fsx_the_claim_checked_is_the_one_named_after_the_deployed_file_system(
    kube: FakeKube,
) -> None:
    """A replaced file system gets a new claim: verify reads which from the kvcache stack's
    outputs. The seeded Pods still mount curvine-pvc, so the Pods row names the FSx claim."""
    cfg = _fsx_cfg()
    _seed_cluster(kube)
    kube.put("/api/v1/namespaces/default/persistentvolumeclaims", {
        "metadata": {"name": f"fsx-l2-{FSX_ID}", "namespace": "default"},
        "spec": {"storageClassName": "", "accessModes": ["ReadWriteMany"]},
        "status": {"phase": "Bound"},
    })  # fmt: skip
    aws = {**_stubbed_aws(), "cloudformation": _cloudformation(cfg, deployed=True)}
    checks, _ = run_verify(_clients(kube, aws), cfg, REF, None)
    by_stage = {c.stage: c for c in checks}
    assert by_stage[f"PVC default/fsx-l2-{FSX_ID}"].status == "pass"
    pods = by_stage["Pods carry L2 settings"]
    assert pods.status == "fail" and f"fsx-l2-{FSX_ID}" in pods.detail


def test_on_fsx_before_a_deploy_the_claim_row_says_why_and_l2_rows_skip(kube: FakeKube) -> None:
    cfg = _fsx_cfg()
    _seed_cluster(kube)
    aws = {**_stubbed_aws(), "cloudformation": _cloudformation(cfg, deployed=False)}
    checks, cross = run_verify(_clients(kube, aws), cfg, REF, MapTransport({}))
    by_stage = {c.stage: c for c in checks}
    claim = by_stage["PVC default"]
    assert claim.status == "fail" and "the stack does not exist" in claim.detail
    assert "make deploy ENV=dev" in claim.detail
    assert by_stage["Pods carry L2 settings"].status == "skip" and cross is None
