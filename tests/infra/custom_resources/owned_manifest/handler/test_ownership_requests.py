"""What the ownership-aware apply and delete
(infra/custom_resources/owned_manifest/handler/ownership.py) send: JSON asked for and each
write's body type named, background propagation on delete, a 30 s limit on every request, our
mark beside the object's own annotations, the default namespace, a kind without a known plural
refused.

Double: the local fake Kubernetes API server
(tests/doubles/ownership_fake_kube.py), driven by the official ``kubernetes`` client.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.custom_resources.owned_manifest.handler.cluster import Cluster
from infra.custom_resources.owned_manifest.handler.kinds import Ref, UnknownKind
from infra.custom_resources.owned_manifest.handler.ownership import (
    OWNER_ANNOTATION,
    apply,
    delete,
)
from tests.doubles.ownership_fake_kube import ApplyFakeKube, Received
from tests.support.owned_manifest import (
    NS,
    OWNER,
    cm,
    ns,
)


def sent(kube: ApplyFakeKube, method: str) -> list[Received]:
    return [r for r in kube.received if r.method == method]


def test_every_request_asks_for_json_and_each_write_names_its_body_type(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    """The API server answers 406 to an Accept it cannot serve and 415 to a body type it cannot
    decode; a second Content-Type line leaves the type of an apply to whichever line it reads."""
    kube.put(NS, ns("curvine", owner=OWNER))
    apply(cluster, OWNER, [ns("curvine"), cm("c", "curvine")])
    delete(cluster, OWNER, [cm("c", "curvine")])
    assert [r.header("Accept") for r in kube.received] == [["application/json"]] * 6
    assert [
        (r.method, r.path, r.header("Content-Type")) for r in kube.received if r.method != "GET"
    ] == [
        ("PATCH", f"{NS}/curvine", ["application/apply-patch+yaml"]),
        ("PATCH", f"{NS}/curvine/configmaps/c", ["application/apply-patch+yaml"]),
        ("DELETE", f"{NS}/curvine/configmaps/c", ["application/json"]),
    ]


def test_delete_asks_for_background_propagation(kube: ApplyFakeKube, cluster: Cluster) -> None:
    """Without a propagationPolicy the server uses each kind's default, which for a batch/v1 Job
    is to orphan its Pods; Background has the garbage collector remove dependents too."""
    apply(cluster, OWNER, [ns("curvine"), cm("c", "curvine")])
    delete(cluster, OWNER, [ns("curvine"), cm("c", "curvine")])
    background = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
    assert [(r.path, r.body) for r in sent(kube, "DELETE")] == [
        (f"{NS}/curvine/configmaps/c", background),
        (f"{NS}/curvine", background),
    ]
    assert kube.objects == {}


def test_every_request_gives_up_after_30_seconds(
    kube: ApplyFakeKube, cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stalled API server fails the call, and the deploy with a message, well inside the
    function's 5 minutes, instead of hanging it until Lambda kills it without one."""
    pool = cluster.api.rest_client.pool_manager
    original = pool.request
    timeouts: list[tuple[str, float | None]] = []

    def request(method: str, url: str, **kw: Any) -> Any:
        timeouts.append((method, kw["timeout"].total if kw.get("timeout") else None))
        return original(method, url, **kw)

    monkeypatch.setattr(pool, "request", request)
    kube.put(NS, ns("curvine", owner=OWNER))
    apply(cluster, OWNER, [ns("curvine"), cm("c", "curvine")])
    delete(cluster, OWNER, [cm("c", "curvine")])
    assert timeouts == [
        ("GET", 30),
        ("GET", 30),
        ("PATCH", 30),
        ("PATCH", 30),
        ("GET", 30),
        ("DELETE", 30),
    ]


def test_our_mark_joins_the_objects_own_annotations(kube: ApplyFakeKube, cluster: Cluster) -> None:
    """A server-side apply removes what this manager set before and left out, so the update must
    carry the object's annotations as well as ours."""
    obj = cm("c", "default")
    obj["metadata"]["annotations"] = {"team": "ml"}
    mine = {"team": "ml", OWNER_ANNOTATION: OWNER}
    apply(cluster, OWNER, [obj])
    apply(cluster, OWNER, [obj])
    assert [r.body["metadata"]["annotations"] for r in sent(kube, "PATCH")] == [mine, mine]
    assert kube.objects[f"{NS}/default/configmaps/c"]["metadata"]["annotations"] == mine
    assert obj["metadata"]["annotations"] == {"team": "ml"}


def test_a_namespaced_object_without_a_namespace_goes_to_default(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    """As kubectl does: a ConfigMap with no namespace is the default namespace's."""
    bare = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert apply(cluster, OWNER, [bare]) == ["created ConfigMap default/c"]
    assert [r.path for r in sent(kube, "PATCH")] == [f"{NS}/default/configmaps/c"]
    assert f"{NS}/default/configmaps/c" in kube.objects


def test_a_kind_without_a_known_plural_is_refused_naming_the_fix() -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    with pytest.raises(UnknownKind) as err:
        Ref.of(widget)
    assert str(err.value) == (
        "kind Widget is not in infra/custom_resources/owned_manifest/handler/kinds.py: add its "
        "plural and scope there"
    )
