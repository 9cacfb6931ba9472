"""The server-side apply of tests/doubles/ownership_fake_kube.py behaves as kube-apiserver's
does where the owned-manifest tests rely on it (Kubernetes docs, "Server-Side Apply"): what a
manager's later apply leaves out is removed unless another manager owns it too, a POST's manager
keeps every field it created, associative lists merge by key, a resourceVersion in the body is a
precondition, and an apply that is not forced stops at another manager's field.

Double under test: the fake API server itself, driven by the official client (no cluster)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from tests.doubles.ownership_fake_kube import ApplyFakeKube

CMS = "/api/v1/namespaces/models/configmaps"
APPLY = "application/apply-patch+yaml"


@pytest.fixture
def kube() -> Iterator[ApplyFakeKube]:
    with ApplyFakeKube() as fake:
        yield fake


def call(api: ApiClient, method: str, path: str, body: Any, ctype: str, **query: str) -> Any:
    return api.call_api(
        path,
        method,
        query_params=list(query.items()),
        header_params={"Content-Type": ctype, "Accept": "application/json"},
        body=body,
        response_types_map={200: "object", 201: "object"},
        _return_http_data_only=True,
    )


def cm(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "models"},
        "data": data,
    }


def test_what_a_managers_later_apply_leaves_out_is_removed(kube: ApplyFakeKube) -> None:
    api = kube.api_client()
    call(api, "PATCH", f"{CMS}/c", cm(a="1", b="2"), APPLY, fieldManager="m", force="true")
    call(api, "PATCH", f"{CMS}/c", cm(a="1"), APPLY, fieldManager="m", force="true")
    assert kube.objects[f"{CMS}/c"]["data"] == {"a": "1"}
    assert kube.managers(f"{CMS}/c") == {("m", "Apply"): {("data", "a")}}


def test_a_posts_manager_keeps_what_it_created(kube: ApplyFakeKube) -> None:
    """The default manager of a request without fieldManager is the User-Agent's product."""
    api = kube.api_client()
    call(api, "POST", CMS, cm(a="1", b="2"), "application/json")
    call(api, "PATCH", f"{CMS}/c", cm(a="1"), APPLY, fieldManager="m", force="true")
    assert kube.objects[f"{CMS}/c"]["data"] == {"a": "1", "b": "2"}
    assert set(kube.managers(f"{CMS}/c")) == {("OpenAPI-Generator", "Update"), ("m", "Apply")}


def test_associative_lists_merge_by_key_and_keep_another_managers_item(
    kube: ApplyFakeKube,
) -> None:
    api = kube.api_client()
    path = "/api/v1/namespaces/models/pods/p"

    def pod(*names: str, manager: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {
                "containers": [
                    {"name": "c", "env": [{"name": n, "value": n.lower()} for n in names]}
                ]
            },
        }
        call(api, "PATCH", path, body, APPLY, fieldManager=manager, force="true")

    pod("A", "B", "C", manager="ours")
    pod("C", manager="theirs")
    pod("A", manager="ours")
    (container,) = kube.objects[path]["spec"]["containers"]
    assert container["env"] == [{"name": "A", "value": "a"}, {"name": "C", "value": "c"}]


def test_a_resource_version_in_the_body_is_a_precondition(kube: ApplyFakeKube) -> None:
    api = kube.api_client()
    body = cm(a="1")
    body["metadata"]["resourceVersion"] = "1"
    call(api, "PATCH", f"{CMS}/c", body, APPLY, fieldManager="m", force="true")  # creates it
    assert kube.objects[f"{CMS}/c"]["data"] == {"a": "1"}
    assert "resourceVersion" not in kube.objects[f"{CMS}/c"]["metadata"]
    with pytest.raises(ApiException) as err:
        call(
            api,
            "PATCH",
            f"{CMS}/c",
            {**body, "data": {"a": "2"}},
            APPLY,
            fieldManager="n",
            force="true",
        )
    assert err.value.status == 409
    assert kube.objects[f"{CMS}/c"]["data"] == {"a": "1"}


def test_an_apply_that_is_not_forced_stops_at_another_managers_field(kube: ApplyFakeKube) -> None:
    api = kube.api_client()
    call(api, "PATCH", f"{CMS}/c", cm(a="1"), APPLY, fieldManager="m", force="true")
    with pytest.raises(ApiException) as err:
        call(api, "PATCH", f"{CMS}/c", cm(a="2"), APPLY, fieldManager="n")
    assert err.value.status == 409
    assert json.loads(err.value.body)["message"] == (
        'Apply failed with 1 conflict(s): conflict with "m": .data.a'
    )
    call(api, "PATCH", f"{CMS}/c", cm(a="2"), APPLY, fieldManager="n", force="true")
    assert kube.managers(f"{CMS}/c") == {("n", "Apply"): {("data", "a")}}


MERGE = "application/merge-patch+json"


def test_a_merge_patch_owns_only_the_fields_it_changed(kube: ApplyFakeKube) -> None:
    """structured-merge-diff's Update: a field sent with the value it already had changes
    hands to nobody; an added or changed one moves to the patch's manager."""
    api = kube.api_client()
    call(api, "PATCH", f"{CMS}/c", cm(a="1", b="2"), APPLY, fieldManager="m", force="true")
    call(
        api,
        "PATCH",
        f"{CMS}/c",
        {"data": {"a": "1", "b": "3", "c": "4"}},
        MERGE,
        fieldManager="kubectl",
    )
    assert kube.managers(f"{CMS}/c") == {
        ("m", "Apply"): {("data", "a")},
        ("kubectl", "Update"): {("data", "b"), ("data", "c")},
    }


def test_a_field_a_merge_patch_removes_leaves_every_manager(kube: ApplyFakeKube) -> None:
    api = kube.api_client()
    call(api, "PATCH", f"{CMS}/c", cm(a="1", b="2"), APPLY, fieldManager="m", force="true")
    call(api, "PATCH", f"{CMS}/c", {"data": {"b": None}}, MERGE, fieldManager="kubectl")
    assert kube.managers(f"{CMS}/c") == {("m", "Apply"): {("data", "a")}}


def test_an_update_of_an_object_without_managed_fields_records_none(kube: ApplyFakeKube) -> None:
    """skipNonApplied: managed fields start with a create or an apply, never an update."""
    kube.put(CMS, cm(a="1"))
    call(kube.api_client(), "PATCH", f"{CMS}/c", {"data": {"b": "2"}}, MERGE, fieldManager="k")
    assert kube.managers(f"{CMS}/c") == {}


def test_the_first_apply_leaves_an_unmanaged_objects_fields_to_before_first_apply(
    kube: ApplyFakeKube,
) -> None:
    """What the object held before its first apply stays, co-owned by before-first-apply,
    when the applier later drops it; what the apply changed is the applier's alone."""
    kube.put(CMS, cm(a="1", b="2"))
    api = kube.api_client()
    call(api, "PATCH", f"{CMS}/c", cm(a="1", b="3"), APPLY, fieldManager="m", force="true")
    call(api, "PATCH", f"{CMS}/c", cm(c="4"), APPLY, fieldManager="m", force="true")
    assert kube.objects[f"{CMS}/c"]["data"] == {"a": "1", "c": "4"}
    assert kube.managers(f"{CMS}/c")[("before-first-apply", "Update")] >= {("data", "a")}
