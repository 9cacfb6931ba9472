"""`make validate` (tools/validate_templates.py): real cfn-lint over a made-up cloud assembly."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support import background
from tests.support.logs import line_saying
from tools.validate_templates import main, shares

BUCKET = {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": "kvcache-logs-111122223333"}}


def write_assembly(outdir: Path, templates: dict[str, dict[str, object]]) -> None:
    artifacts = {}
    for name, resources in templates.items():
        (outdir / f"{name}.template.json").write_text(json.dumps({"Resources": resources}))
        artifacts[name] = {
            "type": "aws:cloudformation:stack",
            "environment": "aws://111122223333/us-west-2",
        }
    (outdir / "manifest.json").write_text(json.dumps({"artifacts": artifacts}))


def test_an_error_in_one_template_fails_the_run_and_names_that_template(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    misspelt = {"Type": "AWS::S3::Bucket", "Properties": {"BucketNme": "kvcache-logs"}}
    write_assembly(
        tmp_path,
        {"good": {"Logs": BUCKET}, "bad": {"Logs": misspelt}, "also-good": {"Logs": BUCKET}},
    )
    assert main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    # One line per template: its name, whether it passed and its counts.
    line_saying(out, "ok", " good.template.json", "0 errors", "0 warnings")
    line_saying(out, "ok", "also-good.template.json", "0 errors", "0 warnings")
    line_saying(out, "FAIL", "bad.template.json", "1 errors", "0 warnings")
    assert "E3002" in out and "BucketNme" in out


def test_clean_templates_pass(tmp_path: Path) -> None:
    write_assembly(tmp_path, {"one": {"Logs": BUCKET}, "two": {"Logs": BUCKET}})
    assert main([str(tmp_path)]) == 0


def test_each_template_is_linted_once_in_groups_of_about_equal_size(tmp_path: Path) -> None:
    sizes = {"a": 900, "b": 500, "c": 400, "d": 100}
    templates = []
    for name, size in sizes.items():
        (tmp_path / name).write_text("x" * size)
        templates.append(tmp_path / name)
    groups = shares(templates, 2)
    assert sorted(t.name for group in groups for t in group) == ["a", "b", "c", "d"]
    assert sorted(sum(sizes[t.name] for t in group) for group in groups) == [900, 1000]
    assert shares(templates[:1], 2) == [[templates[0]]]


def test_the_suites_background_lint_reports_each_templates_own_errors(tmp_path: Path) -> None:
    """The suite's background lint runs once over an assembly; each template gets its errors."""
    misspelt = {"Type": "AWS::S3::Bucket", "Properties": {"BucketNme": "kvcache-logs"}}
    write_assembly(tmp_path, {"good": {"Logs": BUCKET}, "bad": {"Logs": misspelt}})
    assert background.lint_errors(tmp_path / "good.template.json", "us-west-2") == []
    (error,) = background.lint_errors(tmp_path / "bad.template.json", "us-west-2")
    assert "E3002" in error and "BucketNme" in error


def test_after_runs_the_synth_first_and_lints_what_it_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`make synth` passes its synth as --after: the workers load cfn-lint while it runs."""
    writer = (
        "import sys; from pathlib import Path; from tests.tools.test_validate_templates "
        "import BUCKET, write_assembly; write_assembly(Path(sys.argv[1]), {'late': {'L': BUCKET}})"
    )
    assert main([str(tmp_path), "--after", sys.executable, "-c", writer, str(tmp_path)]) == 0
    assert "cfn-lint ok: late.template.json" in capsys.readouterr().out


def test_a_failed_synth_stops_with_its_exit_code_before_any_lint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path), "--after", sys.executable, "-c", "raise SystemExit(2)"]) == 2
    assert "cfn-lint" not in capsys.readouterr().out
