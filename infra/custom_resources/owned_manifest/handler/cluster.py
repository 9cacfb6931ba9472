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
        headers = {"Accept": "application/json"}
        query: list[tuple[str, str]] = []
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
            response_types_map={200: "object", 201: "object", 202: "object"},
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
            "PATCH",
            ref.path,
            obj,
            content_type="application/apply-patch+yaml",
            apply=True,
        )

    def delete(self, ref: Ref) -> bool:
        """True when it was deleted, False when it was gone already."""
        try:
            self._call("DELETE", ref.path, propagation=True)
        except ApiException as e:
            if e.status == 404:
                return False
            raise
        return True
