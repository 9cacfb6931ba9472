"""Each autoscaling signal's PromQL (``infra.metrics.scaling.signal_query``, what the rendered
InferenceEndpointConfig hands KEDA), evaluated by Prometheus's own ``promtool test rules`` over
series below, at and above the target.

The series carry the labels the managed collector gives every vLLM target
(``k8s.observability.scrape_config``: ``job``, ``instance``, ``namespace``, ``pod``, ``node``,
``endpoint``). Beside the endpoint's two Pods sit decoys with large values: a sibling endpoint in
the same namespace whose name extends this one's, and an endpoint of the same name in another
namespace. The expected value is computed from this endpoint's Pods alone, so a query that
selected a decoy would return another number.

What KEDA does with the number is the HPA's arithmetic (kubernetes
``pkg/controller/podautoscaler/replica_calculator.go``; KEDA 2.17 passes the trigger's value
through): ``Average`` -> desired = ceil(value / target), ``Value`` -> desired =
ceil(ready x value / target), either kept when the ratio is within the HPA's 10 % tolerance.
``_desired`` writes that down so each case states the count it leads to.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from infra.config import AppConfig, parse_config
from infra.config.autoscaling import SIGNALS, Signal, effective_target
from infra.config.kvcache import EndpointConfig
from infra.metrics.scaling import signal_query
from k8s.names import vllm_job
from tests.support.config import SOURCE, with_overrides
from tests.support.promtool import needs_promtool, run_rule_tests

pytestmark = needs_promtool

NO_RULES = "groups: []\n"
PODS = ("x2x7k", "q8z2m")  # the endpoint's two replicas
TOLERANCE = 0.1  # the HPA's default


def _config(signal: Signal) -> AppConfig:
    auto = {"max_replicas": 2, "signal": signal}
    return parse_config(with_overrides({"kvcache.endpoints.0.autoscaling": auto}), SOURCE)


def _labels(namespace: str, endpoint: str, i: int) -> dict[str, str]:
    return {
        "job": vllm_job(namespace, endpoint),
        "instance": f"10.1.7.{20 + i}:8000",
        "namespace": namespace,
        "pod": f"{endpoint}-5d8f7c9b4-{PODS[i % 2]}",
        "node": f"gpu-{i % 2 + 1}",
        "endpoint": endpoint,
    }


def _owners(e: EndpointConfig) -> list[dict[str, str]]:
    """This endpoint's Pods, then the decoys' (another endpoint's, another namespace's)."""
    own = [_labels(e.namespace, e.name, i) for i in range(2)]
    decoys = [_labels(e.namespace, f"{e.name}-large", 2), _labels("staging", e.name, 3)]
    return own + decoys


def _series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    inner = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{inner}}}", "values": values}


def _desired(metric_type: str, value: float, target: float, current: int) -> int:
    ratio = value / (target * current) if metric_type == "Average" else value / target
    if abs(1 - ratio) <= TOLERANCE:
        return current
    return math.ceil(value / target) if metric_type == "Average" else math.ceil(ratio * current)


def _expect(query: str, value: float | None) -> dict[str, Any]:
    samples = [] if value is None else [{"labels": "{}", "value": float(value)}]
    return {"expr": query, "eval_time": "5m", "exp_samples": samples}


def _gauge_case(
    tmp: Path, signal: Signal, metric: str, own: tuple[float, float], decoy: float
) -> float:
    """Runs the signal's query over ``own`` (the two Pods' values) and the decoys; returns the
    value promtool confirmed."""
    config = _config(signal)
    e = config.kvcache.endpoints[0]
    q = signal_query(e, signal)
    values = [*own, decoy, decoy]
    series = [_series(metric, lab, f"{v}x10") for lab, v in zip(_owners(e), values, strict=True)]
    total = own[0] + own[1]
    run_rule_tests(
        NO_RULES,
        [{"interval": "1m", "input_series": series, "promql_expr_test": [_expect(q.query, total)]}],
        tmp,
    )
    assert q.metric_type == "Average"
    return total


GAUGES: dict[Signal, str] = {
    "requests_waiting": "vllm:num_requests_waiting",
    "kv_cache_usage": "vllm:kv_cache_usage_perc",
}


@pytest.mark.parametrize("signal", list(GAUGES))
@pytest.mark.parametrize(
    ("shares", "moves"),
    [((0.2, 0.4), "down"), ((1.0, 1.0), "stays"), ((1.8, 1.6), "up")],
    ids=["below", "at", "above"],
)
def test_a_gauge_signal_is_the_fleet_total_of_this_endpoints_pods(
    tmp_path: Path, signal: Signal, shares: tuple[float, float], moves: str
) -> None:
    """``shares``: each Pod's value as a multiple of the target. The query returns their sum;
    divided by the two replicas it is the per-replica value the HPA holds at the target."""
    config = _config(signal)
    target = effective_target(config.kvcache.endpoints[0].autoscaling or _never(), 2.0)
    own = (shares[0] * target, shares[1] * target)
    total = _gauge_case(tmp_path, signal, GAUGES[signal], own, decoy=40 * target)
    desired = _desired("Average", total, target, current=2)
    assert {"down": desired < 2, "stays": desired == 2, "up": desired > 2}[moves], desired


def test_no_series_of_this_endpoint_is_an_empty_answer_not_another_endpoints_load(
    tmp_path: Path,
) -> None:
    """Only the decoys report: the query finds nothing, which KEDA (ignoreNullValues, on by
    default and not in the CRD) reads as 0, so the endpoint settles at min_replicas."""
    config = _config("requests_waiting")
    e = config.kvcache.endpoints[0]
    q = signal_query(e, "requests_waiting")
    decoys = _owners(e)[2:]
    series = [_series(GAUGES["requests_waiting"], lab, "50x10") for lab in decoys]
    run_rule_tests(
        NO_RULES,
        [{"interval": "1m", "input_series": series, "promql_expr_test": [_expect(q.query, None)]}],
        tmp_path,
    )


# TTFT buckets (seconds) and, per Pod and minute, how many requests fall at or below each: a
# multiple of 60, so each rate is exact. ``at`` puts 95 % at or below 2 s: p95 = 2.
BUCKETS = ("0.5", "1", "2", "4", "8", "+Inf")
TTFT_CASES: dict[str, tuple[tuple[int, ...], float]] = {
    "below": ((0, 5700, 6000, 6000, 6000, 6000), 1.0),  # 95 % by 1 s: p95 = 1
    "at": ((0, 3000, 5700, 6000, 6000, 6000), 2.0),
    "above": ((0, 0, 3000, 5700, 6000, 6000), 4.0),  # 95 % by 4 s: p95 = 4
}


def _histogram(labels: dict[str, str], per_minute: tuple[int, ...]) -> list[dict[str, str]]:
    metric = "vllm:time_to_first_token_seconds_bucket"
    return [
        _series(metric, {**labels, "le": le}, f"0+{n}x10")
        for le, n in zip(BUCKETS, per_minute, strict=True)
    ]


@pytest.mark.parametrize("case", list(TTFT_CASES))
def test_ttft_p95_is_the_endpoints_p95_over_its_pods(tmp_path: Path, case: str) -> None:
    """Both Pods share one distribution; the decoys are all slow (every request above 4 s), so
    a query that took them in would report a higher p95."""
    config = _config("ttft_p95")
    e = config.kvcache.endpoints[0]
    a = e.autoscaling or _never()
    target = effective_target(a, config.observability.ttft_p95_bound_seconds)
    assert target == 2.0  # dev's TTFT alert bound
    per_minute, p95 = TTFT_CASES[case]
    slow = (0, 0, 0, 0, 6000, 6000)
    owners = _owners(e)
    series = [s for lab in owners[:2] for s in _histogram(lab, per_minute)]
    series += [s for lab in owners[2:] for s in _histogram(lab, slow)]
    q = signal_query(e, "ttft_p95")
    run_rule_tests(
        NO_RULES,
        [{"interval": "1m", "input_series": series, "promql_expr_test": [_expect(q.query, p95)]}],
        tmp_path,
    )
    assert q.metric_type == "Value"
    desired = _desired("Value", p95, target, current=2)
    assert {"below": desired < 2, "at": desired == 2, "above": desired > 2}[case], desired


def test_ttft_without_requests_is_zero_not_nan(tmp_path: Path) -> None:
    """No request in the window: histogram_quantile gives NaN, which KEDA would pass to the
    HPA as a number; the query answers 0 instead (nothing to scale for)."""
    config = _config("ttft_p95")
    e = config.kvcache.endpoints[0]
    idle = [s for lab in _owners(e)[:2] for s in _histogram(lab, (0, 0, 0, 0, 0, 0))]
    q = signal_query(e, "ttft_p95")
    run_rule_tests(
        NO_RULES,
        [{"interval": "1m", "input_series": idle, "promql_expr_test": [_expect(q.query, 0)]}],
        tmp_path,
    )


def test_every_signal_is_covered() -> None:
    assert set(SIGNALS) == {*GAUGES, "ttft_p95"}


def _never() -> Any:
    raise AssertionError("the endpoint has no autoscaling")
