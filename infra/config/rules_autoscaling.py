"""Rules of ``kvcache.endpoints[].autoscaling`` that need other sections: the bounds and the
starting count, the GPU nodes its maximum needs, the metrics store its signal is read from, and
the operator and KEDA that act on it. The CRD checks none of these (no CEL rules, no min <= max),
so an endpoint that broke one would deploy and then scale wrongly or not at all."""

from __future__ import annotations

from infra.config.autoscaling import (
    SCALED_OBJECT_NAME_MAX,
    TTFT_TARGET_MAX_SECONDS,
    AutoscalingConfig,
    effective_target,
    scaled_object_name,
)
from infra.config.errors import RuleViolation
from infra.config.kvcache import EndpointConfig
from infra.config.model import AppConfig, creates_collector
from infra.config.node_budget import replicas_per_node

# Operators whose CRD takes an AMP query URL as serverAddress. Operator 3.0's pattern wants one
# more path segment after the workspace id (.../workspaces/ws-<id>/<segment>), which KEDA would
# put before /api/v1/query: no AMP query URL passes it.
SERVER_ADDRESS_OPERATORS = ("3.2",)


def check_autoscaling(app: AppConfig) -> None:
    for i, e in enumerate(app.kvcache.endpoints):
        if e.autoscaling is not None:
            _check_endpoint(app, i, e, e.autoscaling)


def _check_endpoint(app: AppConfig, i: int, e: EndpointConfig, a: AutoscalingConfig) -> None:
    at = f"kvcache.endpoints.{i}.autoscaling"
    if a.max_replicas < a.min_replicas:
        raise RuleViolation(
            f"at least min_replicas ({a.min_replicas})",
            "raise max_replicas or lower min_replicas",
            field=f"{at}.max_replicas",
            value=a.max_replicas,
        )
    if a.signal == "kv_cache_usage" and a.target is not None and a.target > 1:
        raise RuleViolation(
            "at most 1 for kv_cache_usage (vllm:kv_cache_usage_perc is a fraction of 0-1)",
            "write the fraction, e.g. 0.8 for 80%",
            field=f"{at}.target",
            value=a.target,
        )
    _check_ttft_target(app, i, a)
    _check_scaled_object_name(i, e)
    if not a.min_replicas <= e.replicas <= a.max_replicas:
        raise RuleViolation(
            f"{a.min_replicas}-{a.max_replicas} (with autoscaling, replicas is the count the "
            "endpoint starts with; the scaler keeps it within min_replicas..max_replicas)",
            f"set replicas to {min(max(e.replicas, a.min_replicas), a.max_replicas)}",
            field=f"kvcache.endpoints.{i}.replicas",
            value=e.replicas,
        )
    _check_nodes(app, i, e, a)
    _check_signal_source(app, i, a)
    _check_scaler(app, i, a)


def _check_ttft_target(app: AppConfig, i: int, a: AutoscalingConfig) -> None:
    """A TTFT target is seconds; one written in milliseconds would never be reached."""
    if a.signal != "ttft_p95":
        return
    bound = app.observability.ttft_p95_bound_seconds
    target = effective_target(a, bound)
    if target <= TTFT_TARGET_MAX_SECONDS:
        return
    field = (
        f"kvcache.endpoints.{i}.autoscaling.target"
        if a.target is not None
        else "observability.ttft_p95_bound_seconds"
    )
    as_ms = f" ({target:g} ms is {target / 1000:g})" if target >= 100 else ""
    raise RuleViolation(
        f"at most {TTFT_TARGET_MAX_SECONDS:g} seconds for signal ttft_p95 (the unit is seconds: "
        "a first token later than a minute is a request SageMaker's InvokeEndpoint and the load "
        "balancer have already ended, so the scaler would never see the target reached)",
        f"write {field} in seconds{as_ms}"
        + (", or set autoscaling.target for the scaler" if a.target is None else ""),
        field=field,
        value=target,
    )


