"""Every rendered object validates: built-in kinds against the Kubernetes OpenAPI schema of the
configured minor (kubernetes-validate, strict), custom resources against their CRD's
openAPIV3Schema (jsonschema). Real schemas, no double."""

from __future__ import annotations

from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from infra.config import AppConfig
from infra.versions import SUPPORTED_KUBERNETES
from tests.k8s.conftest import SCHEMAS, crd_schema

CUSTOM = {
    "inference.sagemaker.aws.amazon.com/v1/InferenceEndpointConfig": (
        SCHEMAS / "hyperpod-inference"
        / "inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml", "v1"),
    "kyverno.io/v1/ClusterPolicy": (
        SCHEMAS / "kyverno" / "kyverno.io_clusterpolicies.yaml", "v1"),
}  # fmt: skip


def _key(obj: dict[str, Any]) -> str:
    return f"{obj['apiVersion']}/{obj['kind']}"


def test_builtin_kinds_validate_strictly(
    rendered: list[dict[str, Any]], dev_config: AppConfig
) -> None:
    version = SUPPORTED_KUBERNETES[dev_config.eks.kubernetes_version].schema_version
    builtin = [o for o in rendered if _key(o) not in CUSTOM]
    assert len(builtin) > 20
    for obj in builtin:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:  # pragma: no cover - failure path
            pytest.fail(f"{_key(obj)} {obj['metadata']['name']}: {exc.message} at {exc.path}")


@pytest.mark.parametrize("kind", sorted(CUSTOM))
def test_custom_resources_validate_against_their_crd(
    rendered: list[dict[str, Any]], kind: str
) -> None:
    path, version = CUSTOM[kind]
    schema = crd_schema(path, version)
    objs = [o for o in rendered if _key(o) == kind]
    assert objs, f"no {kind} rendered"
    for obj in objs:
        jsonschema.validate(obj, schema)


def test_crd_schema_catches_a_bad_backend(rendered: list[dict[str, Any]]) -> None:
    """The CRD check is real: a backend the operator rejects fails validation."""
    path, version = CUSTOM["inference.sagemaker.aws.amazon.com/v1/InferenceEndpointConfig"]
    iec = next(o for o in rendered if o["kind"] == "InferenceEndpointConfig")
    bad = {**iec, "spec": {**iec["spec"], "kvCacheSpec": {
        "enableL2Cache": True, "l2CacheSpec": {"l2CacheBackend": "curvine"}}}}  # fmt: skip
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, crd_schema(path, version))


def test_kubernetes_validate_catches_a_typo(
    rendered: list[dict[str, Any]], dev_config: AppConfig
) -> None:
    version = SUPPORTED_KUBERNETES[dev_config.eks.kubernetes_version].schema_version
    sts = next(o for o in rendered if o["kind"] == "StatefulSet")
    bad = {**sts, "spec": {**sts["spec"], "replica": 1}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, version, strict=True)
