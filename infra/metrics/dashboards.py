"""Dashboards as code, generated from an environment's config.

One definition of every PromQL query (``Panel``/``Target``) feeds the Grafana dashboard, the
PNG rendering of ``hpkv report``/``hpkv dashboard`` and the tests; the alerts on the same
queries are ``infra.metrics.alerts``. Every metric name used here is in
``infra.metrics.catalog.METRICS`` (a test parses each query).

Tier hit rates are each tier's share of the prompt tokens looked up (vLLM's prefix-cache queries),
as ``infra.metrics.tiers`` defines them: L0 from vLLM's prefix-cache hits, L2 from LMCache's remote
reads (per backend: fs:// reads times the chunk size, Tiered Storage's bytes over the KV bytes per
token), L1 the tokens LMCache loaded minus L2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from infra.config.model import curvine_writable_bytes
from infra.metrics.scaling import (
    serving_replicas,
    signal_per_replica,
    target,
    wanted_replicas,
)
from infra.metrics.tiers import (
    L0_HITS,
    L2_LABELS,
    LOADED,
    PROMISED,
    QUERIED,
    l2_tokens_expr,
)

RATE = "5m"
WORKER = 'job="curvine-worker"'
# Curvine's own FUSE dashboard, kept byte for byte (assets/grafana/SOURCES.md).
CURVINE_FUSE_DASHBOARD = (
    Path(__file__).resolve().parents[2] / "assets" / "grafana" / "curvine-fuse-dashboard.json"
)


@dataclass(frozen=True)
class Target:
    expr: str
    legend: str


@dataclass(frozen=True)
class Panel:
    title: str
    unit: str
    """Grafana unit id: percentunit, s, reqps, short, bytes, Bps, percent, ms."""
    targets: tuple[Target, ...]
    description: str
    thresholds: tuple[tuple[str, float], ...] = ()
    """(label, value) horizontal lines, e.g. the evictor's water marks."""


@dataclass(frozen=True)
class Row:
    title: str
    panels: tuple[Panel, ...]
    endpoint: str | None = None


@dataclass
class Queries:
    """The named queries of one endpoint (shared by panels, alerts and the report)."""

    config: AppConfig
    endpoint: EndpointConfig
    window: str = RATE
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def sel(self) -> str:
        return f'endpoint="{self.endpoint.name}", namespace="{self.endpoint.namespace}"'

    def rate(self, metric: str) -> str:
        return f"sum(rate({metric}{{{self.sel}}}[{self.window}]))"

    def l2_hit_tokens(self) -> str | None:
        """L2 tokens per second, or None on an endpoint without L2."""
        bpt = self.config.observability.kv_bytes_per_token
        return l2_tokens_expr(self.rate, self.endpoint.l2_backend, bpt)

    def l0_hit_rate(self) -> str:
        return f"{self.rate(L0_HITS)} / {self.rate(QUERIED)}"

    def l1_hit_rate(self) -> str:
        l2 = self.l2_hit_tokens()
        loaded = self.rate(LOADED)
        hits = loaded if l2 is None else f"clamp_min({loaded} - {l2}, 0)"
        return f"{hits} / {self.rate(QUERIED)}"

    def l2_hit_rate(self) -> str | None:
        l2 = self.l2_hit_tokens()
        return None if l2 is None else f"{l2} / {self.rate(QUERIED)}"

    def failed_load_rate(self) -> str:
        """Share of the tokens LMCache's lookup promised that its retrieve did not load."""
        return f"({self.rate(PROMISED)} - {self.rate(LOADED)}) / {self.rate(PROMISED)}"

    def ttft(self, q: float) -> str:
        return (
            f"histogram_quantile({q}, sum by (le) (rate(vllm:time_to_first_token_seconds_"
            f"bucket{{{self.sel}}}[{self.window}])))"
        )

    def request_rate(self) -> str:
        return self.rate("vllm:request_success_total")

    def tokens_saved(self) -> str:
        return f"{self.rate(L0_HITS)} + {self.rate(LOADED)}"


