"""An endpoint's autoscaling (``kvcache.endpoints[].autoscaling``): the operator's
``spec.autoScalingSpec``, which it turns into a KEDA ScaledObject with one Prometheus trigger
on the environment's AMP workspace (k8s/autoscaling.py renders it; docs/autoscaling.md).

Absent, the endpoint keeps its fixed ``replicas``. The rules that need other sections (the GPU
group, observability, the add-on) are in infra/config/rules_autoscaling.py.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from infra.config.base import Section
from infra.config.errors import RuleViolation

Signal = Literal["requests_waiting", "kv_cache_usage", "ttft_p95"]
SIGNALS: tuple[Signal, ...] = ("requests_waiting", "kv_cache_usage", "ttft_p95")
# Per-replica targets when ``target`` is null (the field's docstring says where they come from).
# ttft_p95 has none of its own: it takes observability.ttft_p95_bound_seconds.
DEFAULT_TARGETS: dict[Signal, float] = {"requests_waiting": 5.0, "kv_cache_usage": 0.8}
# Kubernetes refuses an HPA stabilization window above one hour (HPAScalingRules).
HPA_MAX_WINDOW_SECONDS = 3600
# ttft_p95 is in seconds (vLLM's vllm:time_to_first_token_seconds). A request whose first token
# takes longer than a minute has been given up on: SageMaker's InvokeEndpoint and the load
# balancer's default idle timeout both end it at 60 s, so a larger p95 target is never reached.
TTFT_TARGET_MAX_SECONDS = 60.0
# The operator names the ScaledObject of an endpoint ``<name>-scaled-object``: read off the
# objects it creates, not from a documented contract (docs/autoscaling.md says so).
SCALED_OBJECT_SUFFIX = "-scaled-object"
# KEDA names the HPA ``keda-hpa-<ScaledObject>`` and labels it with that name, and labels the
# ScaledObject with its own name; labels hold 63 characters. KEDA's admission webhook refuses a
# ScaledObject name above 54 (https://github.com/kedacore/keda/pull/7762); a KEDA without that check
# accepts it and never creates the HPA once the name passes 63
# (https://github.com/kedacore/keda/issues/6370, https://github.com/kedacore/keda/issues/6998).
SCALED_OBJECT_NAME_MAX = 63 - len("keda-hpa-")


def scaled_object_name(endpoint: str) -> str:
    """The KEDA ScaledObject the operator creates for an autoscaled endpoint (a reading of what
    it does, not its documentation)."""
    return f"{endpoint}{SCALED_OBJECT_SUFFIX}"


class AutoscalingConfig(Section):
    min_replicas: int = 1
    """Fewest replicas (``minReplicaCount``); 1 or more. Zero is not offered: a replica takes
    minutes to load the model, and the router has no Pod to send the first request to."""
    max_replicas: int = 5
    """Most replicas (``maxReplicaCount``; the CRD's default 5). With every autoscaled endpoint
    at its maximum and every other at its ``replicas``, the GPU group must hold them all."""
    signal: Signal = "requests_waiting"
    """What drives the count, read from the observability AMP workspace (so
    ``observability.enabled`` must be true): ``requests_waiting`` (vLLM's
    ``vllm:num_requests_waiting``, requests queued per replica), ``kv_cache_usage``
    (``vllm:kv_cache_usage_perc``, the GPU KV-cache fraction in use per replica) or
    ``ttft_p95`` (the endpoint's time-to-first-token p95 over 2 minutes, in seconds; a lagging
    signal, best as a guard)."""
    target: float | None = None
    """The per-replica value the scaler holds the signal at; null takes the signal's default:
    ``requests_waiting`` 5 (the vLLM production-stack chart's threshold and the llm-d variant
    autoscaler's queue saturation point), ``kv_cache_usage`` 0.8 (the llm-d variant
    autoscaler's KV saturation point; peers use 0.5-0.8), ``ttft_p95``
    ``observability.ttft_p95_bound_seconds`` (the bound the TTFT alert holds). More than 0;
    ``kv_cache_usage`` at most 1 (a fraction); ``ttft_p95`` in seconds, at most 60 (write
    0.5 for 500 ms: a request waiting longer for its first token has timed out at SageMaker
    and the load balancer, so the target would never be reached)."""
    polling_interval_seconds: int = Field(default=30, ge=1)
    """How often KEDA queries the signal (``pollingInterval``; the CRD's default 30, the
    collector's shortest scrape interval: polling faster only re-reads the same samples)."""
    cooldown_seconds: int = Field(default=300, ge=0)
    """``cooldownPeriod`` (the CRD's default 300): KEDA's wait before scaling to zero, which
    ``min_replicas`` never allows; kept for a faithful spec."""
    initial_cooldown_seconds: int = Field(default=300, ge=0)
    """``initialCooldownPeriod`` (the CRD's default 300): the delay before the cooldown applies
    to a new ScaledObject."""
    scale_up_stabilization_seconds: int = Field(default=0, ge=0, le=HPA_MAX_WINDOW_SECONDS)
    """``scaleUpStabilizationTime`` (the CRD's and HPA's default 0: scale up at once); at most
    3600, the HPA's limit."""
    scale_down_stabilization_seconds: int = Field(default=300, ge=0, le=HPA_MAX_WINDOW_SECONDS)
    """``scaleDownStabilizationTime`` (the CRD's and HPA's default 300): the highest count of
    this window is kept before scaling down, so a replica that took minutes to start is not
    dropped on a short lull; at most 3600, the HPA's limit."""

    @field_validator("min_replicas")
    @classmethod
    def _min(cls, v: int) -> int:
        if v < 1:
            raise RuleViolation(
                "1 or more: scale to zero is not offered (a replica loads the model for minutes "
                "and the router has no Pod for the first request)",
                "set min_replicas to 1 or more",
            )
        return v

    @field_validator("target")
    @classmethod
    def _target(cls, v: float | None) -> float | None:
        if v is not None and not v > 0:
            raise RuleViolation(
                "more than 0 (the per-replica value the scaler holds the signal at)",
                "raise target, or remove it for the signal's default",
            )
        return v


def effective_target(a: AutoscalingConfig, ttft_bound_seconds: float) -> float:
    """The target the scaler gets: the configured one, else the signal's default."""
    if a.target is not None:
        return a.target
    return DEFAULT_TARGETS.get(a.signal, ttft_bound_seconds)


def peak_replicas(replicas: int, a: AutoscalingConfig | None) -> int:
    """The most replicas an endpoint runs: its ``max_replicas`` when it autoscales."""
    return a.max_replicas if a is not None else replicas
