"""The CLI's OpenAI-compatible streaming client against real local HTTP servers
(tests/doubles/fake_vllm.py) that stream tokens after a known delay: TTFT, text and usage.

Nothing here depends on how busy the machine is: a measured TTFT is compared with the interval the
fake server itself recorded (request received -> first token written), which the client's interval
(request started -> first token read) must contain whatever the load; the arithmetic is checked on
the recorded rows. How close TTFT comes to the injected delay is a benchmark figure (``python -m
tools.bench.ttft_accuracy``), not a test."""

from __future__ import annotations

import itertools
import json

import pytest

from scripts.lib.openai_stream import StreamError, read_events, stream_completion
from scripts.lib.prompts import make_prompt
from tests.doubles.fake_vllm import FakeVllm
from tests.support.bench import COLD_S, server_interval_ms


def test_ttft_spans_the_servers_prefill() -> None:
    """The client's TTFT contains the server's received -> first-token interval, and its total
    contains received -> last token: both hold on any machine, loaded or not."""
    with FakeVllm(COLD_S) as server:
        results = [
            stream_completion(server.url, "qwen2-7b", make_prompt(i, 200), max_tokens=4)
            for i in range(5)
        ]
        timings = server.timings
    assert len(timings) == len(results)
    for result, timing in zip(results, timings, strict=True):
        prefill_ms = server_interval_ms(timing, "first_token_sent")
        assert prefill_ms >= COLD_S * 1000  # the server honoured the injected delay
        assert result.ttft_ms >= prefill_ms, (result, timing)
        assert result.total_ms >= server_interval_ms(timing, "last_token_sent"), (result, timing)
        assert result.ttft_ms <= result.total_ms


def _sse(*events: str) -> list[bytes]:
    return [f"data: {e}\n".encode() for e in events] + [b"data: [DONE]\n"]


def test_ttft_is_taken_at_the_first_generated_text() -> None:
    """With a clock that ticks 10 ms per reading, TTFT is the reading at the first event with
    text: not at the role-only chunk before it, not at the last token."""
    ticks = itertools.count(1)
    lines = _sse(
        json.dumps({"choices": [{"text": ""}]}),
        json.dumps({"choices": [{"text": " a"}]}),
        json.dumps({"choices": [{"text": " b"}]}),
        json.dumps({"choices": [], "usage": {"prompt_tokens": 7}}),
    )
    events = read_events(lines, start=0.0, clock=lambda: next(ticks) * 0.010)
    assert events.ttft_ms == 10.0  # the first clock reading: at " a"
    assert events.total_ms == 20.0  # the second and last: at the end of the stream
    assert events.text == " a b" and events.usage == {"prompt_tokens": 7}


def test_a_stream_without_text_has_no_ttft() -> None:
    events = read_events(_sse(json.dumps({"choices": [{"text": ""}]})), 0.0, clock=lambda: 1.0)
    assert events.ttft_ms is None


def test_a_token_whose_text_is_held_back_counts_by_its_usage() -> None:
    """vLLM streams a token that ends inside a character with empty text; with continuous usage
    its chunk counts the token (a random-weight model's first tokens can all be such)."""
    ticks = itertools.count(1)
    held = {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}
    lines = _sse(
        json.dumps({"choices": [{"text": ""}], "usage": {**held, "completion_tokens": 0}}),
        json.dumps({"choices": [{"text": ""}], "usage": held}),
        json.dumps({"choices": [], "usage": held}),
    )
    events = read_events(lines, start=0.0, clock=lambda: next(ticks) * 0.010)
    assert (events.ttft_ms, events.text, events.usage) == (10.0, "", held)


def test_stream_returns_text_and_usage() -> None:
    with FakeVllm(0.005) as server:
        result = stream_completion(server.url, "qwen2-7b", "a b c", max_tokens=3)
    assert result.text == " tok0 tok1 tok2"
    assert result.prompt_tokens == 3 and result.completion_tokens == 3
    assert result.total_ms >= result.ttft_ms


def test_an_error_the_server_streams_is_named_not_taken_for_an_empty_answer() -> None:
    """vLLM ends a stream that failed after its headers with its ErrorResponse as an event."""
    error = {"message": "EngineCore encountered an issue", "type": "InternalServerError"}
    lines = _sse(
        json.dumps({"choices": [{"text": ""}]}), json.dumps({"error": {**error, "code": 500}})
    )
    with pytest.raises(StreamError, match="InternalServerError: EngineCore encountered an issue"):
        read_events(lines, 0.0, clock=lambda: 1.0)
