"""What the operations CLI's tests read from a cluster: the API paths, the recorded Deployment the
operator rendered for an endpoint, the operator's own Deployment and an InferenceEndpointConfig,
and a stand-in for the Deployment controller on FakeKube (tests/doubles/fake_kube.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from tests.doubles.fake_kube import FakeKube
from tests.support.config import make_cfg

FIXTURES = Path(__file__).parents[1] / "scripts" / "fixtures"
DEPLOYMENTS = "/apis/apps/v1/namespaces/models/deployments"
OPERATOR = "/apis/apps/v1/namespaces/hyperpod-inference-system/deployments"
IECS = "/apis/inference.sagemaker.aws.amazon.com/v1/namespaces/models/inferenceendpointconfigs"
PODS = "/api/v1/namespaces/models/pods"

# The endpoint of the recorded Deployment (fixtures/endpoint_deployment.json): the operator named
# its model container and its Pods' app label after it.
RECORDED_ENDPOINT = {"name": "vllm-kvcache", "namespace": "models", "replicas": 1}


def recorded_cfg(**overrides: Any) -> AppConfig:
    """A config whose first endpoint is the recorded one (and a second one after it)."""
    other = {"name": "other-model", "namespace": "inference", "replicas": 1}
    endpoints = [RECORDED_ENDPOINT, other]
    return make_cfg(kvcache={"endpoints": endpoints}, **overrides)


def recorded_endpoint(cfg: AppConfig) -> EndpointConfig:
    return cfg.kvcache.endpoints[0]


def recorded_deployment() -> dict[str, Any]:
    return json.loads((FIXTURES / "endpoint_deployment.json").read_text())


def operator_deployment(replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "hyperpod-inference-controller-manager",
            "namespace": "hyperpod-inference-system",
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"control-plane": "controller-manager"}},
            "template": {
                "metadata": {"labels": {"control-plane": "controller-manager"}},
                "spec": {"containers": [{"name": "manager", "image": "operator:v3.2"}]},
            },
        },
        "status": {"replicas": replicas, "readyReplicas": replicas},
    }


def endpoint_config(state: str = "DeploymentComplete") -> dict[str, Any]:
    return {
        "apiVersion": "inference.sagemaker.aws.amazon.com/v1",
        "kind": "InferenceEndpointConfig",
        "metadata": {"name": "vllm-kvcache", "namespace": "models"},
        "spec": {"modelName": "qwen2-7b"},
        "status": {
            "state": state,
            "deploymentStatus": {"name": "vllm-kvcache", "lastUpdated": "2026-11-30T10:00:00Z"},
        },
    }


def rollout_simulator(fake: FakeKube, method: str, path: str) -> None:
    """Mimic the Deployment controller: status follows spec.replicas after every write."""
    for key, obj in fake.objects.items():
        if "/deployments/" in key:
            n = obj["spec"].get("replicas", 0)
            obj["status"] = {
                "replicas": n,
                "readyReplicas": n,
                "updatedReplicas": n,
                "availableReplicas": n,
            }
