"""The environment verify's tests check: a recorded endpoint with its Pods in FakeKube, the AWS
answers through botocore's Stubber, and local model servers.

`verify` against doubles. AWS: botocore Stubber for SageMaker DescribeCluster (moto 5.2 drops
TieredStorageConfig) and for EKS ListAddons/DescribeAddon (to control each add-on's status).
Kubernetes: FakeKube, the local in-memory API server behind the official client. The cross-Pod
test talks to two real local HTTP servers (fake_vllm) through an injected transport."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from k8s.l2_pod import l2_settings
from k8s.names import curvine_claim
from scripts.lib import runtime
from scripts.lib.clients import Clients
from scripts.lib.patch import compute_patch
from scripts.lib.progress import Reporter
from tests.doubles.fake_kube import FakeKube, json_patch
from tests.support.endpoint_objects import (
    DEPLOYMENTS,
    IECS,
    PODS,
    endpoint_config,
    recorded_cfg,
    recorded_deployment,
    recorded_endpoint,
)
from tests.support.progress import FakeClock

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
    settings = l2_settings(CFG, REF, curvine_claim(CFG))
    return json_patch(dep, compute_patch(dep, settings))["spec"]["template"]


def _seed_cluster(kube: FakeKube, patched: bool = True) -> None:
    dep = recorded_deployment()
    if patched:
        dep["spec"]["template"] = _patched_pod_template()
    kube.put(DEPLOYMENTS, dep)
    kube.put(IECS, endpoint_config())
    kube.put("/apis/storage.k8s.io/v1/csidrivers", {"metadata": {"name": "curvine"}, "spec": {}})
    kube.put(
        "/api/v1/namespaces/models/persistentvolumeclaims",
        {
            "metadata": {"name": curvine_claim(CFG), "namespace": "models"},
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
                    "namespace": "models",
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


def _curvine_pod(name: str, ready: bool = True, restarts: int = 0) -> dict[str, Any]:
    """A Curvine server Pod as the API server lists it: probed like the rendered ones."""
    probe = {"exec": {"command": ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8995"]}}
    status = {
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        "containerStatuses": [
            {
                "name": "server",
                "ready": ready,
                "restartCount": restarts,
                "image": "curvine:1",
                "imageID": "",
                "lastState": {"terminated": {"reason": "Error", "exitCode": 137}}
                if restarts
                else {},
            }
        ],
    }
    return {
        "metadata": {"name": name, "namespace": "curvine"},
        "spec": {
            "containers": [
                {
                    "name": "server",
                    "image": "curvine:1",
                    "readinessProbe": probe,
                    "livenessProbe": probe,
                    "startupProbe": probe,
                }
            ]
        },
        "status": status,
    }


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


ENABLED = {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 20}


def _fake_progress(monkeypatch: pytest.MonkeyPatch) -> Any:
    fake = FakeClock()
    monkeypatch.setattr(runtime, "PROGRESS", Reporter(clock=fake.clock(), tty=False))
    return fake
