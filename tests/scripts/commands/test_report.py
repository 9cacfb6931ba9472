"""``hpkv report`` against a local Prometheus-compatible fake serving recorded samples, with
requests signed by botocore's SigV4 signer from fake static credentials (no AWS, no network)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from infra.config import load_config
from infra.metrics.dashboards import Queries, l2_used_percent, rows
from scripts.cli import app
from scripts.commands import report
from scripts.lib import runtime
from scripts.lib.errors import Exit
from tests.doubles.fake_prometheus import FakePrometheus
from tests.support.endpoint_objects import FIXTURES

SAMPLES = FIXTURES / "observability_samples.json"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakePrometheus:
    for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    samples: dict[str, Any] = json.loads(SAMPLES.read_text())
    config = load_config("dev")
    inst = samples["instant"]
    instant: dict[str, float] = {}
    for e in config.kvcache.endpoints:
        q = Queries(config, e, window="1h")
        instant |= {
            q.l0_hit_rate(): inst["l0_hit_rate"],
            q.l1_hit_rate(): inst["l1_hit_rate"],
            q.l2_hit_rate(): inst["l2_hit_rate"],
            q.ttft(0.5): inst["ttft_p50_seconds"],
            q.failed_load_rate(): inst["failed_load_rate"],
            q.ttft(0.95): inst["ttft_p95_seconds"],
            q.ttft(0.99): inst["ttft_p99_seconds"],
            q.request_rate(): inst["requests_per_second"],
        }
    instant[l2_used_percent(config)] = inst["l2_used_percent"]
    ranges = {
        t.expr: samples["range"][f"{p.title}/{t.legend}"]
        for r in rows(config)
        for p in r.panels
        for t in p.targets
    }
    return FakePrometheus(instant, ranges)


def test_report_json_from_the_fake(
    fake: FakePrometheus, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "report.png"
    with fake.serve() as url:
        code = report.run(report.ReportOptions(as_json=True, endpoint=url, png=png))
    assert code == Exit.OK
    out = json.loads(capsys.readouterr().out)
    (ep,) = out["endpoints"].values()
    assert ep["l0_hit_rate"] == pytest.approx(0.352)
    assert ep["l2_hit_rate"] == pytest.approx(0.287)
    assert ep["l2_backend"] == "curvine" and ep["failed_load_rate"] == pytest.approx(0.003)
    assert ep["ttft_p95_seconds"] == pytest.approx(0.934)
    assert out["l2"] == {
        "used_percent": pytest.approx(71.4),
        "high_water_percent": 85,
        "low_water_percent": 70,
    }
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # every panel target was fetched as a range query
    assert {p for p, _, _ in fake.requests} == {
        "/workspaces/ws-test/api/v1/query",
        "/workspaces/ws-test/api/v1/query_range",
    }


def test_every_request_is_sigv4_signed_for_aps(fake: FakePrometheus, tmp_path: Path) -> None:
    with fake.serve() as url:
        assert report.run(report.ReportOptions(endpoint=url, png=tmp_path / "r.png")) == Exit.OK
    assert fake.requests
    for _path, _params, headers in fake.requests:
        auth = headers["Authorization"]
        assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
        assert "/us-west-2/aps/aws4_request" in auth
        assert "SignedHeaders=host;x-amz-date" in auth and "Signature=" in auth
        assert "X-Amz-Date" in headers


def test_table_and_missing_values(
    fake: FakePrometheus, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fake.instant.clear()  # no data yet: every value is "-", nothing crashes
    with fake.serve() as url:
        assert report.run(report.ReportOptions(endpoint=url, png=tmp_path / "r.png")) == Exit.OK
    text = capsys.readouterr().out
    assert "inference/qwen3-8b" in text and "L2 used: -" in text


@pytest.mark.parametrize("window", ["an hour", "0h", "²h", "3651d", "99999999999d"])
def test_bad_window_fails_with_one_line(window: str) -> None:
    """Superscript digits pass str.isdigit but not int(); a window past ten years past what a
    date holds: each one line, before anything is read."""
    result = CliRunner().invoke(app, ["report", "--env", "dev", "--window", window])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"error: --window = {window!r}: allowed: "
        if " " in window
        else f"error: --window = {window}: allowed: a whole number"
    ), line


@pytest.mark.parametrize("window", ["1m", "1h", "3650d"])
def test_a_window_in_range_is_read(window: str) -> None:
    assert report.window_seconds(window) > 0


def test_cli_report_command_reaches_the_fake(fake: FakePrometheus, tmp_path: Path) -> None:
    """`hpkv report` is the same report, through the CLI's entry point."""
    png = tmp_path / "cli.png"
    with fake.serve() as url:
        result = CliRunner().invoke(
            app, ["report", "--env", "dev", "--json", "--endpoint", url, "--png", str(png)]
        )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["l2"]["high_water_percent"] == 85
    assert png.is_file()


def test_cli_report_without_credentials_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    result = CliRunner().invoke(app, ["report", "--env", "dev", "--endpoint", "http://127.0.0.1:9"])
    assert result.exit_code == 4
    assert result.stderr.strip().splitlines() == [
        "error: no AWS credentials to sign AMP queries with: run `aws configure` or set AWS_PROFILE"
    ]


def _observability_off(monkeypatch: pytest.MonkeyPatch) -> None:
    base = load_config("dev")
    off = base.observability.model_copy(update={"enabled": False})
    monkeypatch.setattr(
        runtime, "load_config", lambda env: base.model_copy(update={"observability": off})
    )


def test_an_environment_without_observability_is_told_so_not_blamed_on_credentials(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No metrics store is deployed there: the line says so and how to get one, whatever the
    credentials (it used to end in "no AWS credentials")."""
    _observability_off(monkeypatch)
    result = CliRunner().invoke(app, ["report", "--png", str(tmp_path / "r.png")])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        "error: config/dev.yaml: observability.enabled = false: allowed: true for a report"
    ), line
    assert "fix: set observability.enabled: true and deploy, or pass --endpoint" in line
    assert not (tmp_path / "r.png").exists()


def test_without_observability_a_prometheus_given_by_endpoint_is_read(
    fake: FakePrometheus, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _observability_off(monkeypatch)
    with fake.serve() as url:
        result = CliRunner().invoke(
            app, ["report", "--json", "--endpoint", url, "--png", str(tmp_path / "r.png")]
        )
    assert result.exit_code == 0, result.output
    assert fake.requests


@pytest.mark.parametrize("endpoint", ["localhost:9090", "prometheus.internal/api", "http://"])
def test_an_endpoint_without_scheme_or_host_is_refused_before_any_request(endpoint: str) -> None:
    """``localhost:9090`` reads as a URL of scheme "localhost": urllib would refuse it with a
    traceback, after the credentials were looked up."""
    result = CliRunner().invoke(app, ["report", "--endpoint", endpoint])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"error: --endpoint = {endpoint}: allowed: a URL with scheme and host"
    ), line


def test_a_png_of_someone_elses_is_not_written_over(fake: FakePrometheus, tmp_path: Path) -> None:
    picture = tmp_path / "report.png"
    picture.write_bytes(b"\x89PNG my holiday")
    with fake.serve() as url:
        result = CliRunner().invoke(app, ["report", "--endpoint", url, "--png", str(picture)])
        assert fake.requests == []  # refused before any query
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: --png = {picture}: allowed: a new file, or one hpkv wrote"), (
        line
    )
    assert picture.read_bytes() == b"\x89PNG my holiday"