def l2_used_percent(config: AppConfig) -> str:
    """Against what writes can fill, the base of the evictor's water marks."""
    return f"100 * sum(fs_used{{{WORKER}}}) / {curvine_writable_bytes(config)}"


def endpoint_row(config: AppConfig, e: EndpointConfig) -> Row:
    q = Queries(config, e)
    tier = "Share of the prompt tokens looked up that each tier served"
    hits: tuple[Target, ...] = (
        Target(q.l0_hit_rate(), "L0 GPU"),
        Target(q.l1_hit_rate(), "L1 CPU"),
    )
    if (l2 := q.l2_hit_rate()) is not None:
        hits += (Target(l2, L2_LABELS[q.endpoint.l2_backend]),)
    failed = config.observability.l2_failed_load_ratio
    return Row(
        title=f"{e.namespace}/{e.name} ({e.routing_strategy})",
        endpoint=e.name,
        panels=(
            *_scaling_panels(config, e),
            Panel("Hit rate by tier", "percentunit", hits, tier),
            Panel(
                "TTFT",
                "s",
                (Target(q.ttft(0.5), "p50"), Target(q.ttft(0.95), "p95")),
                "Time to first token",
                (("bound", config.observability.ttft_p95_bound_seconds),),
            ),
            Panel(
                "Request rate",
                "reqps",
                (Target(q.request_rate(), "requests/s"),),
                "Finished requests per second",
            ),
            Panel(
                "Prefill tokens saved",
                "short",
                (Target(q.tokens_saved(), "tokens/s"),),
                "Prompt tokens served from a cache instead of recomputed",
            ),
            Panel(
                "Failed KV loads",
                "percentunit",
                (Target(q.failed_load_rate(), "of promised tokens"),),
                "Tokens LMCache's lookup found that its retrieve then failed to load",
                (("alert", failed),),
            ),
            Panel(
                "L1 CPU cache in use",
                "bytes",
                (Target(f"sum by (pod) (lmcache:local_cache_usage{{{q.sel}}})", "{{pod}}"),),
                "LMCache's local CPU backend per Pod (bounded by the Tiered Storage share)",
            ),
        ),
    )


def _scaling_panels(config: AppConfig, e: EndpointConfig) -> tuple[Panel, ...]:
    """An autoscaled endpoint's replicas and signal (``infra.metrics.scaling``), first in its
    row."""
    if e.autoscaling is None:
        return ()
    a = e.autoscaling
    replicas = Panel(
        "Replicas: wanted vs serving",
        "short",
        (
            Target(wanted_replicas(config, e), "wanted (signal / target)"),
            Target(serving_replicas(e), "serving"),
        ),
        "Replicas the signal asks for (the HPA's formula, within min..max) against the Pods "
        "answering on /metrics; wanted above serving for long: a Pod cannot start",
        (("max", float(a.max_replicas)), ("min", float(a.min_replicas))),
    )
    signal = Panel(
        f"Scaling signal: {a.signal}",
        "short",
        (Target(signal_per_replica(config, e), "per replica"),),
        "What KEDA scales on, against its target",
        (("target", target(config, e)),),
    )
    return (replicas, signal)


