"""Shared fixtures for the operations CLI tests.

Doubles: AWS calls run against moto (CloudFormation, EC2, CloudWatch Logs, ELBv2, EKS, STS) or
botocore's Stubber where moto lacks the API or drops fields (SageMaker DescribeCluster's
TieredStorageConfig, Service Quotas ListServiceQuotas, EKS add-on status). Kubernetes calls go
through the official client to ``FakeKube``, a local in-memory API server
(tests/doubles/fake_kube.py).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.config import AppConfig, parse_config
from infra.config.kvcache import EndpointConfig
from tests.doubles.fake_kube import FakeKube

FIXTURES = Path(__file__).parent / "fixtures"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
OPERATOR = "/apis/apps/v1/namespaces/hyperpod-inference-system/deployments"
IECS = "/apis/inference.sagemaker.aws.amazon.com/v1/namespaces/default/inferenceendpointconfigs"
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture(autouse=True)
def _no_real_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def make_cfg(**overrides: Any) -> AppConfig:
    return parse_config({"environment": "dev", "account": "111122223333", **overrides}, "test")


# The endpoint of the recorded Deployment (fixtures/endpoint_deployment.json): the operator named
# its model container and its Pods' app label after it.
RECORDED_ENDPOINT = {"name": "vllm-kvcache", "namespace": "default", "replicas": 1}


def recorded_cfg(**overrides: Any) -> AppConfig:
    """A config whose first endpoint is the recorded one (and a second one after it)."""
    other = {"name": "other-model", "namespace": "inference", "replicas": 1}
    endpoints = [RECORDED_ENDPOINT, other]
    return make_cfg(kvcache={"endpoints": endpoints}, **overrides)


def recorded_endpoint(cfg: AppConfig) -> EndpointConfig:
    return cfg.kvcache.endpoints[0]


@pytest.fixture
def cfg() -> AppConfig:
    return make_cfg()


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
        "metadata": {"name": "vllm-kvcache", "namespace": "default"},
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


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    with FakeKube() as fake:
        fake.after_write.append(rollout_simulator)
        yield fake


@pytest.fixture
def deployment() -> dict[str, Any]:
    return copy.deepcopy(recorded_deployment())
