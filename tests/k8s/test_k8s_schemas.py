"""Every rendered object validates: built-in kinds against the Kubernetes OpenAPI schema of the
configured minor (kubernetes-validate, strict), custom resources against their CRD's
openAPIV3Schema (jsonschema); each InferenceEndpointConfig against the CRD of the operator its
config pins, picked through infra/config/operator_versions.py. Real schemas, no double."""

from __future__ import annotations

import hashlib
from typing import Any

import cdk8s
import jsonschema
import kubernetes_validate
import pytest

from infra.config import AppConfig
from infra.config.operator_versions import ADDON_OPERATOR, OPERATORS, OperatorVersion
from infra.facts.versions import SUPPORTED_KUBERNETES
from k8s.endpoints import EndpointsChart
from tests.support.config import env_config
from tests.support.schemas import SCHEMAS, crd_schema, strict, validate

IEC = "inference.sagemaker.aws.amazon.com/v1/InferenceEndpointConfig"
# Custom kinds whose CRD does not depend on the config; the IEC's CRD does (pinned_iec_schema).
CUSTOM = {
    "kyverno.io/v1/ClusterPolicy": (SCHEMAS / "kyverno" / "kyverno.io_clusterpolicies.yaml", "v1"),
}
# fsx, tiers: tests/support/config.py FSX_VARIANT, TIERS_VARIANT
ENVS = ("dev", "test", "prod", "fsx", "tiers")


def pinned_iec_schema(config: AppConfig) -> dict[str, Any]:
    """openAPIV3Schema (v1) of the CRD of the operator the config's add-on version ships."""
    return crd_schema(config.addons.inference_operator.operator.crd_path, "v1")


def _key(obj: dict[str, Any]) -> str:
    return f"{obj['apiVersion']}/{obj['kind']}"


def test_builtin_kinds_validate_strictly(
    rendered: list[dict[str, Any]], dev_config: AppConfig
) -> None:
    version = SUPPORTED_KUBERNETES[dev_config.eks.kubernetes_version].schema_version
    builtin = [o for o in rendered if _key(o) not in CUSTOM and _key(o) != IEC]
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
    schema = strict(crd_schema(path, version))
    objs = [o for o in rendered if _key(o) == kind]
    assert objs, f"no {kind} rendered"
    for obj in objs:
        validate(obj, schema)


@pytest.mark.parametrize("env", ENVS)
def test_endpoints_validate_against_the_crd_of_the_pinned_operator(
    rendered_envs: dict[str, list[dict[str, Any]]], env: str
) -> None:
    config = env_config(env)
    schema = strict(pinned_iec_schema(config))
    iecs = [o for o in rendered_envs[env] if _key(o) == IEC]
    assert iecs, f"{env}: no InferenceEndpointConfig rendered"
    op = config.addons.inference_operator
    for obj in iecs:
        try:
            validate(obj, schema)
        except jsonschema.ValidationError as exc:  # pragma: no cover - failure path
            pytest.fail(
                f"{env}: InferenceEndpointConfig {obj['metadata']['name']} is refused by the CRD "
                f"of operator {op.operator.version} (add-on {op.version}): {exc.message} at "
                f"{'.'.join(str(p) for p in exc.absolute_path)}"
            )


def _newer_operators(config: AppConfig) -> list[OperatorVersion]:
    pinned = config.addons.inference_operator.operator
    return [op for op in OPERATORS.values() if _release(op) > _release(pinned)]


def _release(op: OperatorVersion) -> tuple[int, ...]:
    return tuple(int(part) for part in op.version.split("."))


@pytest.mark.parametrize("env", ENVS)
def test_endpoints_validate_against_the_crd_of_every_newer_operator(
    rendered_envs: dict[str, list[dict[str, Any]]], env: str
) -> None:
    """Forward compatibility: an add-on upgraded under the app (to an operator no pinned add-on
    version is known to ship, 3.3) still accepts every InferenceEndpointConfig the app renders,
    unknown fields refused as kubectl apply does."""
    config = env_config(env)
    newer = _newer_operators(config)
    assert "3.3" in {op.version for op in newer}, f"{env}: no newer operator CRD to check"
    iecs = [o for o in rendered_envs[env] if _key(o) == IEC]
    assert iecs
    for op in newer:
        schema = strict(crd_schema(op.crd_path, "v1"))
        for obj in iecs:
            try:
                validate(obj, schema)
            except jsonschema.ValidationError as exc:  # pragma: no cover - failure path
                pytest.fail(
                    f"{env}: InferenceEndpointConfig {obj['metadata']['name']} is refused by the "
                    f"CRD of operator {op.version}: {exc.message} at "
                    f"{'.'.join(str(p) for p in exc.absolute_path)}"
                )


