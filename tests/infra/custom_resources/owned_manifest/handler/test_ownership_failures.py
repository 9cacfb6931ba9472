"""What the handler says and leaves when the API server refuses: a failed create undone, a refused
delete left in place, each on one line.

Double: a local fake Kubernetes API server (tests/doubles/ownership_fake_kube.py, built on
tests/doubles/fake_kube.py) driven by the official ``kubernetes`` client, so the handler's real
URLs, verbs, content types and error statuses are exercised. The fake stores objects and does not
run admission or controllers (a deleted Namespace does not delete its contents).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from infra.custom_resources.owned_manifest.handler.cluster import Cluster
from infra.custom_resources.owned_manifest.handler.ownership import (
    OwnershipError,
    apply,
    delete,
)
from tests.doubles.ownership_fake_kube import ApplyFakeKube
from tests.support.owned_manifest import NS, OWNER, cm, ns


def test_delete_does_not_fail_when_the_api_refuses(kube: ApplyFakeKube, cluster: Cluster) -> None:
    apply(cluster, OWNER, [ns("curvine")])
    kube.fail[("DELETE", f"{NS}/curvine")] = 403
    assert delete(cluster, OWNER, [ns("curvine")]) == [
        "could not delete Namespace curvine: HTTP 403 injected failure; left in place"
    ]


def test_a_failed_first_create_has_nothing_to_undo(kube: ApplyFakeKube, cluster: Cluster) -> None:
    kube.fail[("PATCH", f"{NS}/curvine")] = 422
    with pytest.raises(OwnershipError) as err:
        apply(cluster, OWNER, [ns("curvine")])
    assert str(err.value) == (
        "create Namespace curvine failed: HTTP 422 injected failure. Fix the object in the chart "
        "or the cluster, then deploy again."
    )


def test_undo_names_every_object_it_removed(kube: ApplyFakeKube, cluster: Cluster) -> None:
    kube.fail[("PATCH", f"{NS}/curvine/configmaps/c")] = 422
    kube.put(NS, ns("curvine", owner=OWNER))
    with pytest.raises(OwnershipError) as err:
        apply(cluster, OWNER, [ns("curvine"), ns("lmcache"), ns("redis"), cm("c", "curvine")])
    assert "; removed what this apply had created (Namespace lmcache, Namespace redis). " in str(
        err.value
    )
    assert sorted(kube.objects) == [f"{NS}/curvine"]


def refuse_deletes(cluster: Cluster, error: ApiException) -> None:
    original = cluster.api.call_api

    def call_api(path: str, method: str, **kw: Any) -> Any:
        if method == "DELETE":
            raise error
        return original(path, method, **kw)

    cluster.api.call_api = call_api  # type: ignore[method-assign]


def api_error(status: int, reason: str | None, body: str | None) -> ApiException:
    error = ApiException(status=status, reason=reason)
    error.body = body
    return error


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (api_error(502, "Bad Gateway", "<html>upstream gone</html>"), "HTTP 502 Bad Gateway"),
        (
            api_error(400, "Bad Request", json.dumps({"message": "denied:\nno"})),
            "HTTP 400 denied: no",
        ),
        (api_error(500, None, None), "HTTP 500 "),
    ],
)
def test_a_refused_delete_says_why_on_one_line(
    kube: ApplyFakeKube, cluster: Cluster, error: ApiException, said: str
) -> None:
    kube.put(NS, ns("curvine", owner=OWNER))
    refuse_deletes(cluster, error)
    assert delete(cluster, OWNER, [ns("curvine")]) == [
        f"could not delete Namespace curvine: {said}; left in place"
    ]


def test_an_object_deleted_meanwhile_is_gone_already(kube: ApplyFakeKube, cluster: Cluster) -> None:
    kube.put(NS, ns("curvine", owner=OWNER))
    kube.fail[("DELETE", f"{NS}/curvine")] = 404  # found by GET, gone by DELETE
    assert delete(cluster, OWNER, [ns("curvine")]) == ["Namespace curvine is gone already"]


def test_undo_says_which_created_objects_it_could_not_remove(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    kube.fail[("PATCH", f"{NS}/curvine/configmaps/c")] = 422
    kube.fail[("DELETE", f"{NS}/lmcache")] = 403
    with pytest.raises(OwnershipError) as err:
        apply(cluster, OWNER, [ns("curvine"), ns("lmcache"), cm("c", "curvine")])
    assert str(err.value) == (
        "create ConfigMap curvine/c failed: HTTP 422 injected failure; removed what this apply "
        "had created (Namespace curvine); could not remove what it created: Namespace lmcache "
        "(HTTP 403 injected failure). Fix the object in the chart or the cluster, then deploy "
        "again."
    )
    assert sorted(kube.objects) == [f"{NS}/lmcache"]


def test_undo_lists_what_it_could_not_remove_in_creation_order(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    kube.fail[("PATCH", f"{NS}/curvine/configmaps/c")] = 422
    kube.fail[("DELETE", f"{NS}/lmcache")] = 403
    kube.fail[("DELETE", f"{NS}/redis")] = 403
    kube.put(NS, ns("curvine", owner=OWNER))
    with pytest.raises(OwnershipError) as err:
        apply(cluster, OWNER, [ns("curvine"), ns("lmcache"), ns("redis"), cm("c", "curvine")])
    assert str(err.value) == (
        "create ConfigMap curvine/c failed: HTTP 422 injected failure; could not remove what it "
        "created: Namespace lmcache (HTTP 403 injected failure), Namespace redis (HTTP 403 "
        "injected failure). Fix the object in the chart or the cluster, then deploy again."
    )
