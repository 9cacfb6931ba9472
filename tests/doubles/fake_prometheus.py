"""A Prometheus-compatible HTTP API on 127.0.0.1 serving recorded sample results (no network).

It answers ``/api/v1/query`` and ``/api/v1/query_range`` for the exact expressions it was given,
with Prometheus's JSON envelope, and keeps each request's headers so a test can check the
SigV4 signature botocore put on it.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakePrometheus:
    def __init__(
        self,
        instant: dict[str, float],
        ranges: dict[str, list[dict[str, Any]]],
    ) -> None:
        self.instant = instant
        self.ranges = ranges
        self.requests: list[tuple[str, dict[str, str], dict[str, str]]] = []

    @contextmanager
    def serve(self) -> Iterator[str]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urllib.parse.urlparse(self.path)
                params = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
                fake.requests.append((url.path, params, dict(self.headers.items())))
                expr = params.get("query", "")
                if url.path.endswith("/api/v1/query") and expr in fake.instant:
                    data: dict[str, Any] = {
                        "resultType": "vector",
                        "result": [
                            {
                                "metric": {},
                                "value": [float(params["time"]), str(fake.instant[expr])],
                            }
                        ],
                    }
                elif url.path.endswith("/api/v1/query_range") and expr in fake.ranges:
                    data = {
                        "resultType": "matrix",
                        "result": [
                            {"metric": s["labels"], "values": [[t, str(v)] for t, v in s["values"]]}
                            for s in fake.ranges[expr]
                        ],
                    }
                elif url.path.endswith(("/api/v1/query", "/api/v1/query_range")):
                    data = {"resultType": "vector", "result": []}
                else:
                    self.send_error(404)
                    return
                body = json.dumps({"status": "success", "data": data}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # shutdown() waits for the serving loop's next poll (0.5 s by default).
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/workspaces/ws-test/"
        finally:
            server.shutdown()
            server.server_close()
