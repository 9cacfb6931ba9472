"""The GPU driver row of ``preflight`` and ``verify``: does every GPU node's driver run the CUDA
the endpoints' images are built on (``lmcache/vllm-openai:v0.4.7``: CUDA 13.0)?

Doubles: FakeKube with the recorded endpoint's two GPU nodes and Pods (tests/support/verify.py).
A node's driver shows as NVIDIA GPU feature discovery labels it (``nvidia.com/cuda.runtime-version.
*``, the CUDA version the driver supports, or the ``nvidia.com/cuda.runtime.*`` it used before);
an endpoint Pod as the API server lists it, its model container Ready or restarting with the log
PyTorch writes when the driver is older than its CUDA."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig
from scripts.lib.checks import Check
from scripts.lib.gpu_driver import check_gpu_driver
from tests.doubles.fake_kube import FakeKube
from tests.support.config import make_cfg
from tests.support.endpoint_objects import PODS, RECORDED_ENDPOINT
from tests.support.verify import _clients, _seed_cluster

NODES = ("hyperpod-i-01", "hyperpod-i-02")
CUDA13 = "lmcache/vllm-openai:v0.4.7"
CUDA12 = "lmcache/vllm-openai:v0.3.15"
TORCH_TOO_OLD = (
    "RuntimeError: The NVIDIA driver on your system is too old (found version 12080). Please "
    "update your GPU driver by downloading and installing a new version from the URL: "
    "http://www.nvidia.com/Download/index.aspx"
)


def _cfg(image: str = CUDA13) -> AppConfig:
    endpoint = {**RECORDED_ENDPOINT, "image": image}
    return make_cfg(kvcache={"endpoints": [endpoint]})


def _label(kube: FakeKube, node: str, cuda: str, driver: str, former: bool = False) -> None:
    obj = kube.get(f"/api/v1/nodes/{node}")
    assert obj is not None
    major, minor = cuda.split(".")
    prefix = "nvidia.com/cuda.runtime." if former else "nvidia.com/cuda.runtime-version."
    obj["metadata"]["labels"] |= {
        f"{prefix}major": major,
        f"{prefix}minor": minor,
        "nvidia.com/cuda.driver-version.full": driver,
    }


def _pod(kube: FakeKube, i: int, image: str, ready: bool = True, restarts: int = 0) -> Any:
    """Endpoint Pod ``i`` running ``image`` in its model container."""
    pod = kube.get(f"{PODS}/vllm-kvcache-7d9f-{i}")
    assert pod is not None
    (model,) = [c for c in pod["spec"]["containers"] if c["name"] == "vllm-kvcache"]
    model["image"] = image
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    pod["status"]["containerStatuses"] = [
        {
            "name": "vllm-kvcache",
            "ready": ready,
            "restartCount": restarts,
            "image": image,
            "imageID": "",
            "state": {"running": {}} if ready else {"waiting": {"reason": "CrashLoopBackOff"}},
        }
    ]
    return pod


def _row(kube: FakeKube, cfg: AppConfig, endpoint: bool) -> Check:
    return check_gpu_driver(_clients(kube, {}), cfg, cfg.kvcache.endpoints[0] if endpoint else None)


@pytest.mark.parametrize("former", [False, True], ids=["labels", "former-labels"])
def test_nodes_whose_driver_runs_cuda_13_pass_before_a_deploy(kube: FakeKube, former: bool) -> None:
    _seed_cluster(kube)
    for node in NODES:
        _label(kube, node, "13.0", "580.95.05", former=former)
    row = _row(kube, _cfg(), endpoint=False)
    assert row.status == "pass", row


def test_a_node_whose_driver_stops_at_cuda_12_fails_naming_it_and_the_fix(kube: FakeKube) -> None:
    _seed_cluster(kube)
    _label(kube, NODES[0], "13.0", "580.95.05")
    _label(kube, NODES[1], "12.8", "570.172.08")
    row = _row(kube, _cfg(), endpoint=False)
    assert row.status == "fail", row
    assert "hyperpod-i-02 (driver 570.172.08, CUDA 12.8)" in row.detail
    assert "hyperpod-i-01" not in row.detail
    assert "v0.3.15" in (row.fix or "")


def test_an_image_built_on_cuda_12_runs_on_a_cuda_12_driver(kube: FakeKube) -> None:
    _seed_cluster(kube)
    for node in NODES:
        _label(kube, node, "12.8", "570.172.08")
    assert _row(kube, _cfg(CUDA12), endpoint=False).status == "pass"


def test_unlabelled_nodes_are_not_known_before_a_deploy(kube: FakeKube) -> None:
    """HyperPod's device plugin runs without GPU feature discovery: no label says the driver.
    preflight says so, with the command that reads it on the node."""
    _seed_cluster(kube)
    row = _row(kube, _cfg(), endpoint=False)
    assert row.status == "warn", row
    assert "kubectl debug node/hyperpod-i-01" in (row.fix or "")
    assert "nvidia-smi --query-gpu=driver_version" in (row.fix or "")


def test_ready_pods_of_the_image_show_the_driver_runs_it(kube: FakeKube) -> None:
    """After a deploy: the endpoint's model container Ready on each node ran CUDA 13 there."""
    _seed_cluster(kube)
    for i in (1, 2):
        _pod(kube, i, CUDA13)
    assert _row(kube, _cfg(), endpoint=True).status == "pass"


