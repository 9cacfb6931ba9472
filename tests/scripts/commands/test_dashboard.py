"""`hpkv dashboard` (what `make dashboard` runs): the environment's Grafana dashboard and alert
rules, and the panels rendered from sample series; --png without --samples is one line and exit 2.

No double: the real dashboard and rules of config/dev.yaml, and the recorded sample series."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from infra.metrics.dashboards import CURVINE_FUSE_DASHBOARD
from scripts.cli import app
from tests.support.endpoint_objects import FIXTURES

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_it_writes_the_dashboard_and_the_alert_rules(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["dashboard", "--env", "dev", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    dashboard, rules = tmp_path / "grafana-dashboard.json", tmp_path / "alert-rules.yaml"
    fuse = tmp_path / "curvine-fuse-dashboard.json"
    assert result.stdout.splitlines() == [
        f"wrote {dashboard} and {rules}",
        f"wrote {fuse} (upstream, import it next to the dashboard)",
    ]
    assert json.loads(dashboard.read_text())["panels"]
    assert yaml.safe_load(rules.read_text())["groups"]
    # dev's L2 is on Curvine: Curvine's FUSE dashboard, byte for byte as kept.
    assert fuse.read_bytes() == CURVINE_FUSE_DASHBOARD.read_bytes()


def test_the_panels_render_from_sample_series(tmp_path: Path) -> None:
    png = tmp_path / "panels.png"
    samples = FIXTURES / "observability_samples.json"
    argv = ["dashboard", "--out", str(tmp_path), "--samples", str(samples), "--png", str(png)]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == f"wrote {png}"
    assert png.read_bytes()[:8] == PNG_MAGIC


def test_a_png_needs_samples(tmp_path: Path) -> None:
    argv = ["dashboard", "--out", str(tmp_path), "--png", str(tmp_path / "x.png")]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: --png = {tmp_path / 'x.png'}: allowed: with --samples FILE")
    assert not (tmp_path / "x.png").exists()


def test_a_missing_or_broken_samples_file_is_a_usage_error_before_anything_is_written(
    tmp_path: Path,
) -> None:
    """An input file the user named is the user's to fix: exit 2, as the exit-code table says."""
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    for samples in (tmp_path / "missing.json", broken):
        out = tmp_path / samples.stem
        argv = [
            "dashboard",
            "--out",
            str(out),
            "--samples",
            str(samples),
            "--png",
            str(out / "p.png"),
        ]
        result = CliRunner().invoke(app, argv)
        assert result.exit_code == 2, result.output
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"error: --samples = {samples}: allowed: a sample series JSON")
        assert not out.exists()


def _samples_line(tmp_path: Path, samples: Path) -> str:
    out = tmp_path / "out"
    argv = ["dashboard", "--out", str(out), "--samples", str(samples), "--png", str(out / "p.png")]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, result.output
    assert not out.exists()
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: --samples = {samples}: allowed: a sample series JSON"), line
    return line


def test_a_dashboard_given_where_samples_belong_is_named_for_what_it_is(tmp_path: Path) -> None:
    """The dashboard `hpkv dashboard` writes is JSON too: reading it as samples used to end in a
    KeyError traceback."""
    first = CliRunner().invoke(app, ["dashboard", "--out", str(tmp_path / "dash")])
    assert first.exit_code == 0, first.output
    line = _samples_line(tmp_path, tmp_path / "dash" / "grafana-dashboard.json")
    assert "this is a Grafana dashboard" in line and "fix: give the samples file" in line


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"[1, 2]", "not an object"),
        (
            b'{"range": {"Hit rate by tier/L0 GPU": [{"labels": {}, "values": [["t", "x"]]}]}}',
            "not [time, number] pairs",
        ),
        (b'{"range": {"Hit rate by tier/L0 GPU": {"labels": {}}}}', "is not a list"),
        (b"\xff\xfe{}", "not JSON"),
    ],
)
def test_samples_of_another_shape_are_refused_before_anything_is_written(
    tmp_path: Path, content: bytes, said: str
) -> None:
    samples = tmp_path / "s.json"
    samples.write_bytes(content)
    assert said in _samples_line(tmp_path, samples)


@pytest.mark.parametrize("kind", ["folder", "fifo", "device"])
def test_samples_that_are_no_file_are_refused_without_reading_them(
    tmp_path: Path, kind: str
) -> None:
    """A FIFO would wait for a writer forever; a folder or a device is no samples file."""
    os.mkfifo(tmp_path / "pipe.json")
    samples = {"folder": tmp_path, "fifo": tmp_path / "pipe.json", "device": Path("/dev/null")}
    line = _samples_line(tmp_path, samples[kind])
    assert ("a folder" if kind == "folder" else "not a regular file") in line


def test_samples_without_a_png_are_refused_instead_of_ignored(tmp_path: Path) -> None:
    samples = FIXTURES / "observability_samples.json"
    argv = ["dashboard", "--out", str(tmp_path / "out"), "--samples", str(samples)]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: --samples = {samples}: allowed: with --png FILE"), line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("png", "allowed"),
    [("panels.jpg", "a file path ending in .png"), ("README.png", "a new file, or one hpkv")],
)
def test_a_png_that_is_not_one_or_not_ours_is_refused_and_left_as_it_was(
    tmp_path: Path, png: str, allowed: str
) -> None:
    (tmp_path / "README.png").write_bytes(b"\x89PNG mine")
    path = tmp_path / png
    argv = [
        "dashboard",
        "--out",
        str(tmp_path / "out"),
        "--samples",
        str(FIXTURES / "observability_samples.json"),
        "--png",
        str(path),
    ]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: --png = {path}: allowed: {allowed}"), line
    assert (tmp_path / "README.png").read_bytes() == b"\x89PNG mine"
    assert not path.exists() or png == "README.png"
    assert not (tmp_path / "out").exists()


def test_an_out_folder_of_someone_elses_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "alert-rules.yaml").write_text("groups: [mine]\n")
    result = CliRunner().invoke(app, ["dashboard", "--out", str(tmp_path)])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: --out = {tmp_path}: allowed: a new or empty folder"), line
    assert [p.name for p in tmp_path.iterdir()] == ["alert-rules.yaml"]
    assert (tmp_path / "alert-rules.yaml").read_text() == "groups: [mine]\n"
