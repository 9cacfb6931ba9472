"""A real HTTP server on 127.0.0.1 that speaks OpenAI's streaming /v1/completions (SSE, chunked)
and waits a known delay before the first token, so TTFT measurements can be checked.

With ``tiers`` (``tests.doubles.fake_tiers.TierSpec``) it also models where the prompt's KV is
found (L0, L1, a shared L2 directory, or nowhere), waits the per-token delay of each tier,
exports vLLM's and LMCache's counters on ``/metrics`` and takes ``POST /l2`` ``{"state": "up" |
"unreadable" | "down"}`` to break its L2 the way a lost Curvine worker would.

``FakeVllm`` runs the server in a child process: in the test's own process the server thread and
the client would share the GIL, whose 5 ms switch interval would blur the measurement.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.doubles.fake_tiers import Tiers, TierSpec


def _sleep_until(deadline: float) -> None:
    """Sleep, then spin the last 1 ms: a loaded CI box oversleeps time.sleep by milliseconds."""
    remaining = deadline - time.perf_counter()
    if remaining > 0.001:
        time.sleep(remaining - 0.001)
    while time.perf_counter() < deadline:
        pass


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # The client closes its connection after [DONE]; the reset that follows is not an error.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Server:
    def __init__(
        self,
        first_token_delay_s: float,
        token_gap_s: float = 0.002,
        model: str = "qwen2-7b",
        tiers: dict[str, Any] | None = None,
        max_model_len: int = 32768,
    ) -> None:
        self.delay = first_token_delay_s
        self.gap = token_gap_s
        self.model = model
        self.max_model_len = max_model_len
        self.tiers = Tiers(TierSpec(**tiers)) if tiers is not None else None
        self.prompts: list[str] = []
        # Per request, on this server's clock: when it arrived, when the first token and the
        # last token left (seconds). Differences of these are what the tests compare TTFT with.
        self.timings: list[dict[str, float]] = []
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())

    def serve(self) -> None:
        print(f"PORT {self._server.server_address[1]}", flush=True)
        self._server.serve_forever()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_GET(self) -> None:
                if self.path == "/prompts":  # for tests: what this server received
                    body = json.dumps(fake.prompts).encode()
                elif self.path == "/timings":  # for tests: when it received and answered
                    body = json.dumps(fake.timings).encode()
                elif self.path == "/metrics":
                    text = fake.tiers.metrics_text(fake.model) if fake.tiers else ""
                    self._text(text)
                    return
                else:
                    card = {
                        "id": fake.model,
                        "object": "model",
                        "max_model_len": fake.max_model_len,
                    }
                    body = json.dumps({"object": "list", "data": [card]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _text(self, text: str) -> None:
                body = text.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _chunk(self, data: dict[str, Any] | str) -> None:
                text = data if isinstance(data, str) else json.dumps(data)
                payload = f"data: {text}\n\n".encode()
                self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
                self.wfile.flush()

            def do_POST(self) -> None:
                received = time.perf_counter()
                req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/l2" and fake.tiers is not None:
                    fake.tiers.l2_state = req["state"]
                    self._text("ok\n")
                    return
                fake.prompts.append(req["prompt"])
                n = int(req.get("max_tokens", 4))
                if len(req["prompt"].split()) + n > fake.max_model_len:
                    # vLLM refuses a request longer than its context before serving it.
                    error = {"message": f"maximum context length is {fake.max_model_len}"}
                    body = json.dumps({"error": {**error, "code": 400}}).encode()
                    self.send_response(400)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                delay, timing = fake.delay, {"received": received}
                if fake.tiers is not None:
                    served = fake.tiers.serve(req["prompt"], n)
                    delay += served.delay_ms / 1000
                    timing |= {"injected_ms": served.delay_ms, **served.tokens}
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                # Prefill: the first token leaves `delay` after the request arrived.
                _sleep_until(received + delay)
                for i in range(n):
                    if i == 0:  # taken before the write: the client cannot see it earlier
                        timing["first_token_sent"] = time.perf_counter()
                    self._chunk(
                        {
                            "id": "cmpl-1",
                            "object": "text_completion",
                            "model": fake.model,
                            "choices": [{"index": 0, "text": f" tok{i}", "finish_reason": None}],
                        }
                    )
                    time.sleep(fake.gap)
                timing["last_token_sent"] = time.perf_counter()
                fake.timings.append(timing)
                words = len(req["prompt"].split())
                self._chunk(
                    {
                        "id": "cmpl-1",
                        "object": "text_completion",
                        "choices": [],
                        "usage": {
                            "prompt_tokens": words,
                            "completion_tokens": n,
                            "total_tokens": words + n,
                        },
                    }
                )
                self._chunk("[DONE]")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        return Handler


class FakeVllm:
    """Context manager: the server in a child Python process; ``url`` and ``prompts`` for tests.
    ``tiers``: model the KV tiers (the delay then adds to ``first_token_delay_s``)."""

    def __init__(
        self,
        first_token_delay_s: float = 0.0,
        token_gap_s: float = 0.002,
        tiers: TierSpec | None = None,
        max_model_len: int = 32768,
    ) -> None:
        self.args = [
            json.dumps(
                {
                    "first_token_delay_s": first_token_delay_s,
                    "token_gap_s": token_gap_s,
                    "max_model_len": max_model_len,
                    "tiers": tiers.as_dict() if tiers else None,
                }
            )
        ]
        self.url = ""
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> FakeVllm:
        root = Path(__file__).resolve().parents[2]
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.doubles.fake_vllm", *self.args],
            cwd=root,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line.startswith("PORT "):
            self._proc.kill()
            raise RuntimeError(f"fake vLLM did not start: {line!r}")
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)
            if self._proc.stdout is not None:
                self._proc.stdout.close()

    @property
    def prompts(self) -> list[str]:
        data: list[str] = self._get("/prompts")
        return data

    @property
    def timings(self) -> list[dict[str, float]]:
        """Per request: ``received``, ``first_token_sent``, ``last_token_sent`` (server clock)."""
        data: list[dict[str, float]] = self._get("/timings")
        return data

    def set_l2(self, state: str) -> None:
        """``up``, ``unreadable`` (found but failing to read) or ``down`` (unreachable)."""
        request = urllib.request.Request(
            f"{self.url}/l2", data=json.dumps({"state": state}).encode(), method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as resp:
            resp.read()

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.url}{path}", timeout=10) as resp:
            return json.loads(resp.read())


if __name__ == "__main__":
    _Server(**json.loads(sys.argv[1])).serve()
