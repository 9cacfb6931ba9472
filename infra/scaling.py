"""Scaling seen from the metrics store: per autoscaled endpoint, the replicas serving, the
replicas its signal asks for, and an alert when it sits at ``max_replicas`` with the signal
still above target.

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

from typing import Any

from infra.config import AppConfig
from infra.config.autoscaling import AutoscalingConfig, effective_target
from infra.config.kvcache import EndpointConfig
from k8s.names import vllm_job

AT_MAX_ALERT = "KvCacheEndpointAtMaxReplicas"
AT_MAX_MINUTES = 15
"""Longer than a scale-up takes (KEDA polls every 30 s; a new Pod loads the model for
minutes), so a burst the scaler is still answering does not page anyone."""
TTFT_WINDOW = "2m"
SUMMED = {
    "requests_waiting": "vllm:num_requests_waiting",
    "kv_cache_usage": "vllm:kv_cache_usage_perc",
}


def _sel(e: EndpointConfig) -> str:
    return f'endpoint="{e.name}", namespace="{e.namespace}"'


def serving_replicas(e: EndpointConfig) -> str:
    return f'sum(up{{job="{vllm_job(e.namespace, e.name)}"}})'


def _total(a: AutoscalingConfig, e: EndpointConfig) -> str | None:
    metric = SUMMED.get(a.signal)
    return None if metric is None else f"sum({metric}{{{_sel(e)}}})"


def _ttft_p95(e: EndpointConfig) -> str:
    return (f"histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket"
            f"{{{_sel(e)}}}[{TTFT_WINDOW}])))")  # fmt: skip


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
        rules.append({
            "alert": AT_MAX_ALERT,
            # The signal's value is what the annotation shows; the serving count only gates it.
            "expr": f"({signal_per_replica(config, e)} > {t:g}) and on () "
                    f"({serving_replicas(e)} >= {a.max_replicas})",
            "for": f"{AT_MAX_MINUTES}m",
            "labels": {"severity": "warning", "namespace": e.namespace, "endpoint": e.name},
            "annotations": {"summary": f"{e.namespace}/{e.name} serves at max_replicas "
                            f"({a.max_replicas}) with {a.signal} at {{{{ $value }}}} (target "
                            f"{t:g}): raise max_replicas or add GPU nodes"},
        })  # fmt: skip
    return rules
