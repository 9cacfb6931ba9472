"""An autoscaled endpoint's ``spec.autoScalingSpec``: the operator makes a KEDA ScaledObject of it
(``<name>-scaled-object``, targeting the endpoint's Deployment) whose one Prometheus trigger
queries the observability AMP workspace (docs/autoscaling.md) with the signal's query from
``infra.metrics.scaling``, the one the dashboard and the at-max alert read too."""

from __future__ import annotations

from infra.config import AppConfig
from infra.config.autoscaling import AutoscalingConfig, Signal, effective_target
from infra.config.kvcache import EndpointConfig
from infra.environment.amp_workspace import AmpWorkspace
from infra.metrics.scaling import signal_query
from k8s.imports.hyperpod_inference.com.amazon.aws.sagemaker import inference as ie

MetricType = ie.InferenceEndpointConfigSpecAutoScalingSpecPrometheusTriggerMetricType


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
