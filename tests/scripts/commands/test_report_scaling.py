"""``hpkv report``'s replicas: serving now, the scale events of the window (each change of the
serving count) and, for an autoscaled endpoint, what its signal asks for within its bounds.
Against the local Prometheus-compatible fake (tests/doubles/fake_prometheus.py) answering the
exact queries ``infra.metrics.scaling`` builds, signed by botocore with fake static credentials."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from infra.config import AppConfig, parse_config
from infra.metrics.scaling import serving_replicas, wanted_replicas
from scripts.commands import report
from scripts.lib import runtime
from scripts.lib.errors import Exit
from tests.doubles.fake_prometheus import FakePrometheus
from tests.support.config import SOURCE, with_overrides

T0 = 1_764_842_400.0  # 2025-12-04T10:00:00Z


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch) -> AppConfig:
    for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    auto = {"min_replicas": 1, "max_replicas": 2}
    cfg = parse_config(with_overrides({"kvcache.endpoints.0.autoscaling": auto}), SOURCE)
    monkeypatch.setattr(runtime, "load_config", lambda env: cfg)
    return cfg


def _fake(cfg: AppConfig, counts: list[float]) -> FakePrometheus:
    e = cfg.kvcache.endpoints[0]
    points = [(T0 + 60 * i, v) for i, v in enumerate(counts)]
    return FakePrometheus(
        {serving_replicas(e): counts[-1], wanted_replicas(cfg, e): 2.0},
        {serving_replicas(e): [{"labels": {}, "values": points}]},
    )


def test_scale_events_are_the_changes_of_the_serving_count(
    config: AppConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = _fake(config, [1, 1, 2, 2, 2, 1])
    with fake.serve() as url:
        options = report.ReportOptions(as_json=True, endpoint=url, png=tmp_path / "r.png")
        assert report.run(options) == Exit.OK
    (ep,) = json.loads(capsys.readouterr().out)["endpoints"].values()
    at = [datetime.fromtimestamp(T0 + 60 * i, UTC).isoformat() for i in (2, 5)]
    assert ep["scale_events"] == [
        {"at": at[0], "from": 1, "to": 2},
        {"at": at[1], "from": 2, "to": 1},
    ]
    assert ep["replicas_serving"] == 1.0 and ep["replicas_wanted"] == 2.0
    assert (ep["min_replicas"], ep["max_replicas"]) == (1, 2)


def test_a_steady_count_has_no_events_and_the_table_says_so(
    config: AppConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = _fake(config, [2, 2, 2])
    with fake.serve() as url:
        assert report.run(report.ReportOptions(endpoint=url, png=tmp_path / "r.png")) == Exit.OK
    line = next(x for x in capsys.readouterr().out.splitlines() if "replicas serving" in x)
    assert line.startswith("inference/qwen3-8b replicas serving 2, wanted 2 of 1..2")
    assert line.endswith("scale events: none")