def _check_scaled_object_name(i: int, e: EndpointConfig) -> None:
    """KEDA puts the ScaledObject's name into labels, which hold 63 characters."""
    name = scaled_object_name(e.name)
    if len(name) <= SCALED_OBJECT_NAME_MAX:
        return
    most = SCALED_OBJECT_NAME_MAX - (len(name) - len(e.name))
    raise RuleViolation(
        f"at most {most} characters on an autoscaled endpoint: its ScaledObject {name} has "
        f"{len(name)}; KEDA's admission webhook refuses a ScaledObject name over "
        f"{SCALED_OBJECT_NAME_MAX} (its HPA keda-hpa-<name> goes into a label of at most 63), "
        "and a KEDA without that check never creates the HPA of a name over 63",
        f"shorten kvcache.endpoints.{i}.name to {most} characters",
        field=f"kvcache.endpoints.{i}.name",
        value=e.name,
    )


def _check_nodes(app: AppConfig, i: int, e: EndpointConfig, a: AutoscalingConfig) -> None:
    """Replicas beyond what the GPU nodes hold would stay Pending; the HPA would keep them."""
    gpu = app.hyperpod.gpu_group
    per_node = replicas_per_node(app, e)
    if per_node == 0:
        return  # not even one replica fits a node: the node budget rule says why
    fits = per_node * gpu.instance_count
    if a.max_replicas > fits:
        raise RuleViolation(
            f"at most {fits}: {gpu.instance_count} {gpu.instance_type} nodes hold {per_node} "
            f"replica{'s' if per_node > 1 else ''} of {e.name} each (its GPUs, CPU and memory "
            "beside what runs on every node, infra/config/node_budget.py); more would stay Pending",
            "lower max_replicas, or raise hyperpod.gpu_group.instance_count",
            field=f"kvcache.endpoints.{i}.autoscaling.max_replicas",
            value=a.max_replicas,
        )


def _check_signal_source(app: AppConfig, i: int, a: AutoscalingConfig) -> None:
    """Every signal is a vLLM series in the observability AMP workspace. A query that finds
    nothing reads as zero load to KEDA, so the endpoint would sit at min_replicas."""
    field = f"kvcache.endpoints.{i}.autoscaling.signal"
    if not app.observability.enabled:
        raise RuleViolation(
            "a signal only with observability.enabled: true (it is a vLLM series in the "
            "observability AMP workspace; a CloudWatch form is not offered: vLLM's metrics "
            "reach only that workspace, nothing publishes them to CloudWatch)",
            "set observability.enabled: true, or remove the endpoint's autoscaling",
            field=field,
            value=a.signal,
        )
    if not creates_collector(app):
        raise RuleViolation(
            "a signal only while the managed collector writes the endpoint's metrics to the "
            "workspace (an existing cluster without observability.scraper_subnet_ids has "
            "none: the query would find nothing, which KEDA reads as zero load)",
            "set observability.scraper_subnet_ids, scraper_security_group_ids and "
            "scraper_source_cidrs, or remove the endpoint's autoscaling",
            field=field,
            value=a.signal,
        )


def _check_scaler(app: AppConfig, i: int, a: AutoscalingConfig) -> None:
    """The pinned operator must take the workspace's address, and KEDA must be there."""
    addon = app.addons.inference_operator
    op = addon.operator
    at = f"kvcache.endpoints.{i}.autoscaling"
    if app.existing_cluster is None and not (app.addons.enabled and addon.enabled):
        key = "addons.enabled" if not app.addons.enabled else "addons.inference_operator.enabled"
        raise RuleViolation(
            f"true while {at} is set on a cluster this app creates: the inference add-on "
            "brings the operator that turns autoScalingSpec into a ScaledObject and the KEDA "
            "that acts on it, and nothing else installs them there",
            f"set {key}: true, or remove {at}",
            field=key,
            value=False,
        )
    if op.version not in SERVER_ADDRESS_OPERATORS:
        raise RuleViolation(
            f"an add-on whose operator takes an AMP query URL as serverAddress (operator "
            f"{', '.join(SERVER_ADDRESS_OPERATORS)}) while {at} is set: operator {op.version}'s "
            "CRD wants a path segment after the workspace id that no AMP query URL has",
            f"pin v1.3.0-eksbuild.1 (operator 3.2), or remove {at}",
            field="addons.inference_operator.version",
            value=addon.version,
        )
    if app.addons.enabled and addon.managed and not addon.keda_enabled:
        raise RuleViolation(
            f"true while {at} is set (the operator hands autoScalingSpec to the KEDA the "
            "add-on installs)",
            f"remove keda_enabled: false, or remove {at}",
            field="addons.inference_operator.keda_enabled",
            value=False,
        )
