"""A tiny in-memory Kubernetes API server on 127.0.0.1 for the official ``kubernetes`` client.

It stands in for the API server in the CLI's tests: the real client builds the real URLs, headers
and bodies, and this server stores objects by path, answers GET/LIST (with equality label
selectors), DELETE, JSON Patch (RFC 6902, list bodies only, like the real server) and merge patch,
the ``scale`` subresource and Pod logs. Every request is recorded; ``fail`` injects errors.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kubernetes import client as k8s

PLURALS = {
    "deployments",
    "pods",
    "persistentvolumeclaims",
    "persistentvolumes",
    "daemonsets",
    "nodes",
    "inferenceendpointconfigs",
    "csidrivers",
    "events",
}
Hook = Callable[["FakeKube", str, str], None]  # (server, method, path) after a write


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = _merge(result.get(k), v)
    return result


def _pointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]


def json_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    doc = copy.deepcopy(doc)
    for op in ops:
        *parents, last = _pointer(op["path"])
        node = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        kind = op["op"]
        if kind == "test":
            current = node[int(last)] if isinstance(node, list) else node.get(last)
            if current != op["value"]:
                raise ValueError(f"test failed at {op['path']}")
        elif kind == "add":
            if isinstance(node, list):
                node.append(op["value"]) if last == "-" else node.insert(int(last), op["value"])
            else:
                node[last] = op["value"]
        elif kind == "replace":
            if isinstance(node, list):
                node[int(last)] = op["value"]
            else:
                if last not in node:
                    raise ValueError(f"replace of missing {op['path']}")
                node[last] = op["value"]
        elif kind == "remove":
            del node[int(last) if isinstance(node, list) else last]
        else:
            raise ValueError(f"unsupported op {kind}")
    return doc


class Refusal(Exception):
    """What ``_serve`` raises to answer with another status than 200 (e.g. 409 Conflict)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class FakeKube:
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}  # collection path + "/" + name -> object
        self.logs: dict[str, str] = {}  # "ns/pod" -> log text
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, content type)
        self.fail: dict[tuple[str, str], int] = {}  # (method, path) -> HTTP status to return
        self.after_write: list[Hook] = []
        self.after_read: list[Hook] = []  # e.g. a finalizer that lets an object go a read later
        self._lock = threading.RLock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        # shutdown() waits for the serving loop's next poll: 0.5 s by default, after every test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> FakeKube:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def api_client(self) -> k8s.ApiClient:
        conf = k8s.Configuration()
        conf.host = self.url
        return k8s.ApiClient(conf)

    # -- store ----------------------------------------------------------------------------------
    def put(self, collection: str, obj: dict[str, Any]) -> None:
        """``collection`` like /apis/apps/v1/namespaces/default/deployments."""
        with self._lock:
            self.objects[f"{collection}/{obj['metadata']['name']}"] = copy.deepcopy(obj)

    def get(self, path: str) -> dict[str, Any] | None:
        return self.objects.get(path)

    def writes(self, method: str | None = None) -> list[tuple[str, str, str | None]]:
        return [r for r in self.requests if r[0] != "GET" and (method is None or r[0] == method)]

    # -- HTTP -----------------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any, text: bool = False) -> None:
                data = body.encode() if text else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if text else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _status(self, code: int, msg: str) -> None:
                self._send(
                    code,
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "status": "Failure",
                        "message": msg,
                        "code": code,
                    },
                )

            def _dispatch(self, method: str) -> None:
                parts = urlsplit(self.path)
                path, query = parts.path, parse_qs(parts.query)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                ctype = self.headers.get("Content-Type")
                with fake._lock:
                    fake.requests.append((method, path, ctype))
                    if (method, path) in fake.fail:
                        return self._status(fake.fail[(method, path)], "injected failure")
                    try:
                        result = fake._serve(method, path, query, body, ctype)
                    except Refusal as exc:
                        return self._status(exc.status, exc.message)
                    except KeyError as exc:
                        return self._status(404, f"not found: {exc}")
                    except ValueError as exc:
                        return self._status(422, str(exc))
                for hook in fake.after_read if method == "GET" else fake.after_write:
                    hook(fake, method, path)
                if isinstance(result, str):
                    return self._send(200, result, text=True)
                self._send(200, result)

            def do_GET(self) -> None:
                self._dispatch("GET")

            def do_PATCH(self) -> None:
                self._dispatch("PATCH")

            def do_DELETE(self) -> None:
                self._dispatch("DELETE")

        return Handler

    def _serve(
        self, method: str, path: str, query: dict[str, list[str]], body: bytes, ctype: str | None
    ) -> Any:
        if path.endswith("/log"):
            pod = path.removesuffix("/log").split("/")
            return self.logs.get(f"{pod[-3]}/{pod[-1]}", "")
        sub = None
        if path.endswith("/scale"):
            path, sub = path.removesuffix("/scale"), "scale"
        if method == "GET" and path not in self.objects:
            return self._list(path, query)
        obj = self.objects[path]  # KeyError -> 404
        if method == "DELETE":
            del self.objects[path]
            return {"kind": "Status", "status": "Success"}
        if method == "PATCH":
            patch = json.loads(body)
            if ctype == "application/json-patch+json":
                if not isinstance(patch, list):
                    raise ValueError("json patch body must be a list")  # what the real server says
                target = self._scale_view(obj) if sub else obj
                patched = json_patch(target, patch)
            elif ctype in (
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
            ):
                if isinstance(patch, list):
                    raise ValueError("merge patch body must be an object")
                patched = _merge(self._scale_view(obj) if sub else obj, patch)
            else:
                raise ValueError(f"unsupported patch content type {ctype}")
            if sub:
                obj["spec"]["replicas"] = patched["spec"]["replicas"]
                return self._scale_view(obj)
            self.objects[path] = patched
            return patched
        return self._scale_view(obj) if sub else obj

    def _scale_view(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {
                "name": obj["metadata"]["name"],
                "namespace": obj["metadata"].get("namespace"),
            },
            "spec": {"replicas": obj["spec"].get("replicas", 0)},
            "status": {"replicas": (obj.get("status") or {}).get("replicas", 0)},
        }

    def _list(self, path: str, query: dict[str, list[str]]) -> dict[str, Any]:
        prefix, plural = path.rsplit("/", 1)
        if plural not in PLURALS:
            raise KeyError(path)
        wanted = dict(
            kv.split("=", 1) for kv in query.get("labelSelector", [""])[0].split(",") if kv
        )
        items = []
        for key, obj in self.objects.items():
            collection = key.rsplit("/", 1)[0]
            # Namespaced list, cluster-scoped list, or a list across all namespaces.
            across = re.fullmatch(re.escape(prefix) + r"/namespaces/[^/]+/" + plural, collection)
            if collection == path or ("/namespaces/" not in path and across):
                labels = obj["metadata"].get("labels") or {}
                if all(labels.get(k) == v for k, v in wanted.items()):
                    items.append(obj)
        return {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": items}