def curvine_row(config: AppConfig) -> Row:
    ev = config.kvcache.curvine.evictor
    return Row(
        title="L2: Curvine on the GPU nodes' NVMe",
        panels=(
            Panel(
                "L2 capacity used",
                "percent",
                (Target(l2_used_percent(config), "used"),),
                "Share of the L2 pool used, against the evictor's water marks",
                (("high water", ev.high_water_percent), ("low water", ev.low_water_percent)),
            ),
            Panel(
                "NVMe use per node",
                "percent",
                (
                    Target(
                        f"100 * sum by (node) (fs_used{{{WORKER}}}) / "
                        f"sum by (node) (capacity{{{WORKER}}})",
                        "{{node}}",
                    ),
                ),
                "Each Curvine worker's share of its NVMe capacity",
            ),
            Panel(
                "Curvine read throughput",
                "Bps",
                (Target(f"sum by (node) (rate(read_bytes{{{WORKER}}}[{RATE}]))", "{{node}}"),),
                "Bytes read from the workers",
            ),
            Panel(
                "Curvine read latency",
                "ms",
                (
                    Target(
                        f"sum(rate(read_time_us{{{WORKER}}}[{RATE}])) / "
                        f"sum(rate(read_count{{{WORKER}}}[{RATE}])) / 1000",
                        "worker mean",
                    ),
                    Target(
                        "histogram_quantile(0.95, sum by (le) (rate(curvine_fuse_request_"
                        f'duration_us_bucket{{job="curvine-fuse"}}[{RATE}]))) / 1000',
                        "FUSE p95",
                    ),
                ),
                "Worker read time per read; FUSE request p95 in the CSI node plugin",
            ),
            Panel(
                "Curvine workers",
                "short",
                (
                    Target('max(worker_num{job="curvine-master", tag="live"})', "live (master)"),
                    Target(f"sum(up{{{WORKER}}})", "scraped up"),
                ),
                "Workers the master counts live, and worker scrapes that succeed",
                (("GPU nodes", config.hyperpod.gpu_group.instance_count),),
            ),
        ),
    )


def rows(config: AppConfig) -> list[Row]:
    out = [endpoint_row(config, e) for e in config.kvcache.endpoints]
    if "curvine" in config.kvcache.l2_backends:
        out.append(curvine_row(config))
    return out


def grafana_dashboard(config: AppConfig) -> dict[str, Any]:
    """Grafana dashboard JSON (schema 39), importable by hand: it asks for a Prometheus data
    source on import (``DS_PROMETHEUS``), e.g. the AMP workspace with SigV4."""
    ds = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
    panels: list[dict[str, Any]] = []
    y, pid = 0, 1
    for row in rows(config):
        panels.append(
            {
                "type": "row",
                "title": row.title,
                "id": pid,
                "collapsed": False,
                "gridPos": {"h": 1, "w": 24, "x": 0, "y": y},
                "panels": [],
            }
        )
        pid, y = pid + 1, y + 1
        width = 24 // len(row.panels)
        for i, p in enumerate(row.panels):
            steps = [{"color": "green", "value": None}] + [
                {
                    "color": "red" if "high" in label or label == "bound" else "orange",
                    "value": value,
                }
                for label, value in p.thresholds
            ]
            panels.append(
                {
                    "type": "timeseries",
                    "id": pid,
                    "title": p.title,
                    "description": p.description,
                    "datasource": ds,
                    "gridPos": {"h": 8, "w": width, "x": i * width, "y": y},
                    "fieldConfig": {
                        "defaults": {
                            "unit": p.unit,
                            "thresholds": {"mode": "absolute", "steps": steps},
                            "custom": {
                                "thresholdsStyle": {"mode": "line" if p.thresholds else "off"}
                            },
                        },
                        "overrides": [],
                    },
                    "targets": [
                        {
                            "refId": chr(65 + j),
                            "expr": t.expr,
                            "legendFormat": t.legend,
                            "datasource": ds,
                        }
                        for j, t in enumerate(p.targets)
                    ],
                }
            )
            pid += 1
        y += 8
    return {
        "__inputs": [
            {
                "name": "DS_PROMETHEUS",
                "label": "Prometheus (AMP workspace)",
                "type": "datasource",
                "pluginId": "prometheus",
                "pluginName": "Prometheus",
            }
        ],
        "title": f"{config.stack_prefix} KV cache tiers",
        "uid": f"{config.stack_prefix}-kvcache"[:40],
        "tags": ["hyperpod", "kvcache", config.environment],
        "timezone": "utc",
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "panels": panels,
    }


def upstream_dashboards(config: AppConfig) -> dict[str, str]:
    """Upstream dashboards to import next to ours, by file name: Curvine's FUSE dashboard when
    some endpoint's L2 is on Curvine. Unchanged: its ``job`` variable keeps the jobs matching
    ``/.*curvine.*fuse.*/``, which takes in the collector's ``curvine-fuse`` job."""
    if "curvine" not in config.kvcache.l2_backends:
        return {}
    return {CURVINE_FUSE_DASHBOARD.name: CURVINE_FUSE_DASHBOARD.read_text()}
