"""`hpkv bench` against real local HTTP servers (tests/doubles/fake_vllm.py): one JSON object and
the files it names."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from scripts.cli import app
from tests.doubles.fake_vllm import FakeVllm


def test_cli_bench_json(tmp_path: Path) -> None:
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


def test_more_targets_than_bench_reads_are_refused() -> None:
    """bench sends cold requests to the first --target and warm ones to the second: a third
    would be ignored."""
    urls = ["http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"]
    result = CliRunner().invoke(app, ["bench", *[a for u in urls for a in ("--target", u)]])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "--target" in line and "one or two base URLs" in line
