"""`hpkv dashboard` (what `make dashboard` runs): the environment's Grafana dashboard and alert
rules, and the panels rendered from sample series; --png without --samples is one line and exit 2.

No double: the real dashboard and rules of config/dev.yaml, and the recorded sample series."""

from __future__ import annotations

import json
from pathlib import Path

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
    assert result.stderr.splitlines() == ["error: --png needs --samples"]
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
        assert line.startswith(f"error: --samples {samples}: ")
        assert not out.exists()
