"""A tiny in-memory Kubernetes API server on 127.0.0.1 for the official ``kubernetes`` client.

It stands in for the API server in the CLI's tests: the real client builds the real URLs, headers
and bodies, and this server stores objects by path, answers GET, LIST of the resources in
``PLURALS`` (with label selectors, equality- and set-based, as ``labels.Parse`` reads them),
DELETE, JSON Patch (RFC 6902 add, remove, replace and test: a body that is not a list is 400, an
operation that does not apply 422, as the real server answers), JSON merge patch (RFC 7386), a
strategic-merge patch that holds no list and no ``$`` directive (it then means what a merge
patch means), the ``scale`` subresource and Pod logs (``container`` and ``sinceSeconds`` taken
as given: ``logs`` holds what that window shows, or a function of the query that says it;
``previous``: ``previous_logs``, the container's run before the restart). A missing object is 404.

Anything else it does not model (another method, a field selector, watch or paging, a
strategic-merge patch with lists or directives, move/copy operations, a set-based selector it
cannot read) is refused loudly: answered 501 and raised as ``Unmodelled`` when the server stops,
so no test passes on a mis-model. Every request is recorded; ``fail`` injects errors.
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
    "modelweightscacheconfigs",
    "scaledobjects",
    "csidrivers",
    "events",
}
Hook = Callable[["FakeKube", str, str], None]  # (server, method, path) after a write
# Query parameters whose meaning the fake models (or which do not change the answer).
MODELLED_QUERY = {"labelSelector", "fieldManager", "force", "container", "sinceSeconds", "previous"}
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class Unmodelled(NotImplementedError):
    """A request the fake does not model: answered 501 and raised when the server stops."""


def _requirements(selector: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(key, operator, values) of each requirement of a label selector string, as
    ``labels.Parse`` reads it: ``k``, ``!k``, ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``,
    ``k notin (a,b)``; anything else (``>``, ``<``) is refused."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(selector):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(selector[start:i])
            start = i + 1
    parts.append(selector[start:])
    out = []
    for part in (p.strip() for p in parts if p.strip()):
        if m := re.fullmatch(r"(\S+)\s+(in|notin)\s*\(([^()]*)\)", part):
            values = tuple(v.strip() for v in m.group(3).split(",") if v.strip())
            out.append((m.group(1), m.group(2), values))
        elif m := re.fullmatch(r"([^=!<>\s]+)\s*(==|!=|=)\s*([^=!<>\s]*)", part):
            out.append((m.group(1), "!=" if m.group(2) == "!=" else "=", (m.group(3),)))
        elif m := re.fullmatch(r"!\s*([^=!<>\s()]+)", part):
            out.append((m.group(1), "!", ()))
        elif re.fullmatch(r"[^=!<>\s()]+", part):
            out.append((part, "exists", ()))
        else:
            raise Unmodelled(f"label selector requirement {part!r}")
    return out


def selects(selector: str, labels: dict[str, str]) -> bool:
    """Does the label selector string ``selector`` select an object labelled ``labels``?"""
    for key, op, values in _requirements(selector):
        ok = {
            "=": labels.get(key) == values[0] if values else False,
            "!=": labels.get(key) != values[0] if values else True,
            "in": key in labels and labels[key] in values,
            "notin": labels.get(key) not in values,
            "exists": key in labels,
            "!": key not in labels,
        }[op]
        if not ok:
            return False
    return True


def _has_list_or_directive(patch: Any) -> bool:
    if isinstance(patch, list):
        return True
    if isinstance(patch, dict):
        return any(str(k).startswith("$") or _has_list_or_directive(v) for k, v in patch.items())
    return False


def _is_collection(path: str) -> bool:
    """``/api/v1/<plural>``, ``/apis/<g>/<v>/<plural>`` or their namespaced forms, not an
    object's path."""
    parts = path.strip("/").split("/")
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    return len(rest) == 1


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
    """``ops`` applied to ``doc``; ValueError (the real server's 422) when one does not apply."""
    try:
        return _json_patch(doc, ops)
    except (KeyError, IndexError, TypeError) as exc:
        raise ValueError(f"json patch operation does not apply: {exc!r}") from exc


