"""An autoscaled endpoint's ``spec.autoScalingSpec``: the operator makes a KEDA ScaledObject of it
(``<name>-scaled-object``, targeting the endpoint's Deployment) whose one Prometheus trigger
queries the observability AMP workspace (docs/autoscaling.md).

How KEDA 2.17 and the HPA read a trigger decides the query's shape:

- ``Average`` (HPA ``AverageValue``): desired = ceil(query / target). The query is the fleet's
  total, so that total divided by the replicas is the per-replica value held at the target.
- ``Value``: desired = ceil(ready replicas x query / target). The query is already one value
  for the whole endpoint (its TTFT p95).
- More than one series is an error to KEDA (``returned multiple elements``), so every query
  aggregates to one; an empty answer is 0 to it (``ignoreNullValues`` defaults to true and the
  CRD does not expose it), and so is a TTFT with no requests (NaN, which KEDA would pass on).

The series carry the labels the collector's scrape job gives every vLLM target
(k8s/observability.py): ``namespace`` and ``endpoint``, which select this endpoint's Pods only.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.amp_workspace import AmpWorkspace
from infra.config import AppConfig
from infra.config.autoscaling import AutoscalingConfig, Signal, effective_target
from infra.config.kvcache import EndpointConfig
from k8s.imports.hyperpod_inference.com.amazon.aws.sagemaker import inference as ie

MetricType = ie.InferenceEndpointConfigSpecAutoScalingSpecPrometheusTriggerMetricType
# The TTFT window: four polls of the default 30 s, so a p95 has samples to rest on.
TTFT_WINDOW = "2m"


@dataclass(frozen=True)
class SignalQuery:
    query: str
    metric_type: str
    """``Average`` or ``Value``, as the CRD spells them."""


def selector(e: EndpointConfig) -> str:
    """This endpoint's vLLM series, by the labels its scrape job writes."""
    return f'namespace="{e.namespace}",endpoint="{e.name}"'


def signal_query(e: EndpointConfig, signal: Signal) -> SignalQuery:
    sel = selector(e)
    if signal == "requests_waiting":
        return SignalQuery(f"sum(vllm:num_requests_waiting{{{sel}}})", "Average")
    if signal == "kv_cache_usage":
        return SignalQuery(f"sum(vllm:kv_cache_usage_perc{{{sel}}})", "Average")
    p95 = (
        f"histogram_quantile(0.95, sum by (le) "
        f"(rate(vllm:time_to_first_token_seconds_bucket{{{sel}}}[{TTFT_WINDOW}])))"
    )
    # NaN (no requests in the window) fails ">= 0" and becomes 0: nothing to scale for.
    return SignalQuery(f"({p95} >= 0) or vector(0)", "Value")


def trigger_name(signal: Signal) -> str:
    return signal.replace("_", "-")


def autoscaling_spec(
    config: AppConfig, e: EndpointConfig, a: AutoscalingConfig, workspace: AmpWorkspace
) -> ie.InferenceEndpointConfigSpecAutoScalingSpec:
    q = signal_query(e, a.signal)
    return ie.InferenceEndpointConfigSpecAutoScalingSpec(
        min_replica_count=a.min_replicas,
        max_replica_count=a.max_replicas,
        polling_interval=a.polling_interval_seconds,
        cooldown_period=a.cooldown_seconds,
        initial_cooldown_period=a.initial_cooldown_seconds,
        scale_up_stabilization_time=a.scale_up_stabilization_seconds,
        scale_down_stabilization_time=a.scale_down_stabilization_seconds,
        prometheus_trigger=ie.InferenceEndpointConfigSpecAutoScalingSpecPrometheusTrigger(
            name=trigger_name(a.signal),
            server_address=workspace.query_address,
            query=q.query,
            target_value=effective_target(a, config.observability.ttft_p95_bound_seconds),
            metric_type=MetricType.AVERAGE if q.metric_type == "Average" else MetricType.VALUE,
            # One AMP query per polling interval: the HPA's 15 s reads get KEDA's cached value.
            use_cached_metrics=True,
        ),
    )
