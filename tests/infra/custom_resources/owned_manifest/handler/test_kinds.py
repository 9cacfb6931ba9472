"""The handler's table of kinds (plural and scope) against the API's discovery data: the
resource models of the pinned Kubernetes minor (lightkube-models) and the vendored CRDs
(tests/support/kube_discovery.py). The handler's fake API server routes whatever path the
handler asks for, so only this says whether a real API server would find the object there.
"""

from __future__ import annotations

import pytest

from infra.custom_resources.owned_manifest.handler.kinds import KINDS, Ref
from infra.custom_resources.owned_manifest.handler.volumes import volume_ref
from tests.support.kube_discovery import Resource, discovery, models_minor

API = discovery()


def _of(kind: str) -> list[Resource]:
    return [r for r in API.values() if r.kind == kind]


def test_discovery_is_that_of_the_pinned_minor_and_knows_scopes() -> None:
    assert models_minor() == "1.34"
    assert API[("v1", "Namespace")].namespaced is False
    assert API[("apps/v1", "Deployment")] == Resource(
        "apps", "v1", "Deployment", "deployments", True
    )
    assert API[("kyverno.io/v1", "ClusterPolicy")].namespaced is False
    iec = API[("inference.sagemaker.aws.amazon.com/v1", "InferenceEndpointConfig")]
    assert iec.namespaced and iec.plural == "inferenceendpointconfigs"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_has_the_plural_and_scope_the_api_serves_it_under(kind: str) -> None:
    served = _of(kind)
    assert served, f"{kind}: no resource of that kind in Kubernetes {models_minor()} or a CRD"
    plural, namespaced = KINDS[kind]
    assert {(r.plural, r.namespaced) for r in served} == {(plural, namespaced)}, kind


@pytest.mark.parametrize(("api_version", "kind"), sorted(k for k in API if k[1] in KINDS))
def test_each_ref_is_the_path_the_api_serves_the_object_at(api_version: str, kind: str) -> None:
    """Every group and version the API serves a kind of the table under: the object named in
    namespace ``team`` (a cluster-scoped kind ignores it, as kubectl does)."""
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "team"}}
    resource = API[(api_version, kind)]
    want = resource.path("x", "team")
    assert Ref.of(obj).path == want
    # Without a namespace a namespaced object goes where kubectl puts it.
    bare = {**obj, "metadata": {"name": "x"}}
    assert Ref.of(bare).path == resource.path("x", "default")


def test_the_volume_the_handler_waits_on_is_at_its_api_path() -> None:
    assert volume_ref("pvc-1").path == API[("v1", "PersistentVolume")].path("pvc-1", None)
