"""`make bench` compares the project's synth with a bare CDK app like for like: the bare app runs
with aws-cdk-lib's built-in template validation on and off, and the report says which ratio is
against which (this project's apps turn that validation off)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tools.bench.synth_bench import BARE_APP, LABELS, bare_app_command, report_lines

ROOT = Path(__file__).resolve().parents[3]


def test_the_bare_app_runs_with_cdks_validation_on_and_off(tmp_path: Path) -> None:
    """aws-cdk-lib writes validation-report.json only when its built-in validation ran: the two
    bare apps the bench times are what their labels say."""
    script = tmp_path / "bare_app.py"
    script.write_text(BARE_APP)
    env = {**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"}
    runs = {
        v: subprocess.Popen(bare_app_command(script, tmp_path / v, v), cwd=ROOT, env=env)
        for v in ("on", "off")
    }
    assert all(proc.wait(timeout=300) == 0 for proc in runs.values())
    assert (tmp_path / "on" / "Bare.template.json").is_file()
    assert (tmp_path / "off" / "Bare.template.json").is_file()
    assert (tmp_path / "on" / "validation-report.json").is_file()
    assert not (tmp_path / "off" / "validation-report.json").exists()


def test_the_report_gives_make_synths_ratio_to_each_bare_app_and_names_it() -> None:
    wall = {"bare_on": 4.0, "bare_off": 1.0, "full": 4.5, "make": 8.0}
    mem = {"bare_on": 500.0, "bare_off": 250.0, "full": 230.0, "make": 230.0}
    lines = report_lines(wall, mem, runs=3, env="dev")
    rows = {
        label.format(env="dev"): line
        for label in LABELS.values()
        for line in lines
        if line.startswith(label.format(env="dev"))
    }
    assert len(rows) == len(LABELS), lines
    make_row = rows["make synth (+ cfn-lint), CDK validation off"]
    # wall/bare off, mem/bare off, wall/bare on
    assert re.findall(r"([\d.]+)x", make_row) == ["8.00", "0.92", "2.00"]
    verdict = lines[-1]
    like_for_like = re.search(r"([\d.]+)x the bare app with CDK's validation off", verdict)
    default = re.search(r"([\d.]+)x the bare app with it on", verdict)
    assert like_for_like and like_for_like.group(1) == "8.00", verdict
    assert default and default.group(1) == "2.00", verdict