def test_the_operator_3_3_crd_is_the_one_with_the_model_cache(
    rendered: list[dict[str, Any]],
) -> None:
    """The 3.3 copy is the right one: the weights cache that arrived with 3.3 fails the 3.2 CRD
    (an unknown field) and passes 3.3's, which also bounds its host path."""
    iec = next(o for o in rendered if _key(o) == IEC)
    cached = {
        **iec,
        "spec": {
            **iec["spec"],
            "modelCacheConfig": {"weightsCache": {"enabled": True, "hostPath": "/x"}},
        },
    }
    with pytest.raises(jsonschema.ValidationError, match="modelCacheConfig"):
        validate(cached, strict(crd_schema(OPERATORS["3.2"].crd_path, "v1")))
    schema = strict(crd_schema(OPERATORS["3.3"].crd_path, "v1"))
    validate(cached, schema)
    cached["spec"]["modelCacheConfig"]["weightsCache"]["hostPath"] = "/" + "x" * 255
    with pytest.raises(jsonschema.ValidationError, match="too long"):
        validate(cached, schema)


@pytest.mark.parametrize("addon_version", sorted(ADDON_OPERATOR))
def test_endpoints_validate_against_the_crd_each_known_add_on_ships(
    dev_config: AppConfig, addon_version: str
) -> None:
    """Any row of the table can be pinned: dev's endpoints, rendered under that pin, pass the CRD
    of the operator it ships (the default pin's CRD is covered per environment above)."""

    addons = dev_config.addons.model_copy(
        update={
            "inference_operator": dev_config.addons.inference_operator.model_copy(
                update={"version": addon_version}
            )
        }
    )
    config = dev_config.model_copy(update={"addons": addons})
    op = OPERATORS[ADDON_OPERATOR[addon_version]]
    assert config.addons.inference_operator.operator == op
    iecs = EndpointsChart(cdk8s.App(), "endpoints", config=config).to_json()
    assert iecs
    schema = strict(crd_schema(op.crd_path, "v1"))
    for obj in iecs:
        validate(obj, schema)


def test_every_pinned_operator_has_its_crd() -> None:
    for op in OPERATORS.values():
        crd = crd_schema(op.crd_path, "v1")
        source = crd["properties"]["spec"]["properties"]["modelSourceConfig"]
        assert sorted(source["properties"]["modelSourceType"]["enum"]) == sorted(
            op.model_sources
        ), f"operator {op.version}: the table's model sources differ from its CRD's enum"


def test_the_operator_3_0_crd_refuses_huggingface(rendered: list[dict[str, Any]]) -> None:
    """The 3.0 copy is the right one: the model source that arrived with 3.1 fails it, and
    passes the 3.2 copy."""
    iec = next(o for o in rendered if _key(o) == IEC)
    hf = {
        **iec,
        "spec": {
            **iec["spec"],
            "modelSourceConfig": {
                "modelSourceType": "huggingface",
                "huggingFaceModel": {"modelId": "Qwen/Qwen3-8B"},
            },
        },
    }
    with pytest.raises(jsonschema.ValidationError, match="huggingface"):
        validate(hf, crd_schema(OPERATORS["3.0"].crd_path, "v1"))
    validate(hf, crd_schema(OPERATORS["3.2"].crd_path, "v1"))


def test_crd_schema_catches_a_bad_backend(
    rendered: list[dict[str, Any]], dev_config: AppConfig
) -> None:
    """The CRD check is real: a backend the operator rejects fails validation."""
    iec = next(o for o in rendered if o["kind"] == "InferenceEndpointConfig")
    bad = {
        **iec,
        "spec": {
            **iec["spec"],
            "kvCacheSpec": {"enableL2Cache": True, "l2CacheSpec": {"l2CacheBackend": "curvine"}},
        },
    }
    with pytest.raises(jsonschema.ValidationError):
        validate(bad, pinned_iec_schema(dev_config))


def test_kubernetes_validate_catches_a_typo(
    rendered: list[dict[str, Any]], dev_config: AppConfig
) -> None:
    version = SUPPORTED_KUBERNETES[dev_config.eks.kubernetes_version].schema_version
    sts = next(o for o in rendered if o["kind"] == "StatefulSet")
    bad = {**sts, "spec": {**sts["spec"], "replica": 1}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, version, strict=True)


def test_crd_copies_match_their_recorded_sha256() -> None:
    """Each operator's CRD is the recorded upstream file (k8s/schemas/SOURCES.md)."""
    rows = {}
    for line in (SCHEMAS / "SOURCES.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("hyperpod-inference/"):
            rows[cells[0]] = cells[3]
    for op in OPERATORS.values():
        rel = op.crd_path.relative_to(SCHEMAS).as_posix()
        assert rel in rows, f"{rel}: no row in k8s/schemas/SOURCES.md"
        assert hashlib.sha256(op.crd_path.read_bytes()).hexdigest() == rows[rel], rel
