"""``hpkv report``: each tier's hit rate, TTFT percentiles and L2 use over a window (default the
last hour), read from the AMP workspace, as a table or ``--json``, plus a PNG of the dashboard's
panels over the same window (default ``dist/<env>/report.png``)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
from botocore.credentials import Credentials

from infra.cdk.written import OutputFile
from infra.metrics.dashboards import rows
from scripts.lib import runtime
from scripts.lib.errors import CliError, Exit
from scripts.lib.report import (
    PromClient,
    query_endpoint,
    range_step,
    render_png,
    summary,
    table,
    window_seconds,
)


@dataclass(frozen=True)
class ReportOptions:
    env: str = "dev"
    window: str = "1h"
    as_json: bool = False
    png: Path | None = None
    """Default: dist/<env>/report.png."""
    endpoint: str | None = None
    """Prometheus query URL (default: the AMP workspace)."""


def run(o: ReportOptions) -> Exit:
    window, as_json = o.window, o.as_json
    config = runtime.config(o.env)
    seconds = window_seconds(window)  # checked when the command line was parsed
    if not config.observability.enabled and o.endpoint is None:
        raise CliError(
            f"config/{config.environment}.yaml: observability.enabled = false: allowed: true "
            "for a report (it reads the environment's metrics store, which only "
            "observability.enabled deploys); fix: set observability.enabled: true and deploy, "
            "or pass --endpoint with the URL of a Prometheus that scrapes the endpoints",
            Exit.USAGE,
        )
    path = o.png or Path("dist") / config.environment / "report.png"
    picture = OutputFile(path, "--png")
    picture.check()  # before anything is queried
    base = o.endpoint or query_endpoint(config)
    found = boto3.Session(region_name=config.region).get_credentials()
    if found is None:
        raise runtime.fail(
            "no AWS credentials to sign AMP queries with: run `aws configure` or set AWS_PROFILE"
        )
    frozen = found.get_frozen_credentials()
    credentials = Credentials(frozen.access_key, frozen.secret_key, frozen.token)
    client = PromClient(base, config.region, credentials)
    end = datetime.now(UTC)
    report = summary(config, client, window, end)
    print(json.dumps(report, indent=2) if as_json else table(report))
    start = end - timedelta(seconds=seconds)
    step = range_step(seconds)
    render_png(
        rows(config),
        lambda _p, t: client.series(t.expr, start, end, step),
        path,
        f"{config.stack_prefix}: last {window}",
    )
    picture.record()
    print(f"wrote {path}", file=sys.stderr)
    return Exit.OK
