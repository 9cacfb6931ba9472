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


ONE_PAIR = ["--lengths", "10", "--repeats", "1", "--turns", "0"]  # one cold and one warm request


def _one_request(url: str, out: Path) -> list[str]:
    return ["bench", "--target", url, "--out", str(out), *ONE_PAIR]


def test_a_results_folder_of_someone_elses_files_is_refused_before_any_request(
    tmp_path: Path,
) -> None:
    """Refused before the run (which would otherwise measure for minutes, then find nowhere to
    write): no request reaches the server, the folder is left byte for byte."""
    (tmp_path / "results.json").write_text('{"mine": true}\n')
    with FakeVllm(0.001) as a:
        result = CliRunner().invoke(app, _one_request(a.url, tmp_path))
        assert a.prompts == []
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: --out = {tmp_path}: allowed: a new or empty folder"), line
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
    assert (tmp_path / "results.json").read_text() == '{"mine": true}\n'


def test_a_rerun_into_its_own_results_folder_writes_it_again(tmp_path: Path) -> None:
    with FakeVllm(0.001) as a:
        argv = [*_one_request(a.url, tmp_path), "--seed", "3", "--json"]
        first, again = CliRunner().invoke(app, argv), CliRunner().invoke(app, argv)
    assert (first.exit_code, again.exit_code) == (0, 0), again.output
    assert json.loads(again.stdout)["seed"] == 3
