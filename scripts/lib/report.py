"""What ``hpkv report`` reads and draws: each tier's hit rate (``infra.metrics.tiers``), the share
of KV loads that failed, TTFT percentiles and L2 use over a window, read from the AMP workspace, as
a table or JSON, and a PNG of the dashboard's panels over the same window (``render_png``, which
``hpkv dashboard --png`` also draws from sample series).

Queries go to the workspace's Prometheus-compatible API (``/api/v1/query`` and
``/api/v1/query_range``), SigV4-signed for service ``aps`` with botocore's signer. The endpoint
is ``observability.query_endpoint`` or, when unset, found by the workspace alias.
"""

from __future__ import annotations

import itertools
import json
import math
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from infra.config import AppConfig
from infra.environment.amp_workspace import workspace_alias
from infra.metrics.dashboards import Panel, Queries, Row, Target, l2_used_percent
from infra.metrics.scaling import serving_replicas, wanted_replicas

WINDOWS = {"m": 60, "h": 3600, "d": 86400}
LONGEST_WINDOW_S = 3650 * 86400  # ten years: far past any retention, within what dates can hold
WINDOW_ALLOWED = "a whole number and m, h or d, e.g. 15m, 1h, 1d (at most 3650d)"


def window_seconds(text: str) -> int:
    """``1h`` -> 3600; ValueError for anything else (digits are ASCII: ``int`` reads other
    scripts' digits, ``isdigit`` also passes superscripts ``int`` refuses)."""
    number, unit = text[:-1], text[-1:]
    ok = unit in WINDOWS and number.isascii() and number.isdigit() and not number.startswith("0")
    seconds = int(number) * WINDOWS[unit] if ok else 0
    if not 0 < seconds <= LONGEST_WINDOW_S:
        raise ValueError(f"window {text!r}: allowed: {WINDOW_ALLOWED}")
    return seconds


@dataclass
class PromClient:
    """Prometheus HTTP API client; signs every request when ``credentials`` are given."""

    base_url: str
    region: str
    credentials: Credentials | None
    timeout: float = 30.0

    def _get(self, path: str, params: dict[str, str]) -> Any:
        url = self.base_url.rstrip("/") + path + "?" + urllib.parse.urlencode(params)
        request = AWSRequest(method="GET", url=url)
        if self.credentials is not None:
            SigV4Auth(self.credentials, "aps", self.region).add_auth(request)
        prepared = urllib.request.Request(url, headers=dict(request.headers.items()))
        with urllib.request.urlopen(prepared, timeout=self.timeout) as response:
            body = json.load(response)
        if body.get("status") != "success":
            raise RuntimeError(f"{path}: {body.get('error', body)}")
        return body["data"]

    def scalar(self, expr: str, at: datetime) -> float | None:
        data = self._get("/api/v1/query", {"query": expr, "time": f"{at.timestamp():.3f}"})
        result = data.get("result", [])
        if not result:
            return None
        value = float(result[0]["value"][1])
        return None if math.isnan(value) or math.isinf(value) else value

    def series(
        self, expr: str, start: datetime, end: datetime, step: int
    ) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
        params = {
            "query": expr,
            "start": f"{start.timestamp():.3f}",
            "end": f"{end.timestamp():.3f}",
            "step": f"{step}",
        }
        data = self._get("/api/v1/query_range", params)
        return [
            (r["metric"], [(float(t), float(v)) for t, v in r["values"]])
            for r in data.get("result", [])
        ]


def query_endpoint(config: AppConfig, amp: Any = None) -> str:
    if config.observability.query_endpoint:
        return config.observability.query_endpoint
    amp = amp or boto3.client("amp", region_name=config.region)
    alias = workspace_alias(config)
    for ws in amp.list_workspaces(alias=alias).get("workspaces", []):
        described = amp.describe_workspace(workspaceId=ws["workspaceId"])["workspace"]
        endpoint: str = described["prometheusEndpoint"]
        return endpoint
    raise LookupError(f"no AMP workspace with alias {alias}: is observability.enabled deployed?")


