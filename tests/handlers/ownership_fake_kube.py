"""tests/scripts/fake_kube.py plus what an apply needs: POST (create; 409 when the object
exists, like the real server) and server-side apply (``application/apply-patch+yaml``: the fake
merges the body into the object, or creates it).

Every request is also kept as received (``received``: all header field lines and the decoded
body), and refused where the real API server refuses it: 406 for an Accept it cannot serve, 415
for a POST body type it cannot decode, 400/422 for a DELETE body that is not valid DeleteOptions.
"""

from __future__ import annotations

import copy
import io
import json
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.scripts.fake_kube import FakeKube, _merge

# What kube-apiserver serves and decodes (media types compare case-insensitively, RFC 9110).
SERVED = {"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
ACCEPTED = SERVED | {"*/*", "application/*"}
DELETE_OPTIONS_VERSIONS = {"v1", "meta.k8s.io/v1"}
PROPAGATION_POLICIES = {"Orphan", "Background", "Foreground"}


@dataclass(frozen=True)
class Received:
    """One request as the API server received it."""

    method: str
    path: str
    headers: tuple[tuple[str, str], ...]  # every field line, in the order sent
    body: Any  # the decoded JSON body; None without one

    def header(self, name: str) -> list[str]:
        """Every value sent under ``name`` (field names are case-insensitive, RFC 9110)."""
        return [v for k, v in self.headers if k.lower() == name.lower()]


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def _refusal(method: str, headers: Any, body: Any) -> tuple[int, str] | None:
    """The status and message kube-apiserver answers instead of serving, or None."""
    accept = [_media_type(r) for v in headers.get_all("Accept") or [] for r in v.split(",")]
    if accept and not ACCEPTED.intersection(accept):
        return 406, f"only the following media types are accepted: {', '.join(sorted(SERVED))}"
    ctype = _media_type(headers.get("Content-Type") or "")
    if method == "POST" and ctype not in SERVED:
        return 415, f"the body of the request was in an unknown format: {ctype}"
    if method == "DELETE" and body is not None:
        # The server decodes a DELETE body as DeleteOptions; kind and apiVersion may be left out.
        if body.get("kind", "DeleteOptions") != "DeleteOptions":
            return 400, f"no kind {body['kind']!r} is registered for DeleteOptions"
        if body.get("apiVersion", "v1") not in DELETE_OPTIONS_VERSIONS:
            return 400, f"no version {body['apiVersion']!r} of DeleteOptions"
        policy = body.get("propagationPolicy")
        if policy is not None and policy not in PROPAGATION_POLICIES:
            return 422, f'propagationPolicy: Unsupported value: "{policy}"'
    return None


class ApplyFakeKube(FakeKube):
    def __init__(self) -> None:
        self.received: list[Received] = []
        super().__init__()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        base: Any = super()._handler()
        fake = self

        class Handler(base):  # type: ignore[misc,valid-type]
            def _receive(self, method: str, serve: Any) -> None:
                """Keep the request, refuse it as the real server would, else ``serve`` it."""
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                with fake._lock:
                    fake.received.append(
                        Received(method, self.path.split("?")[0], tuple(self.headers.items()), body)
                    )
                refused = _refusal(method, self.headers, body)
                if refused:
                    return self._status(*refused)
                original, self.rfile = self.rfile, io.BytesIO(raw)  # served from what was read
                try:
                    serve()
                finally:
                    self.rfile = original

            def do_GET(self) -> None:
                self._receive("GET", super().do_GET)

            def do_PATCH(self) -> None:
                self._receive("PATCH", super().do_PATCH)

            def do_DELETE(self) -> None:
                self._receive("DELETE", super().do_DELETE)

            def do_POST(self) -> None:
                self._receive("POST", self._create)

            def _create(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                name = json.loads(body)["metadata"]["name"]
                path = self.path.split("?")[0]
                with fake._lock:
                    fake.requests.append(("POST", path, self.headers.get("Content-Type")))
                    if (("POST", path) not in fake.fail) and f"{path}/{name}" not in fake.objects:
                        fake.objects[f"{path}/{name}"] = json.loads(body)
                        return self._send(201, json.loads(body))
                if ("POST", path) in fake.fail:
                    return self._status(fake.fail[("POST", path)], "injected failure")
                self._status(409, f'"{name}" already exists')

        return Handler

    def _serve(
        self, method: str, path: str, query: dict[str, list[str]], body: bytes, ctype: str | None
    ) -> Any:
        if method == "PATCH" and ctype == "application/apply-patch+yaml":
            patch = json.loads(body)
            self.objects[path] = _merge(copy.deepcopy(self.objects.get(path, {})), patch)
            return self.objects[path]
        return super()._serve(method, path, query, body, ctype)
