"""`bench` against real local HTTP servers (tests/doubles/fake_vllm.py) that stream tokens after a
known delay. No AWS or Kubernetes involved.

Nothing here depends on how busy the machine is: a measured TTFT is compared with the interval the
fake server itself recorded (request received -> first token written), which the client's interval
(request started -> first token read) must contain whatever the load; the arithmetic is checked on
the recorded rows. How close TTFT comes to the injected delay is a benchmark figure
(``python -m tools.bench.ttft_accuracy``), not a test.
"""

from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path

from typer.testing import CliRunner

from scripts.lib.bench import (
    BenchResult,
    make_sender,
    run_concurrency,
    run_sweep,
    run_turns,
    write_results,
)
from scripts.lib.openai_stream import read_events, stream_completion
from scripts.lib.prompts import make_prompt
from tests.doubles.fake_vllm import FakeVllm

COLD_S, WARM_S = 0.060, 0.015
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _server_interval_ms(timing: dict[str, float], end: str) -> float:
    return (timing[end] - timing["received"]) * 1000


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
        prefill_ms = _server_interval_ms(timing, "first_token_sent")
        assert prefill_ms >= COLD_S * 1000  # the server honoured the injected delay
        assert result.ttft_ms >= prefill_ms, (result, timing)
        assert result.total_ms >= _server_interval_ms(timing, "last_token_sent"), (result, timing)
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


def test_stream_returns_text_and_usage() -> None:
    with FakeVllm(0.005) as server:
        result = stream_completion(server.url, "qwen2-7b", "a b c", max_tokens=3)
    assert result.text == " tok0 tok1 tok2"
    assert result.prompt_tokens == 3 and result.completion_tokens == 3
    assert result.total_ms >= result.ttft_ms


def test_prompts_are_deterministic_and_identical_on_both_targets() -> None:
    assert make_prompt(7, 1900) == make_prompt(7, 1900)
    assert make_prompt(7, 1900) != make_prompt(8, 1900)
    with FakeVllm(0.001) as a, FakeVllm(0.001) as b:
        send = make_sender("qwen2-7b", 2)
        run_sweep(send, [a.url, b.url], [100, 300], repeats=2, seed=42)
        assert a.prompts == b.prompts  # byte-identical, in the same order
        assert len(set(a.prompts)) == 4  # every cold request starts a fresh prefix
        assert [len(p.split()) for p in a.prompts] == [100, 100, 300, 300]


def test_sweep_turns_concurrency_and_files(tmp_path: Path) -> None:
    with FakeVllm(COLD_S) as cold, FakeVllm(WARM_S) as warm:
        send = make_sender("qwen2-7b", 2)
        targets = [cold.url, warm.url]
        result = BenchResult(1, targets)
        result.sweep = run_sweep(send, targets, [500, 1000], repeats=3, seed=1)
        result.turns = run_turns(send, targets, turns=3, words_per_turn=100, seed=1)
        result.concurrency = run_concurrency(send, targets, [1, 3], words=200, seed=1)
        # The sweep's six pairs are the first six requests each server received.
        cold_prompts, warm_prompts = cold.prompts[:6], warm.prompts[:6]
        cold_timings, warm_timings = cold.timings[:6], warm.timings[:6]
    summary = result.summary()
    # Cold requests went to the cold server and warm ones, byte-identical, to the warm server.
    assert cold_prompts == warm_prompts and len(set(cold_prompts)) == 6
    for row, timing in zip(result.sweep, cold_timings, strict=True):
        assert row.cold_ttft_ms >= _server_interval_ms(timing, "first_token_sent")
    for row, timing in zip(result.sweep, warm_timings, strict=True):
        assert row.warm_ttft_ms >= _server_interval_ms(timing, "first_token_sent")
    # The summary is the median over the three repeats of each length.
    for n in ("500", "1000"):
        rows = [r for r in result.sweep if r.prompt_words == int(n)]
        assert len(rows) == 3
        assert summary[n]["cold_median_ms"] == statistics.median(r.cold_ttft_ms for r in rows)
        assert summary[n]["warm_median_ms"] == statistics.median(r.warm_ttft_ms for r in rows)
        assert summary[n]["speedup"] == statistics.median(
            r.cold_ttft_ms / r.warm_ttft_ms for r in rows
        )
    # History grows every turn.
    sizes = [t.prompt_tokens or 0 for t in result.turns]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    assert [c.concurrency for c in result.concurrency] == [1, 3]

    files = write_results(result, tmp_path)
    names = {f.name for f in files}
    assert {
        "results.json",
        "sweep.csv",
        "turns.csv",
        "concurrency.csv",
        "ttft_vs_prompt.png",
        "speedup_per_turn.png",
        "ttft_vs_concurrency.png",
    } <= names
    for png in tmp_path.glob("*.png"):
        data = png.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000
    rows = (tmp_path / "sweep.csv").read_text().splitlines()
    assert rows[0].startswith("prompt_words,repeat,prompt_tokens,cold_ttft_ms,warm_ttft_ms")
    assert len(rows) == 1 + 6
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["summary"] == json.loads(json.dumps(summary))


def test_cli_bench_json(tmp_path: Path) -> None:
    from scripts.cli import app

    with FakeVllm(0.010) as a, FakeVllm(0.004) as b:
        result = CliRunner().invoke(
            app,
            [
                "bench",
                "--target",
                a.url,
                "--target",
                b.url,
                "--lengths",
                "100,200",
                "--repeats",
                "1",
                "--turns",
                "2",
                "--turn-words",
                "50",
                "--seed",
                "5",
                "--out",
                str(tmp_path),
                "--json",
            ],
        )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["seed"] == 5 and len(data["sweep"]) == 2 and len(data["turns"]) == 2
    assert (tmp_path / "ttft_vs_prompt.png").stat().st_size > 0
