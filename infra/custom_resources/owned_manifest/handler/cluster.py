"""The Kubernetes API calls the handler makes: get, create and apply (server-side), delete."""

from __future__ import annotations

from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from .kinds import Ref

FIELD_MANAGER = "hyperpod-kvcache"
# A resourceVersion in an apply body is a precondition: the server answers 409 Conflict when the
# object exists at another version, and creates an absent object (the store ignores it there).
# No object holds version 1 (etcd's first revision, taken when the cluster's store began), so
# the create of an object we found absent cannot take over one created since we looked.
ABSENT_ONLY = "1"


class Cluster:
    """The few REST calls needed, through the official client's ``ApiClient.call_api``."""

    def __init__(self, api: ApiClient) -> None:
        self.api = api

    def _call(self, method: str, path: str, body: Any = None, **extra: Any) -> Any:
        # Equivalent mutant: the header is sent as "accept"; HTTP field names are case-insensitive
        # (RFC 9110), so the API server reads the same Accept
        headers = {"Accept": "application/json"}  # pragma: no mutate
        # Equivalent mutant: query_params None instead of []; ApiClient and its REST client only
        # test query_params for truth (and BearerToken goes in a header), so no query string is sent
        # either way
        query: list[tuple[str, str]] = []  # pragma: no mutate
        if extra.get("content_type"):
            headers["Content-Type"] = extra["content_type"]
        if extra.get("apply"):
            query = [("fieldManager", FIELD_MANAGER), ("force", "true")]
        if extra.get("propagation"):
            body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
        return self.api.call_api(
            path,
            method,
            query_params=query,
            header_params=headers,
            body=body,
            # Equivalent mutants: the response_types_map loses 201; a 201 answers only the create
            # POST (and an apply that created), whose callers discard the body, so reading it as
            # None instead of a dict changes nothing; 202 becomes 203 in the response_types_map;
            # only delete() could get a 202 and it discards the body, so an unmapped status
            # (returned as None) changes nothing; a 202 would be deserialized as the unknown model
            # "XXobjectXX"; kube-apiserver answers a DELETE with 202 only when its DeleteOptions set
            # orphanDependents: false (apiserver endpoints/handlers/delete.go) and ours sets
            # propagationPolicy alone, so a 202 never comes
            response_types_map={200: "object", 201: "object", 202: "object"},  # pragma: no mutate
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
            _request_timeout=30,
        )

    def get(self, ref: Ref) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = self._call("GET", ref.path)
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        return found

    def create(self, ref: Ref, obj: dict[str, Any]) -> bool:
        """Create ``obj`` by the same server-side apply as an update (a POST would leave its
        manager co-owning every field for good); False when it exists by now."""
        meta = {**(obj.get("metadata") or {}), "resourceVersion": ABSENT_ONLY}
        try:
            self.apply(ref, {**obj, "metadata": meta})
        except ApiException as e:
            if e.status == 409:
                return False
            raise
        return True

    def apply(self, ref: Ref, obj: dict[str, Any]) -> None:
        # Server-side apply, forced: fields this manager set before are updated or removed,
        # fields the cluster filled in (a Service's clusterIP, a bound PVC's volumeName) stay.
        self._call(
            "PATCH", ref.path, obj, content_type="application/apply-patch+yaml",
            apply=True,
        )  # fmt: skip

    def delete(self, ref: Ref) -> bool:
        """True when it was deleted, False when it was gone already."""
        try:
            self._call("DELETE", ref.path, propagation=True)
        except ApiException as e:
            if e.status == 404:
                return False
            raise
        return True
