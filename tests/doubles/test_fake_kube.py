"""FakeKube answers what it models as kube-apiserver does and refuses the rest loudly: a 501
to the client, and ``Unmodelled`` raised when the server stops, so a test cannot pass on a
request the fake would have answered wrongly.

Double under test: the fake API server itself, driven by the official client (no cluster)."""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from tests.doubles.fake_kube import FakeKube, Unmodelled

PODS = "/api/v1/namespaces/default/pods"


def pod(name: str, **labels: str) -> dict[str, Any]:
    spec = {"containers": [{"name": "c", "image": "c:1", "env": [{"name": "A", "value": "1"}]}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }


def names(kube: FakeKube, selector: str) -> list[str]:
    core = k8s.CoreV1Api(kube.api_client())
    return sorted(
        p.metadata.name for p in core.list_namespaced_pod("default", label_selector=selector).items
    )


def patch(kube: FakeKube, body: Any, ctype: str, path: str = f"{PODS}/a") -> Any:
    return kube.api_client().call_api(
        path,
        "PATCH",
        header_params={"Content-Type": ctype},
        body=body,
        response_types_map={200: "object"},
        _return_http_data_only=True,
    )


@pytest.fixture
def kube() -> Any:
    with FakeKube() as fake:
        fake.put(PODS, pod("a", app="web", tier="front"))
        fake.put(PODS, pod("b", app="api", tier="back", canary="yes"))
        fake.put(PODS, pod("c", app="db"))
        yield fake


@pytest.mark.parametrize(
    ("selector", "want"),
    [
        ("app=web", ["a"]),
        ("app==web", ["a"]),
        ("app!=web", ["b", "c"]),
        ("tier!=front", ["b", "c"]),  # c has no tier: != selects it
        ("app in (web, api)", ["a", "b"]),
        ("app notin (web,api)", ["c"]),
        ("canary", ["b"]),
        ("!canary", ["a", "c"]),
        ("app in (web,api),!canary", ["a"]),
        ("tier", ["a", "b"]),
        ("", ["a", "b", "c"]),
    ],
)
def test_label_selectors_select_as_the_api_server_does(
    kube: FakeKube, selector: str, want: list[str]
) -> None:
    assert names(kube, selector) == want


def test_a_selector_it_cannot_read_is_refused_loudly() -> None:
    with pytest.raises(Unmodelled, match="label selector requirement"), FakeKube() as kube:
        with pytest.raises(ApiException) as err:
            names(kube, "replicas>1")
        assert err.value.status == 501


def test_a_field_selector_is_refused_loudly() -> None:
    with pytest.raises(Unmodelled, match="fieldSelector"), FakeKube() as kube:
        core = k8s.CoreV1Api(kube.api_client())
        with pytest.raises(ApiException):
            core.list_namespaced_pod("default", field_selector="spec.nodeName=n1")


def test_a_strategic_merge_patch_with_a_list_is_refused_loudly() -> None:
    """A strategic-merge patch merges ``containers`` by name; a merge patch would replace the
    list. The fake does the latter only, so it refuses the former."""
    body = {"spec": {"containers": [{"name": "c", "image": "c:2"}]}}
    with pytest.raises(Unmodelled, match="strategic-merge"), FakeKube() as kube:
        kube.put(PODS, pod("a"))
        with pytest.raises(ApiException) as err:
            patch(kube, body, "application/strategic-merge-patch+json")
        assert err.value.status == 501
        assert kube.objects[f"{PODS}/a"]["spec"]["containers"][0]["image"] == "c:1"


def test_a_strategic_merge_patch_of_maps_only_is_applied_as_a_merge_patch(
    kube: FakeKube,
) -> None:
    patch(
        kube,
        {"metadata": {"labels": {"tier": None, "x": "1"}}},
        "application/strategic-merge-patch+json",
    )
    assert kube.objects[f"{PODS}/a"]["metadata"]["labels"] == {"app": "web", "x": "1"}


def test_a_missing_object_is_404_and_a_json_patch_that_does_not_apply_422(
    kube: FakeKube,
) -> None:
    json_patch = "application/json-patch+json"
    with pytest.raises(ApiException) as missing:
        patch(kube, [{"op": "remove", "path": "/metadata/labels/x"}], json_patch, f"{PODS}/zz")
    assert missing.value.status == 404
    for op in (
        {"op": "remove", "path": "/metadata/labels/nope"},
        {"op": "replace", "path": "/spec/containers/5/image", "value": "x"},
        {"op": "add", "path": "/spec/nope/deeper", "value": 1},
        {"op": "test", "path": "/metadata/labels/app", "value": "api"},
    ):
        with pytest.raises(ApiException) as refused:
            patch(kube, [op], json_patch)
        assert refused.value.status == 422, op
    # The official client turns a JSON Patch whose body is not a list into a strategic-merge
    # patch; sent as it is, the server cannot decode it.
    raw = urllib.request.Request(
        f"{kube.url}{PODS}/a",
        data=b'{"op": "add"}',
        method="PATCH",
        headers={"Content-Type": json_patch},
    )
    with pytest.raises(urllib.error.HTTPError) as not_a_list:
        urllib.request.urlopen(raw, timeout=10)
    assert not_a_list.value.code == 400


def test_a_json_patch_move_and_a_put_are_refused_loudly() -> None:
    with pytest.raises(Unmodelled) as err, FakeKube() as kube:
        kube.put(PODS, pod("a", app="web"))
        move = [{"op": "move", "from": "/metadata/labels/app", "path": "/metadata/labels/b"}]
        with pytest.raises(ApiException):
            patch(kube, move, "application/json-patch+json")
        with pytest.raises(ApiException):
            k8s.CoreV1Api(kube.api_client()).replace_namespaced_pod("a", "default", pod("a"))
    assert "'move'" in str(err.value) and "PUT" in str(err.value)
