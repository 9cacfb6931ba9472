"""The scaling alert and the replica queries of an autoscaled endpoint (``infra.metrics.scaling``),
evaluated by Prometheus's own ``promtool`` over series shaped as the managed collector scrapes
them (``job``, ``instance``, ``namespace``, ``pod``, ``node``, ``endpoint``): the alert fires
when the endpoint serves ``max_replicas`` with the signal above its target for 15 minutes, and
stays quiet at the target, below it, and below the maximum; "wanted" is the HPA's replica
formula within the bounds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config import AppConfig, parse_config
from infra.metrics.alerts import alert_rules_yaml, all_exprs
from infra.metrics.catalog import METRICS, metric_names
from infra.metrics.dashboards import rows
from infra.metrics.scaling import AT_MAX_ALERT, serving_replicas, wanted_replicas
from k8s.names import vllm_job
from tests.support.config import SOURCE, with_overrides
from tests.support.promtool import check_rules, expand, needs_promtool, run_rule_tests

pytestmark = needs_promtool

WAIT = 15  # minutes the condition must hold, as docs/observability.md promises
END = WAIT + 10
PODS = ("x2x7k", "q8z2m")


def _config(signal: str = "requests_waiting") -> AppConfig:
    auto = {"min_replicas": 1, "max_replicas": 2, "signal": signal}
    raw = with_overrides({"kvcache.endpoints.0.autoscaling": auto})
    return parse_config(raw, SOURCE)


def _rule(config: AppConfig) -> dict[str, Any]:
    groups = yaml.safe_load(alert_rules_yaml(config))["groups"]
    (rule,) = [r for g in groups for r in g["rules"] if r["alert"] == AT_MAX_ALERT]
    return dict(rule)


def _labels(config: AppConfig, i: int) -> dict[str, str]:
    e = config.kvcache.endpoints[0]
    return {
        "job": vllm_job(e.namespace, e.name),
        "instance": f"10.1.7.{20 + i}:8000",
        "namespace": e.namespace,
        "pod": f"{e.name}-5d8f7c9b4-{PODS[i]}",
        "node": f"gpu-{i + 1}",
        "endpoint": e.name,
    }


def _series(
    config: AppConfig, metric: str, per_pod: tuple[float, ...], up: tuple[int, ...] = (1, 1)
) -> list[dict[str, str]]:
    """Each Pod's gauge and its ``up``, steady for ``END`` minutes; a Pod whose scrape fails
    (``up`` 0) reports no gauge."""
    out = []
    for i, (value, answering) in enumerate(zip(per_pod, up, strict=True)):
        labels = ", ".join(f'{k}="{v}"' for k, v in _labels(config, i).items())
        out.append({"series": f"up{{{labels}}}", "values": f"{answering}x{END}"})
        if answering:
            out.append({"series": f"{metric}{{{labels}}}", "values": f"{value:g}x{END}"})
    return out


def _fires(rule: dict[str, Any], value: float) -> list[dict[str, Any]]:
    labels = dict(rule["labels"])
    return [
        {
            "exp_labels": labels,
            "exp_annotations": {
                k: expand(v, labels, value) for k, v in rule["annotations"].items()
            },
        }
    ]


def _case(series: list[dict[str, str]], checks: list[tuple[int, list[Any]]]) -> dict[str, Any]:
    return {
        "interval": "1m",
        "input_series": series,
        "alert_rule_test": [
            {"eval_time": f"{t}m", "alertname": AT_MAX_ALERT, "exp_alerts": a} for t, a in checks
        ],
    }


@pytest.mark.parametrize(
    ("signal", "metric", "above", "at", "below"),
    [
        # Target 5 requests waiting per replica (the signal's default).
        ("requests_waiting", "vllm:num_requests_waiting", (7.0, 5.0), (5.0, 5.0), (4.0, 3.0)),
        # Target 0.8 of the KV cache per replica: 0.85 on average is above, 0.8 is at it.
        ("kv_cache_usage", "vllm:kv_cache_usage_perc", (0.9, 0.8), (0.8, 0.8), (0.5, 0.7)),
    ],
)
def test_the_at_max_alert_fires_above_target_at_max_replicas_only(
    tmp_path: Path,
    signal: str,
    metric: str,
    above: tuple[float, float],
    at: tuple[float, float],
    below: tuple[float, float],
) -> None:
    config = _config(signal)
    rules = alert_rules_yaml(config)
    check_rules(rules, tmp_path)
    rule = _rule(config)
    fired = _fires(rule, sum(above) / 2)  # the signal's value per replica
    cases = [
        # Pending until the condition has held 15 minutes, then firing.
        _case(_series(config, metric, above), [(WAIT - 1, []), (WAIT, fired), (END, fired)]),
        _case(_series(config, metric, at), [(END, [])]),
        _case(_series(config, metric, below), [(END, [])]),
        # One of the two Pods not serving: below the maximum, the scaler can still add one.
        _case(_series(config, metric, (2 * above[0], 0.0), up=(1, 0)), [(END, [])]),
    ]
    run_rule_tests(rules, cases, tmp_path)


BUCKETS = ("0.5", "1", "2.5", "5", "+Inf")


def _ttft_series(
    config: AppConfig, slowest: str, up: tuple[int, ...] = (1, 1)
) -> list[dict[str, str]]:
    """Each Pod answering one request a second, every first token within ``slowest`` seconds
    and none faster than the bucket below it (vLLM's histogram, cumulative ``le`` buckets)."""
    out = []
    for i, answering in enumerate(up):
        labels = ", ".join(f'{k}="{v}"' for k, v in _labels(config, i).items())
        out.append({"series": f"up{{{labels}}}", "values": f"{answering}x{END}"})
        if not answering:
            continue
        for le in BUCKETS:
            filled = le == "+Inf" or float(le) >= float(slowest)
            out.append(
                {
                    "series": f'vllm:time_to_first_token_seconds_bucket{{{labels}, le="{le}"}}',
                    "values": f"0+60x{END}" if filled else f"0x{END}",
                }
            )
    return out


def test_the_at_max_alert_watches_the_ttft_signal_too(tmp_path: Path) -> None:
    """TTFT p95 target 2 s: first tokens within 5 s but over 2.5 s (p95 4.875 s) at the
    maximum fire, once the rate has a minute of samples and the condition has held 15 more;
    within 0.5 s do not; nor the slow ones with a Pod not serving."""
    config = _config("ttft_p95")
    rules = alert_rules_yaml(config)
    check_rules(rules, tmp_path)
    rule = _rule(config)
    slow = 2.5 + (5 - 2.5) * 0.95  # histogram_quantile's linear interpolation in (2.5, 5]
    fired = _fires(rule, slow)
    cases = [
        _case(_ttft_series(config, "5"), [(WAIT, []), (WAIT + 1, fired), (END, fired)]),
        _case(_ttft_series(config, "0.5"), [(END, [])]),
        _case(_ttft_series(config, "5", up=(1, 0)), [(END, [])]),
    ]
    run_rule_tests(rules, cases, tmp_path)


@pytest.mark.parametrize("signal", ["requests_waiting", "kv_cache_usage", "ttft_p95"])
def test_every_signal_has_its_panel_beside_the_replicas(signal: str) -> None:
    config = _config(signal)
    (row,) = [r for r in rows(config) if r.endpoint == config.kvcache.endpoints[0].name]
    titles = [p.title for p in row.panels]
    assert titles[:2] == ["Replicas: wanted vs serving", f"Scaling signal: {signal}"]


def test_wanted_replicas_is_the_hpa_formula_within_the_bounds(tmp_path: Path) -> None:
    """12 requests waiting at target 5 ask for ceil(2.4) = 3, held to max 2; 6 ask for
    ceil(1.2) = 2 (a part of a replica is a whole one); 3 ask for 1; none ask for 0, held to
    min 1. Serving counts the Pods that answer."""
    config = _config()
    e = config.kvcache.endpoints[0]
    checks = [((7.0, 5.0), 2), ((4.0, 2.0), 2), ((2.0, 1.0), 1), ((0.0, 0.0), 1)]
    cases = []
    for waiting, want in checks:
        series = _series(config, "vllm:num_requests_waiting", waiting)
        cases.append(
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": wanted_replicas(config, e),
                        "eval_time": "5m",
                        "exp_samples": [{"labels": "{}", "value": want}],
                    },
                    {
                        "expr": serving_replicas(e),
                        "eval_time": "5m",
                        "exp_samples": [{"labels": "{}", "value": 2}],
                    },
                ],
            }
        )
    run_rule_tests(alert_rules_yaml(config), cases, tmp_path)


def test_the_dashboard_shows_wanted_against_serving_only_for_autoscaled_endpoints() -> None:
    config = _config()
    scaled, fixed = config.kvcache.endpoints[0], _config().kvcache.endpoints
    panels = {r.endpoint: [p.title for p in r.panels] for r in rows(config) if r.endpoint}
    assert panels[scaled.name][0] == "Replicas: wanted vs serving"
    others = [e.name for e in fixed if e.autoscaling is None]
    assert all("Replicas: wanted vs serving" not in panels[n] for n in others)
    (replicas,) = [p for r in rows(config) for p in r.panels if p.title.startswith("Replicas")]
    assert dict(replicas.thresholds) == {"max": 2.0, "min": 1.0}


@pytest.mark.parametrize("signal", ["requests_waiting", "kv_cache_usage", "ttft_p95"])
def test_every_signal_loads_in_prometheus_and_reads_only_catalogued_metrics(
    tmp_path: Path, signal: str
) -> None:
    config = _config(signal)
    check_rules(alert_rules_yaml(config), tmp_path)
    e = config.kvcache.endpoints[0]
    for expr in (*all_exprs(config), wanted_replicas(config, e)):
        names = metric_names(expr)
        assert names <= set(METRICS), (names - set(METRICS), expr)
