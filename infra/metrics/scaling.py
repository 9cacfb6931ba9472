"""Scaling seen from the metrics store: the query KEDA runs for each signal, and per autoscaled
endpoint the replicas serving, the replicas its signal asks for, and an alert when it sits at
``max_replicas`` with the signal still above target.

KEDA 2.17 fails a query that returns more than one series and reads an empty answer as 0
(``ignoreNullValues`` defaults to true; the CRD does not expose it), so every query aggregates
to one series and a TTFT with no requests answers 0, not NaN. The series carry the labels the
collector's scrape job gives every vLLM target (``k8s.observability``): ``namespace`` and
``endpoint`` select this endpoint's Pods only.

From the series the managed collector already scrapes (``k8s.observability``): the cluster runs
no kube-state-metrics, so the HPA's own series (``kube_horizontalpodautoscaler_*``) do not
exist, and KEDA's (``keda_scaler_metrics_value``) carry neither the target nor the bounds.

- serving: the endpoint's vLLM scrape targets that answer (``up``: the job keeps Running Pods
  of the endpoint; vLLM serves /metrics once it has loaded the model, about when the Pod turns
  Ready);
- wanted: what the HPA computes from the signal, ``ceil(total / target)`` for the per-replica
  averages KEDA is given (``requests_waiting``, ``kv_cache_usage``: the query sums over the
  Pods) and ``ceil(serving x value / target)`` for a value (``ttft_p95``), within
  ``min_replicas``..``max_replicas``; without the HPA's 10 % tolerance and stabilisation
  windows, so it leads the real count by up to a window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.config import AppConfig
from infra.config.autoscaling import AutoscalingConfig, Signal, effective_target
from infra.config.kvcache import EndpointConfig
from k8s.names import vllm_job

AT_MAX_ALERT = "KvCacheEndpointAtMaxReplicas"
AT_MAX_MINUTES = 15
"""Longer than a scale-up takes (KEDA polls every 30 s; a new Pod loads the model for
minutes), so a burst the scaler is still answering does not page anyone."""
# The TTFT window: four polls of the default 30 s, so a p95 has samples to rest on.
TTFT_WINDOW = "2m"
SUMMED: dict[Signal, str] = {
    "requests_waiting": "vllm:num_requests_waiting",
    "kv_cache_usage": "vllm:kv_cache_usage_perc",
}


@dataclass(frozen=True)
class SignalQuery:
    """The query KEDA runs for a signal and how the HPA reads its answer."""

    query: str
    metric_type: str
    """``Average`` (desired = ceil(query / target): the query is the fleet's total) or
    ``Value`` (desired = ceil(ready replicas x query / target)), as the CRD spells them."""


def selector(e: EndpointConfig) -> str:
    """This endpoint's vLLM series, by the labels its scrape job writes."""
    return f'namespace="{e.namespace}",endpoint="{e.name}"'


def _ttft_p95(e: EndpointConfig) -> str:
    return (
        f"histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket"
        f"{{{selector(e)}}}[{TTFT_WINDOW}])))"
    )


def signal_query(e: EndpointConfig, signal: Signal) -> SignalQuery:
    """One series always (KEDA fails on more); the summed gauges as the fleet's total."""
    metric = SUMMED.get(signal)
    if metric is not None:
        return SignalQuery(f"sum({metric}{{{selector(e)}}})", "Average")
    # NaN (no requests in the window) fails ">= 0" and becomes 0: nothing to scale for.
    return SignalQuery(f"({_ttft_p95(e)} >= 0) or vector(0)", "Value")


def serving_replicas(e: EndpointConfig) -> str:
    return f'sum(up{{job="{vllm_job(e.namespace, e.name)}"}})'


def _total(a: AutoscalingConfig, e: EndpointConfig) -> str | None:
    return signal_query(e, a.signal).query if a.signal in SUMMED else None


def signal_per_replica(config: AppConfig, e: EndpointConfig) -> str:
    """The signal as the target reads it: per replica (an average over the serving ones), or
    the endpoint's TTFT p95."""
    a = _autoscaling(e)
    total = _total(a, e)
    return _ttft_p95(e) if total is None else f"{total} / {serving_replicas(e)}"


def target(config: AppConfig, e: EndpointConfig) -> float:
    return effective_target(_autoscaling(e), config.observability.ttft_p95_bound_seconds)


def wanted_replicas(config: AppConfig, e: EndpointConfig) -> str:
    a = _autoscaling(e)
    total = _total(a, e) or f"{serving_replicas(e)} * {_ttft_p95(e)}"
    return f"clamp(ceil({total} / {target(config, e):g}), {a.min_replicas}, {a.max_replicas})"


def _autoscaling(e: EndpointConfig) -> AutoscalingConfig:
    if e.autoscaling is None:
        raise ValueError(f"endpoint {e.name} does not autoscale")
    return e.autoscaling


def autoscaled(config: AppConfig) -> list[EndpointConfig]:
    return [e for e in config.kvcache.endpoints if e.autoscaling is not None]


def at_max_rules(config: AppConfig) -> list[dict[str, Any]]:
    """Per autoscaled endpoint: serving ``max_replicas`` (or more, mid-rollout) while the
    signal stays above target for ``AT_MAX_MINUTES``: the scaler wants more than it may have."""
    rules = []
    for e in autoscaled(config):
        a = _autoscaling(e)
        t = target(config, e)
        rules.append(
            {
                "alert": AT_MAX_ALERT,
                # The signal's value is what the annotation shows; the serving count only gates it.
                "expr": f"({signal_per_replica(config, e)} > {t:g}) and on () "
                f"({serving_replicas(e)} >= {a.max_replicas})",
                "for": f"{AT_MAX_MINUTES}m",
                "labels": {"severity": "warning", "namespace": e.namespace, "endpoint": e.name},
                "annotations": {
                    "summary": f"{e.namespace}/{e.name} serves at max_replicas "
                    f"({a.max_replicas}) with {a.signal} at {{{{ $value }}}} (target "
                    f"{t:g}): raise max_replicas or add GPU nodes"
                },
            }
        )
    return rules
