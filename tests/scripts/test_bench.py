"""`bench` against real local HTTP servers (tests/scripts/fake_vllm.py) that stream tokens after a
known delay: the measured TTFT must match the injected delay. No AWS or Kubernetes involved."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scripts.bench import (
    BenchResult,
    make_sender,
    run_concurrency,
    run_sweep,
    run_turns,
    write_results,
)
from scripts.openai_stream import stream_completion
from scripts.prompts import make_prompt
from tests.scripts.fake_vllm import FakeVllm

COLD_S, WARM_S = 0.060, 0.015
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_ttft_matches_the_injected_delay() -> None:
    with FakeVllm(COLD_S) as server:
        ttfts = [
            stream_completion(server.url, "qwen2-7b", make_prompt(i, 200), max_tokens=4).ttft_ms
            for i in range(15)
        ]
    assert abs(statistics.median(ttfts) - COLD_S * 1000) <= 2.0, ttfts


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
    summary = result.summary()
    # Three pairs per length: the 2 ms bound is the dedicated test's; here the shape matters.
    for n in ("500", "1000"):
        assert summary[n]["cold_median_ms"] == pytest.approx(COLD_S * 1000, abs=6.0)
        assert summary[n]["warm_median_ms"] == pytest.approx(WARM_S * 1000, abs=6.0)
        assert summary[n]["speedup"] > 2.5
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
    assert saved["summary"]["500"]["speedup"] > 2


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