def _json_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    doc = copy.deepcopy(doc)
    for op in ops:
        kind = op["op"]
        if kind not in ("add", "remove", "replace", "test"):
            raise Unmodelled(f"json patch operation {kind!r}")
        *parents, last = _pointer(op["path"])
        node = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
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
        else:
            del node[int(last) if isinstance(node, list) else last]
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
        # Resources it serves; a test drops one to model a cluster without its CRD (a 404 list).
        self.plurals: set[str] = set(PLURALS)
        # "ns/pod" -> log text, or a function of the request's query giving it
        self.logs: dict[str, str | Callable[[dict[str, list[str]]], str]] = {}
        self.previous_logs: dict[str, str] = {}  # the same, of the container's run before
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, content type)
        self.fail: dict[tuple[str, str], int] = {}  # (method, path) -> HTTP status to return
        self.after_write: list[Hook] = []
        self.after_read: list[Hook] = []  # e.g. a finalizer that lets an object go a read later
        self.unmodelled: list[str] = []  # requests refused as not modelled (raised at exit)
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
        if self.unmodelled and exc[0] is None:
            raise Unmodelled(
                "FakeKube was sent what it does not model: " + "; ".join(self.unmodelled)
            )

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
                        unknown = set(query) - MODELLED_QUERY
                        if unknown:
                            raise Unmodelled(f"query parameters {sorted(unknown)}")
                        result = fake._serve(method, path, query, body, ctype)
                    except Unmodelled as exc:
                        fake.unmodelled.append(f"{method} {self.path}: {exc}")
                        return self._status(501, f"not modelled by FakeKube: {exc}")
                    except Refusal as exc:
                        return self._status(exc.status, exc.message)
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

            def do_POST(self) -> None:
                self._unmodelled("POST")

            def do_PUT(self) -> None:
                self._unmodelled("PUT")

            def _unmodelled(self, method: str) -> None:
                with fake._lock:
                    fake.requests.append((method, self.path, self.headers.get("Content-Type")))
                    fake.unmodelled.append(f"{method} {self.path}: the method")
                self._status(501, f"not modelled by FakeKube: {method}")

        return Handler

    def _serve(
        self, method: str, path: str, query: dict[str, list[str]], body: bytes, ctype: str | None
    ) -> Any:
        if path.endswith("/log"):
            pod = path.removesuffix("/log").split("/")
            # The API server reads the flag with Go's strconv.ParseBool ("true", "True", "1").
            earlier = query.get("previous", [""])[0] in ("true", "True", "1")
            if earlier:
                return self.previous_logs.get(f"{pod[-3]}/{pod[-1]}", "")
            found = self.logs.get(f"{pod[-3]}/{pod[-1]}", "")
            return found(query) if callable(found) else found
        sub = None
        if path.endswith("/scale"):
            path, sub = path.removesuffix("/scale"), "scale"
        if method == "GET" and _is_collection(path):
            return self._list(path, query)
        if path not in self.objects:
            raise Refusal(404, f'"{path.rsplit("/", 1)[-1]}" not found')
        obj = self.objects[path]
        if method == "DELETE":
            del self.objects[path]
            return {"kind": "Status", "status": "Success"}
        if method == "PATCH":
            patch = json.loads(body)
            if ctype == JSON_PATCH:
                if not isinstance(patch, list):  # jsonpatch.DecodePatch fails: BadRequest
                    raise Refusal(400, "json patch body must be a list of operations")
                target = self._scale_view(obj) if sub else obj
                patched = json_patch(target, patch)
            elif ctype in (MERGE_PATCH, STRATEGIC_MERGE_PATCH):
                if not isinstance(patch, dict):
                    raise Unmodelled("a merge patch whose body is not an object")
                if ctype == STRATEGIC_MERGE_PATCH and _has_list_or_directive(patch):
                    raise Unmodelled("a strategic-merge patch with a list or a $ directive")
                patched = _merge(self._scale_view(obj) if sub else obj, patch)
            else:
                raise Unmodelled(f"PATCH of type {ctype}")
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
        if plural not in self.plurals:
            raise Refusal(404, f"the server could not find the requested resource ({plural})")
        selector = query.get("labelSelector", [""])[0]
        _requirements(selector)  # refused before anything is listed
        items = []
        for key, obj in self.objects.items():
            collection = key.rsplit("/", 1)[0]
            # Namespaced list, cluster-scoped list, or a list across all namespaces.
            across = re.fullmatch(re.escape(prefix) + r"/namespaces/[^/]+/" + plural, collection)
            inside = collection == path or ("/namespaces/" not in path and across)
            if inside and selects(selector, obj["metadata"].get("labels") or {}):
                items.append(obj)
        return {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": items}
