"""A real HTTP server on 127.0.0.1 that answers each path with the document a test gives for it
(404 for any other), and records what it was asked: a registry as the tools see it, with no
network. Also an address nothing listens on, and a server that accepts and never answers."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# (status, headers, body); or a function of the request's headers that returns one.
Answer = tuple[int, dict[str, str], bytes]
Route = Answer | Callable[[dict[str, str]], Answer]


@dataclass
class Documents:
    routes: dict[str, Route] = field(default_factory=dict)
    asked: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    base: str = ""

    def add(
        self, path: str, body: bytes, content_type: str = "application/json", **headers: str
    ) -> None:
        self.routes[path] = (200, {"Content-Type": content_type, **headers}, body)

    def paths(self) -> list[str]:
        return [path for path, _ in self.asked]


def _handler(documents: Documents) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            documents.asked.append((self.path, headers))
            route = documents.routes.get(self.path) or documents.routes.get(
                self.path.split("?", 1)[0]
            )
            status, extra, body = (
                (404, {}, b"not found")
                if route is None
                else route(headers)
                if callable(route)
                else route
            )
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serving(documents: Documents) -> Iterator[Documents]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(documents))
    documents.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield documents
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@contextmanager
def silent() -> Iterator[int]:
    """A port that accepts connections and never answers; closed on exit."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()
