"""The benchmarks (sweep, turns, concurrency) and the files they write, against real local HTTP
servers (tests/doubles/fake_vllm.py).

Nothing here depends on how busy the machine is: a measured TTFT is compared with the interval
the fake server itself recorded (request received -> first token written), which the client's
interval (request started -> first token read) must contain whatever the load; the arithmetic is
checked on the recorded rows. How close TTFT comes to the injected delay is a benchmark figure
(``python -m tools.bench.ttft_accuracy``), not a test."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from scripts.lib.bench import (
    BenchResult,
    make_sender,
    run_concurrency,
    run_sweep,
    run_turns,
    write_results,
)
from tests.doubles.fake_vllm import FakeVllm
from tests.support.bench import COLD_S, WARM_S, server_interval_ms

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


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
        assert row.cold_ttft_ms >= server_interval_ms(timing, "first_token_sent")
    for row, timing in zip(result.sweep, warm_timings, strict=True):
        assert row.warm_ttft_ms >= server_interval_ms(timing, "first_token_sent")
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
