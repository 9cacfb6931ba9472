"""A minimal OpenAI-compatible streaming client (standard library only).

TTFT is measured from the moment the request starts (before connecting) to the arrival of the
first server-sent event that carries generated text.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


class StreamError(RuntimeError):
    pass


@dataclass(frozen=True)
class StreamResult:
    ttft_ms: float
    total_ms: float
    text: str
    prompt_tokens: int | None
    completion_tokens: int | None


def _connection(base_url: str, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(base_url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    host = parts.hostname or "127.0.0.1"
    conn = cls(host, parts.port, timeout=timeout)
    return conn, parts.path.rstrip("/")


@contextlib.contextmanager
def _naming(method: str, url: str) -> Iterator[None]:
    """A connection that fails (refused, reset, timed out, no such host) names the URL it
    tried: the socket's own error says only ``[Errno 111] Connection refused``."""
    try:
        yield
    except (OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise StreamError(f"{method} {url}: {reason}") from exc


def model_cards(base_url: str, timeout: float = 30.0) -> list[dict[str, Any]]:
    """``GET /v1/models``: one card per served model (vLLM's carry ``max_model_len``)."""
    conn, path = _connection(base_url, timeout)
    try:
        with _naming("GET", f"{base_url}/v1/models"):
            conn.request("GET", f"{path}/v1/models")
            resp = conn.getresponse()
            body = resp.read()
        if resp.status != 200:
            raise StreamError(f"GET {base_url}/v1/models: HTTP {resp.status}")
        cards: list[dict[str, Any]] = json.loads(body).get("data", [])
        return cards
    finally:
        conn.close()


def list_models(base_url: str, timeout: float = 30.0) -> list[str]:
    return [m["id"] for m in model_cards(base_url, timeout)]


def stream_completion(
    base_url: str,
    model: str,
    prompt: str,
    max_tokens: int = 4,
    timeout: float = 300.0,
    extra: dict[str, Any] | None = None,
) -> StreamResult:
    payload = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        # Usage on every chunk: a token whose text vLLM holds back (part of a character) still
        # counts as generated.
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        **(extra or {}),
    }
    body = json.dumps(payload).encode()
    conn, path = _connection(base_url, timeout)
    start = time.perf_counter()
    try:
        with _naming("POST", f"{base_url}/v1/completions"):
            events = _post(conn, path, body, base_url, start)
    finally:
        conn.close()
    if events.ttft_ms is None:
        raise StreamError(f"{base_url}: the stream ended without a generated token")
    return StreamResult(
        ttft_ms=events.ttft_ms,
        total_ms=events.total_ms,
        text=events.text,
        prompt_tokens=events.usage.get("prompt_tokens"),
        completion_tokens=events.usage.get("completion_tokens"),
    )


def _post(
    conn: http.client.HTTPConnection, path: str, body: bytes, base_url: str, start: float
) -> StreamEvents:
    conn.connect()
    if conn.sock is not None:
        # Small SSE writes must not wait for Nagle/delayed-ACK (adds ~40 ms on Linux).
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.request(
        "POST",
        f"{path}/v1/completions",
        body=body,
        headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
    )
    resp = conn.getresponse()
    if resp.status != 200:
        raise StreamError(
            f"POST {base_url}/v1/completions: HTTP {resp.status}: "
            f"{resp.read(500).decode(errors='replace')}"
        )
    return read_events(iter(resp.readline, b""), start)


@dataclass(frozen=True)
class StreamEvents:
    ttft_ms: float | None
    total_ms: float
    text: str
    usage: dict[str, Any]


def read_events(
    lines: Iterable[bytes], start: float, clock: Callable[[], float] = time.perf_counter
) -> StreamEvents:
    """Read server-sent events until ``[DONE]``; TTFT is ``clock()`` at the first event that
    carries a generated token, minus ``start``: its text, or a usage that counts a completion
    token where the text is empty (vLLM sends a token that ends inside a character with empty
    text and its usage). Empty chunks without such a usage do not count."""
    ttft: float | None = None
    chunks: list[str] = []
    usage: dict[str, Any] = {}
    for raw in lines:
        line = raw.decode().strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        event = json.loads(data)
        if isinstance(
            event.get("error"), dict
        ):  # the server failed mid-stream (vLLM's ErrorResponse)
            error = event["error"]
            raise StreamError(
                f"the server ended the stream with an error: {error.get('type', 'error')}: "
                f"{error.get('message', '')}"
            )
        if event.get("usage"):
            usage = event["usage"]
        counted = (event.get("usage") or {}).get("completion_tokens") or 0
        for choice in event.get("choices") or []:
            text = choice.get("text") or ""
            if (text or counted > 0) and ttft is None:
                ttft = (clock() - start) * 1000
            chunks.append(text)
    return StreamEvents(ttft, (clock() - start) * 1000, "".join(chunks), usage)