def test_a_node_with_no_ready_pod_of_the_image_stays_unknown(kube: FakeKube) -> None:
    _seed_cluster(kube)
    _pod(kube, 1, CUDA13)
    _pod(kube, 2, CUDA12)  # another image on the second node proves nothing of CUDA 13
    row = _row(kube, _cfg(), endpoint=True)
    assert row.status == "warn" and row.detail.startswith("hyperpod-i-02:"), row


def test_a_pod_that_torch_stops_on_an_old_driver_fails_with_what_the_driver_supports(
    kube: FakeKube,
) -> None:
    """The model container restarts; its previous run's log has PyTorch's refusal, with the
    CUDA version the driver supports (12080: 12.8)."""
    _seed_cluster(kube)
    _pod(kube, 1, CUDA13)
    _pod(kube, 2, CUDA13, ready=False, restarts=4)
    kube.previous_logs["models/vllm-kvcache-7d9f-2"] = f"INFO starting vLLM\n{TORCH_TOO_OLD}\n"
    kube.logs["models/vllm-kvcache-7d9f-2"] = "INFO starting vLLM\n"  # the run going on now
    row = _row(kube, _cfg(), endpoint=True)
    assert row.status == "fail", row
    assert "Pod vllm-kvcache-7d9f-2 on hyperpod-i-02: the driver supports CUDA 12.8" in row.detail
    logs = [p for m, p, _ in kube.requests if p.endswith("/vllm-kvcache-7d9f-2/log")]
    assert logs, "the restarting Pod's log was not read"


def test_a_pod_down_for_another_reason_is_not_blamed_on_the_driver(kube: FakeKube) -> None:
    _seed_cluster(kube)
    for node in NODES:
        _label(kube, node, "13.0", "580.95.05")
    _pod(kube, 1, CUDA13)
    _pod(kube, 2, CUDA13, ready=False, restarts=1)
    kube.previous_logs["models/vllm-kvcache-7d9f-2"] = (
        "torch.OutOfMemoryError: CUDA out of memory\n"
    )
    assert _row(kube, _cfg(), endpoint=True).status == "pass"


def test_no_gpu_node_and_an_image_of_unknown_cuda_are_skipped(kube: FakeKube) -> None:
    assert _row(kube, _cfg(), endpoint=False).status == "skip"  # no node yet
    _seed_cluster(kube)
    assert _row(kube, _cfg("registry.example/vllm:custom"), endpoint=False).status == "skip"
