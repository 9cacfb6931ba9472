"""The names the app gives what it deploys (parsing, and the rendered charts for the endpoints'
SageMaker names; no double).

Namespaces the app renders as its own (the endpoints', Kyverno's, Curvine's): the app labels
them for Pod Security, binds the endpoints' baseline admission policy and an ingress
NetworkPolicy there, and deletes them on destroy. None of that may happen to a namespace the
cluster or a platform add-on owns. Endpoint names: each names a SageMaker endpoint."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig, load_config
from k8s.app import build_charts
from tests.support.config import SOURCE, env_raw, existing_cluster, refusal


def iecs(config: AppConfig) -> list[dict[str, Any]]:
    objs = [o for _, chart in build_charts(config).ordered for o in chart.to_json()]
    return [o for o in objs if o["kind"] == "InferenceEndpointConfig"]


# The cluster's and the platform add-ons' namespaces, as their owners name them: Kubernetes,
# the inference operator add-on (chart shortPrefix hyperpod-inference + "-system"), HyperPod's
# dependencies chart (health-monitoring agent), the cert-manager add-on, GuardDuty's agent.
PLATFORM = [
    "default", "kube-system", "kube-public", "kube-node-lease", "kube-anything",
    "hyperpod-inference-system", "aws-hyperpod", "cert-manager", "amazon-guardduty",
]  # fmt: skip


@pytest.mark.parametrize("namespace", PLATFORM)
def test_an_endpoint_in_a_platform_namespace_is_refused(namespace: str) -> None:
    field = "kvcache.endpoints.0.namespace"
    message = refusal({field: namespace})
    assert message is not None, f"an endpoint in {namespace} was accepted"
    assert message.startswith(f"{SOURCE}: {field} = {namespace!r}: allowed: a namespace of the")
    assert f"fix: set {field} to another name" in message


@pytest.mark.parametrize("namespace", PLATFORM)
@pytest.mark.parametrize("owner", ["kyverno", "curvine"])
def test_kyverno_or_curvine_in_a_platform_namespace_is_refused(owner: str, namespace: str) -> None:
    field = f"kvcache.{owner}.namespace"
    message = refusal({field: namespace})
    assert message is not None and message.startswith(f"{SOURCE}: {field} = {namespace!r}:")


def test_an_installed_kyvernos_namespace_is_not_the_apps_to_refuse() -> None:
    """With kyverno.install false the app renders no Kyverno namespace: the cluster's Kyverno
    lives where it lives."""
    overrides = {
        "kvcache.kyverno.install": False,
        "kvcache.kyverno.namespace": "kube-system",
    }
    message = refusal(overrides)
    # Refused for another reason only: this config creates its cluster (no Kyverno there).
    assert message is not None and "kvcache.kyverno.install = False" in message


def test_an_endpoint_in_kyvernos_namespace_is_refused() -> None:
    """Kyverno's Pods are not the endpoints': the endpoints' admission policy would judge them.
    (An endpoint in Curvine's namespace is refused on kvcache.curvine.namespace.)"""
    field = "kvcache.endpoints.0.namespace"
    message = refusal({field: "kyverno"})
    assert message is not None and message.startswith(f"{SOURCE}: {field} = 'kyverno':")


@pytest.mark.parametrize("installs", [True, False], ids=["app-installs", "cluster-has-one"])
def test_an_endpoint_in_the_namespace_of_an_installed_kyverno_is_refused_too(
    installs: bool,
) -> None:
    """On an existing cluster whose own Kyverno serves the L2 policy (``kyverno.install``
    false), its Pods are still not the endpoints': the admission policy bound in an endpoint
    namespace would judge Kyverno's own, and the app would fence and on destroy delete it."""
    overrides = {
        "existing_cluster": existing_cluster(),
        "kvcache.kyverno.install": installs,
        "kvcache.kyverno.namespace": "policy-engine",
    }
    assert refusal(overrides) is None
    field = "kvcache.endpoints.0.namespace"
    message = refusal({**overrides, field: "policy-engine"})
    assert message is not None and message.startswith(f"{SOURCE}: {field} = 'policy-engine':")


# --- endpoint names: each names a SageMaker endpoint, unique per account and Region ------------


def _two_endpoints(**second: Any) -> list[dict[str, Any]]:
    (first,) = env_raw()["kvcache"]["endpoints"]
    return [{**first, "replicas": 1}, {**first, "replicas": 1, **second}]


def test_one_endpoint_name_in_two_namespaces_is_refused() -> None:
    """Two InferenceEndpointConfigs may share a name across namespaces, two SageMaker
    endpoints may not."""
    message = refusal({"kvcache.endpoints": _two_endpoints(namespace="inference-b")})
    assert message is not None
    assert message.startswith(f"{SOURCE}: kvcache.endpoints.1.name = 'qwen3-8b': allowed:")


def test_two_endpoint_names_in_two_namespaces_are_accepted() -> None:
    both = _two_endpoints(namespace="inference-b", name="qwen3-8b-b")
    assert refusal({"kvcache.endpoints": both}) is None


@pytest.mark.parametrize("field", ["endpointName", "modelName"])
def test_each_environment_names_its_own_sagemaker_endpoint_and_model(field: str) -> None:
    """dev, test and prod ship one endpoint name in one account and Region: their SageMaker
    endpoints, and the models the operator creates for them, must still differ."""
    names = {
        env: {o["spec"][field] for o in iecs(load_config(env))} for env in ("dev", "test", "prod")
    }
    assert names == {"dev": {"dev-qwen3-8b"}, "test": {"test-qwen3-8b"}, "prod": {"prod-qwen3-8b"}}


def test_a_name_too_long_for_a_sagemaker_endpoint_is_refused_at_its_boundary() -> None:
    """SageMaker endpoint names have at most 63 characters; dev's is "dev-" + the name."""
    field = "kvcache.endpoints.0.name"
    assert refusal({field: "a" * 59}) is None
    message = refusal({field: "a" * 60})
    assert message is not None and message.startswith(f"{SOURCE}: {field} = {'a' * 60!r}:")