def range_step(seconds: int) -> int:
    """About 120 points over the window, never closer than the 30 s scrape interval."""
    return max(30, seconds // 120)


def scale_events(points: list[tuple[float, float]]) -> list[dict[str, Any]]:
    """Each change of the serving replica count, in time order: when, from and to (a gap in
    the series, no sample, is no event)."""
    out = []
    for (_, before), (t, now) in itertools.pairwise(points):
        if now != before:
            at = datetime.fromtimestamp(t, UTC).isoformat()
            out.append({"at": at, "from": int(before), "to": int(now)})
    return out


def _replicas(
    config: AppConfig, client: PromClient, e: Any, start: datetime, at: datetime
) -> dict[str, Any]:
    """Replicas serving now, their changes over the window, and for an autoscaled endpoint what
    its signal asks for and its bounds (``infra.metrics.scaling``)."""
    step = range_step(int((at - start).total_seconds()))
    found = client.series(serving_replicas(e), start, at, step)
    out: dict[str, Any] = {
        "replicas_serving": client.scalar(serving_replicas(e), at),
        "scale_events": scale_events(found[0][1]) if found else [],
    }
    if e.autoscaling is not None:
        out |= {
            "replicas_wanted": client.scalar(wanted_replicas(config, e), at),
            "min_replicas": e.autoscaling.min_replicas,
            "max_replicas": e.autoscaling.max_replicas,
        }
    return out


def summary(config: AppConfig, client: PromClient, window: str, at: datetime) -> dict[str, Any]:
    """Hit rate per tier, TTFT percentiles, request rate and replicas (with their scale events)
    per endpoint; L2 use, over window."""
    out: dict[str, Any] = {
        "environment": config.environment,
        "window": window,
        "end": at.isoformat(),
        "endpoints": {},
    }
    start = at - timedelta(seconds=window_seconds(window))
    for e in config.kvcache.endpoints:
        q = Queries(config, e, window=window)
        l2 = q.l2_hit_rate()
        out["endpoints"][f"{e.namespace}/{e.name}"] = {
            "l2_backend": q.endpoint.l2_backend,
            "l0_hit_rate": client.scalar(q.l0_hit_rate(), at),
            "l1_hit_rate": client.scalar(q.l1_hit_rate(), at),
            "l2_hit_rate": None if l2 is None else client.scalar(l2, at),
            "failed_load_rate": client.scalar(q.failed_load_rate(), at),
            "ttft_p50_seconds": client.scalar(q.ttft(0.5), at),
            "ttft_p95_seconds": client.scalar(q.ttft(0.95), at),
            "ttft_p99_seconds": client.scalar(q.ttft(0.99), at),
            "requests_per_second": client.scalar(q.request_rate(), at),
            **_replicas(config, client, e, start, at),
        }
    if "curvine" in config.kvcache.l2_backends:
        ev = config.kvcache.curvine.evictor
        out["l2"] = {
            "used_percent": client.scalar(l2_used_percent(config), at),
            "high_water_percent": ev.high_water_percent,
            "low_water_percent": ev.low_water_percent,
        }
    return out


def _fmt(value: float | None, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "rate":
        return f"{100 * value:.1f}%"
    if kind == "s":
        return f"{value * 1000:.0f} ms"
    return f"{value:.2f}"


def table(report: dict[str, Any]) -> str:
    head = [
        "endpoint",
        "L2 backend",
        "L0 hit",
        "L1 hit",
        "L2 hit",
        "failed loads",
        "TTFT p50",
        "TTFT p95",
        "TTFT p99",
        "req/s",
    ]
    lines = [head]
    for name, r in report["endpoints"].items():
        lines.append(
            [
                name,
                r["l2_backend"],
                _fmt(r["l0_hit_rate"], "rate"),
                _fmt(r["l1_hit_rate"], "rate"),
                _fmt(r["l2_hit_rate"], "rate"),
                _fmt(r["failed_load_rate"], "rate"),
                _fmt(r["ttft_p50_seconds"], "s"),
                _fmt(r["ttft_p95_seconds"], "s"),
                _fmt(r["ttft_p99_seconds"], "s"),
                _fmt(r["requests_per_second"], "n"),
            ]
        )
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    text = [
        f"{report['environment']}: last {report['window']} to {report['end']}",
        *("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in lines),
    ]
    for name, r in report["endpoints"].items():
        events = (
            ", ".join(f"{ev['at'][11:16]} {ev['from']} -> {ev['to']}" for ev in r["scale_events"])
            or "none"
        )
        serving = _fmt(r["replicas_serving"], "n").removesuffix(".00")
        bounds = ""
        if "max_replicas" in r:
            wanted = _fmt(r["replicas_wanted"], "n").removesuffix(".00")
            bounds = f", wanted {wanted} of {r['min_replicas']}..{r['max_replicas']}"
        text.append(f"{name} replicas serving {serving}{bounds}; scale events: {events}")
    if "l2" in report:
        l2 = report["l2"]
        used = "-" if l2["used_percent"] is None else f"{l2['used_percent']:.1f}%"
        text.append(
            f"L2 used: {used} of the pool (evictor high water "
            f"{l2['high_water_percent']}%, low {l2['low_water_percent']}%)"
        )
    return "\n".join(text)


def render_png(
    rows_: list[Row],
    fetch: Callable[[Panel, Target], list[tuple[dict[str, str], list[tuple[float, float]]]]],
    path: Path,
    title: str,
) -> Path:
    """One subplot per panel, a row of subplots per dashboard row. ``fetch(panel, target)``
    returns ``[(labels, [(t, v), ...]), ...]`` (a range query's result)."""
    # Imported when a plot is drawn: matplotlib.pyplot takes ~0.5 s to import, about as long as
    # the rest of the CLI's start-up, and most commands draw nothing.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.dates import DateFormatter

    ncols = max(len(r.panels) for r in rows_)
    fig, axes = plt.subplots(
        len(rows_), ncols, figsize=(4.2 * ncols, 3.2 * len(rows_)), squeeze=False
    )
    for i, row in enumerate(rows_):
        for j in range(ncols):
            ax = axes[i][j]
            if j >= len(row.panels):
                ax.axis("off")
                continue
            p = row.panels[j]
            scale = 100 if p.unit == "percentunit" else 1  # drawn in %, like Grafana shows it
            for t in p.targets:
                for labels, points in fetch(p, t):
                    legend = t.legend
                    for key, label_value in labels.items():
                        legend = legend.replace("{{" + key + "}}", label_value)
                    xs = [datetime.fromtimestamp(ts, UTC) for ts, _ in points]
                    ys = [v * scale for _, v in points]
                    ax.plot(xs, ys, label=legend)
            for label, raw in p.thresholds:
                value = raw * scale  # in the data's unit, as Grafana reads it
                ax.axhline(value, linestyle="--", linewidth=1, color="red", alpha=0.6)
                ax.annotate(label, (0.01, value), xycoords=("axes fraction", "data"), fontsize=7)
            unit = {"percentunit": "%", "percent": "%"}.get(p.unit, p.unit)
            ax.set_title(f"{p.title} ({unit})", fontsize=9)
            ax.tick_params(labelsize=7)
            ax.xaxis.set_major_formatter(DateFormatter("%H:%M"))
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7)
        axes[i][0].set_ylabel(row.title, fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
