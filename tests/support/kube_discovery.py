"""What a cluster's API discovery says of each kind: its group, version, REST plural and whether
it is namespaced, for the Kubernetes minor the app pins, and for the custom kinds the product
applies from their CRDs.

Built-in kinds: the resource classes of ``lightkube-models`` (requirements-dev.txt), generated
from the OpenAPI spec of one Kubernetes release per package version (1.34.0.x: Kubernetes
1.34.0). Each class is a ``GlobalResource`` (cluster-scoped) or a ``NamespacedResource(G)`` with
``_api_info = ApiInfo(resource=ResourceDef(group, version, kind), plural=...)``. They are read
from the package's source with ``ast``: importing them needs the ``lightkube`` client, which this
project does not use. Subresources (``...SubResource``, with a ``parent``) are left out.

Custom kinds: ``spec.group``, ``spec.names``, ``spec.scope`` and the served versions of the CRDs
vendored in ``k8s/schemas/`` (SOURCES.md there says where each comes from).
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import yaml

from infra.facts.versions import DEFAULT_KUBERNETES_VERSION

SCHEMAS = Path(__file__).resolve().parents[2] / "k8s" / "schemas"
SCOPES = {"GlobalResource": False, "NamespacedResource": True, "NamespacedResourceG": True}


@dataclass(frozen=True)
class Resource:
    group: str
    """"" for the core group."""
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, name: str, namespace: str | None) -> str:
        """The object's URL path as the API server serves it."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        scope = f"/namespaces/{namespace}" if self.namespaced else ""
        return f"{root}{scope}/{self.plural}/{name}"


def models_minor() -> str:
    """The Kubernetes minor of the installed lightkube-models (its version is the release's)."""
    return ".".join(importlib.metadata.version("lightkube-models").split(".")[:2])


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _resources_in(source: str) -> list[Resource]:
    out = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        scopes = [
            SCOPES[b.attr] for b in node.bases if isinstance(b, ast.Attribute) and b.attr in SCOPES
        ]
        info = next(
            (
                s.value
                for s in node.body
                if isinstance(s, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "_api_info" for t in s.targets)
            ),
            None,
        )
        if len(scopes) != 1 or not isinstance(info, ast.Call):
            continue
        resource, plural = _keyword(info, "resource"), _keyword(info, "plural")
        assert isinstance(resource, ast.Call) and isinstance(plural, ast.Constant), node.name
        group, version, kind = (ast.literal_eval(a) for a in resource.args)
        out.append(Resource(group, version, kind, plural.value, scopes[0]))
    return out


def builtin_resources() -> list[Resource]:
    """Every top-level resource of the pinned Kubernetes minor's API."""
    spec = importlib.util.find_spec("lightkube.resources")
    assert spec is not None and spec.submodule_search_locations, "lightkube-models is missing"
    folder = Path(next(iter(spec.submodule_search_locations)))
    found = [r for f in sorted(folder.glob("*_v*.py")) for r in _resources_in(f.read_text())]
    assert found, f"no resource classes under {folder}"
    return found


def crd_resources() -> list[Resource]:
    """Every served version of the CRDs vendored in k8s/schemas/."""
    out = []
    for path in sorted(SCHEMAS.rglob("*.yaml")):
        # libyaml's loader: the vendored CRDs are megabytes, seconds for the pure-Python one.
        for doc in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            names, namespaced = spec["names"], spec["scope"] == "Namespaced"
            out += [
                Resource(spec["group"], v["name"], names["kind"], names["plural"], namespaced)
                for v in spec["versions"]
                if v.get("served", True)
            ]
    return out


@functools.cache
def discovery() -> dict[tuple[str, str], Resource]:
    """(apiVersion, kind) -> the resource, built-in and custom (read once per process: callers
    only read it)."""
    assert models_minor() == DEFAULT_KUBERNETES_VERSION, (
        f"lightkube-models {importlib.metadata.version('lightkube-models')} is not Kubernetes "
        f"{DEFAULT_KUBERNETES_VERSION}: pin lightkube-models=={DEFAULT_KUBERNETES_VERSION}.0.x "
        "in requirements-dev.txt"
    )
    return {(r.api_version, r.kind): r for r in (*builtin_resources(), *crd_resources())}
