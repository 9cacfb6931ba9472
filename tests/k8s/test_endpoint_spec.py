"""Every configured endpoint becomes an InferenceEndpointConfig whose spec carries exactly its
config. Checked on every rendered environment (dev, test, prod, the FSx variant) and on config
variants that take the branches the shipped files never do (a second endpoint with L1 and L2 off,
its own instance type, ports and routing; a Hugging Face model). The expectations are written
from the config and from what the operator and vLLM read, never from k8s/endpoints.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig, parse_config
from infra.config import operator_versions as ov
from infra.config.kvcache import EndpointConfig
from k8s.app import build_charts, manifests
from tests.support.config import SOURCE, with_overrides

Obj = dict[str, Any]
IEC = "InferenceEndpointConfig"
# Where the operator's init container writes the weights, in the volume it names model-weights
# (tests/k8s/fixtures/operator_pod.yaml): vLLM's --model must point there.
MODEL_VOLUME, MODEL_PATH = "model-weights", "/opt/ml/model"

# Takes every branch the shipped configs leave out: a GPU group with 4 GPUs a node, and next to
# dev's endpoint a second one with tensor parallelism 2, its own instance type, namespace, ports,
# arguments, bucket and routing, and both cache tiers off.
SECOND: dict[str, Any] = {
    "name": "llama-tp2",
    "namespace": "serving",
    "instance_type": "ml.g6e.12xlarge",
    "replicas": 3,
    "tensor_parallel_size": 2,
    "container_port": 8080,
    "metrics_port": 8080,  # vLLM serves /metrics on the port it listens on
    "args": ["--max-model-len", "8192", "--enforce-eager"],
    "routing_strategy": "kvaware",
    "enable_l1_cache": False,
    "l2_backend": "none",
    "model": {
        "source": "s3",
        "s3_bucket": "amzn-s3-demo-llama-weights",
        "s3_prefix": "meta/Llama-3.1-8B",
    },
}
MIXED: dict[str, Any] = {
    "hyperpod.gpu_group.instance_type": "ml.g6e.12xlarge",
    "kvcache.endpoints": [with_overrides({})["kvcache"]["endpoints"][0], SECOND],
}


def _iecs(objs: list[Obj]) -> dict[tuple[str, str], Obj]:
    return {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objs if o["kind"] == IEC
    }


def _source(config: AppConfig, e: EndpointConfig) -> Obj:
    m = e.model
    if m.source == "huggingface":
        return {
            "modelSourceType": "huggingface",
            "huggingFaceModel": {"modelId": m.hugging_face_model_id},
        }
    assert m.source == "s3", m.source  # a new source type needs its expectation here
    # An empty prefix (the whole bucket) names no location.
    location = {"modelLocation": m.s3_prefix} if m.s3_prefix else {}
    s3 = {"bucketName": m.s3_bucket, "region": config.region}
    return {"modelSourceType": "s3", "s3Storage": s3, **location}


def assert_endpoints_carry_their_config(config: AppConfig, objs: list[Obj]) -> None:
    iecs = _iecs(objs)
    assert set(iecs) == {(e.namespace, e.name) for e in config.kvcache.endpoints}
    for e in config.kvcache.endpoints:
        iec = iecs[(e.namespace, e.name)]
        assert (iec["metadata"]["name"], iec["metadata"]["namespace"]) == (e.name, e.namespace)
        spec = iec["spec"]
        # SageMaker endpoint and model names are each unique per account and Region: the
        # environment's own.
        assert spec["endpointName"] == f"{config.environment}-{e.name}"
        assert spec["modelName"] == f"{config.environment}-{e.name}"
        # The endpoint's own type, else the GPU group's (EndpointConfig.instance_type).
        assert spec["instanceType"] == (e.instance_type or config.hyperpod.gpu_group.instance_type)
        assert spec["replicas"] == e.replicas
        assert spec["modelSourceConfig"] == _source(config, e)
        worker = spec["worker"]
        # vLLM reads these flags by name; the extra arguments follow, as configured.
        assert worker["args"] == [
            "--model",
            MODEL_PATH,
            "--port",
            str(e.container_port),
            "--tensor-parallel-size",
            str(e.tensor_parallel_size),
            *e.args,
        ]
        assert worker["modelInvocationPort"] == {"containerPort": e.container_port, "name": "http"}
        assert worker["modelVolumeMount"] == {"name": MODEL_VOLUME, "mountPath": MODEL_PATH}
        # The CRD's L2 backends are redis and tieredstorage; L2 rides on Tiered Storage.
        l2 = {"l2CacheSpec": {"l2CacheBackend": "tieredstorage"}} if e.l2_backend != "none" else {}
        assert spec["kvCacheSpec"] == {
            "enableL1Cache": e.enable_l1_cache,
            "enableL2Cache": e.l2_backend != "none",
            **l2,
        }
        # The CRD's enum is the lower-case strategy name, as the config spells it.
        assert spec["intelligentRoutingSpec"] == {
            "enabled": True,
            "routingStrategy": e.routing_strategy,
        }
        # vLLM's OpenAI server answers /health (and /metrics, on the metrics port).
        assert spec["loadBalancer"] == {"healthCheckPath": "/health"}
        assert spec["metrics"] == {
            "enabled": True,
            "modelMetrics": {"path": "/metrics", "port": e.metrics_port},
        }


def _render(overrides: dict[str, Any]) -> tuple[AppConfig, list[Obj]]:
    config = parse_config(with_overrides(overrides), SOURCE, "dev")
    return config, [o for objs in manifests(build_charts(config)).values() for o in objs]


def test_every_endpoint_is_an_iec_carrying_its_config(config: AppConfig, objs: list[Obj]) -> None:
    assert config.kvcache.endpoints  # each environment serves at least one
    assert_endpoints_carry_their_config(config, objs)


def test_a_second_endpoint_with_its_own_settings_carries_them() -> None:
    config, objs = _render(MIXED)
    second = config.kvcache.endpoints[1]
    # The variant does take the branches it is for.
    assert (second.enable_l1_cache, second.l2_backend != "none") == (False, False)
    assert second.instance_type == "ml.g6e.12xlarge" and second.tensor_parallel_size == 2
    assert config.kvcache.endpoints[0].l2_backend != "none"
    assert_endpoints_carry_their_config(config, objs)


def test_a_hugging_face_model_is_named_by_its_id(monkeypatch: pytest.MonkeyPatch) -> None:
    # The pinned add-on's operator (3.0) has no huggingface source; an add-on shipping 3.2 does.
    monkeypatch.setitem(ov.ADDON_OPERATOR, "v9.9.9-eksbuild.1", "3.2")
    config, objs = _render(
        {
            "addons.inference_operator.version": "v9.9.9-eksbuild.1",
            "kvcache.endpoints.0.model": {
                "source": "huggingface",
                "hugging_face_model_id": "Qwen/Qwen3-4B",
            },
        }
    )
    assert config.kvcache.endpoints[0].model.hugging_face_model_id == "Qwen/Qwen3-4B"
    assert_endpoints_carry_their_config(config, objs)
