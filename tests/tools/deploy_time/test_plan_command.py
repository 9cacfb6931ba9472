"""`python -m tools.deploy_time plan` (what `make deploy-plan` runs): the modelled deploy and
destroy times of a cloud assembly, as lines or one JSON object, with a Gantt chart; without an
assembly, one line and exit 2.

No double: a small hand-written cloud assembly and the durations table the command reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.assembly import write_assembly
from tools.deploy_time.__main__ import main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _assembly(tmp_path: Path) -> Path:
    topic = {"Type": "AWS::SNS::Topic"}
    stacks = {"base": ([], {"A": topic}), "top": (["base"], {"B": topic})}
    return write_assembly(tmp_path / "cdk.out", stacks)


def test_it_prints_deploy_and_destroy_times_and_draws_the_chart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "plan.png"
    assert main(["plan", "--out", str(_assembly(tmp_path)), "--png", str(png)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("cdk deploy --all: ") and "min as deployed, floor" in lines[0]
    assert any(line.startswith("cdk destroy --all: ") for line in lines)
    assert lines[-1] == f"wrote {png}" and png.read_bytes()[:8] == PNG_MAGIC


def test_json_is_one_object_with_both_directions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "--out", str(_assembly(tmp_path)), "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["deploy"]["as_deployed_minutes"] >= figures["deploy"]["floor_minutes"] > 0
    assert figures["destroy"]["critical_path"]


def test_without_a_cloud_assembly_it_says_to_synthesize_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line == f"error: no cloud assembly in {tmp_path}: run `make synth` first"
