"""tests/scripts/fake_kube.py plus what an apply needs: POST (create; 409 when the object
exists, like the real server) and server-side apply (``application/apply-patch+yaml``: the fake
merges the body into the object, or creates it)."""

from __future__ import annotations

import copy
import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.scripts.fake_kube import FakeKube, _merge


class ApplyFakeKube(FakeKube):
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        base: Any = super()._handler()
        fake = self

        class Handler(base):  # type: ignore[misc,valid-type]
            def do_POST(self) -> None:
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
