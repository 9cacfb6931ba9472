"""The upstream schemas the Kubernetes tests validate against: CRDs as the API server applies
them."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml

SCHEMAS = Path(__file__).resolve().parents[2] / "k8s" / "schemas"


def crd_schema(path: Path, version: str) -> dict[str, Any]:
    """The CRD's schema for ``version`` (read-only: the parsed CRD is shared across tests)."""
    (v,) = [v for v in _crd(path)["spec"]["versions"] if v["name"] == version]
    schema: dict[str, Any] = v["schema"]["openAPIV3Schema"]
    return schema


def strict(schema: Any) -> Any:
    """The schema as the API server applies it under kubectl's default field validation
    (Strict): an object schema with ``properties`` refuses any other field, unless the CRD keeps
    unknown fields there (``x-kubernetes-preserve-unknown-fields``) or types them
    (``additionalProperties``). jsonschema alone lets a misspelt key through."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


@functools.cache
def _crd(path: Path) -> dict[str, Any]:
    # libyaml's loader: Kyverno's ClusterPolicy CRD is 1.4 MB, seconds for the pure-Python one.
    crd: dict[str, Any] = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
    return crd


# Schemas (by content) this process found valid against their metaschema.
_checked: set[str] = set()


def validate(instance: Any, schema: dict[str, Any]) -> None:
    """``jsonschema.validate``: the schema checked against its metaschema, then the instance
    against the schema, raising the best-matching error. A schema is checked once per process,
    not on every call: the CRDs' take most of a second each."""
    cls = jsonschema.validators.validator_for(schema)
    key = hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()
    if key not in _checked:
        cls.check_schema(schema)
        _checked.add(key)
    error = jsonschema.exceptions.best_match(cls(schema).iter_errors(instance))
    if error is not None:
        raise error
