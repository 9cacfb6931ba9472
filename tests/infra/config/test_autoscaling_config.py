"""``kvcache.endpoints[].autoscaling``: what loads, and the one line each refusal gets (the CRD
checks none of these, so each would otherwise deploy and scale wrongly or not at all)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig, parse_config
from infra.config.autoscaling import effective_target, scaled_object_name
from tests.support.config import (
    BASE,
    ENV,
    EXISTING_GROUPS,
    SOURCE,
    existing_cluster,
    refusal,
    with_overrides,
)

AT = "kvcache.endpoints.0.autoscaling"
# dev.yaml: two single-GPU ml.g6e.4xlarge nodes, observability on, operator 3.2 with KEDA.
FITS = {"max_replicas": 2}


def _endpoints(*overrides: dict[str, Any]) -> dict[str, Any]:
    base = BASE["kvcache"]["endpoints"][0]
    return {"kvcache.endpoints": [{**base, **o} for o in overrides]}


def parse_with(overrides: dict[str, Any]) -> AppConfig:
    return parse_config(with_overrides(overrides), SOURCE, ENV)


def _field_of(line: str | None) -> str:
    assert line is not None, "accepted"
    assert "\n" not in line
    return line.removeprefix(f"{SOURCE}: ").split(" = ", 1)[0]


def test_absent_keeps_the_fixed_replicas() -> None:
    endpoint = parse_with({}).kvcache.endpoints[0]
    assert endpoint.autoscaling is None


def test_defaults_are_the_crd_timings_and_the_evidence_targets() -> None:
    cfg = parse_with({AT: FITS})
    a = cfg.kvcache.endpoints[0].autoscaling
    assert a is not None
    assert (a.min_replicas, a.max_replicas, a.signal) == (1, 2, "requests_waiting")
    assert (a.polling_interval_seconds, a.cooldown_seconds, a.initial_cooldown_seconds) == (
        30,
        300,
        300,
    )
    assert (a.scale_up_stabilization_seconds, a.scale_down_stabilization_seconds) == (0, 300)
    bound = cfg.observability.ttft_p95_bound_seconds
    assert effective_target(a, bound) == 5
    kv = parse_with({AT: {**FITS, "signal": "kv_cache_usage"}}).kvcache.endpoints[0].autoscaling
    assert kv is not None and effective_target(kv, bound) == 0.8
    ttft = parse_with({AT: {**FITS, "signal": "ttft_p95"}}).kvcache.endpoints[0].autoscaling
    assert ttft is not None and effective_target(ttft, bound) == bound
    own = parse_with({AT: {**FITS, "target": 3}}).kvcache.endpoints[0].autoscaling
    assert own is not None and effective_target(own, bound) == 3


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({AT: {"min_replicas": 2, "max_replicas": 1}}, f"{AT}.max_replicas"),
        ({AT: {"min_replicas": 0, "max_replicas": 2}}, f"{AT}.min_replicas"),
        ({AT: {"min_replicas": -1, "max_replicas": 2}}, f"{AT}.min_replicas"),
        ({AT: {**FITS, "target": 0}}, f"{AT}.target"),
        ({AT: {**FITS, "target": -2}}, f"{AT}.target"),
        ({AT: {**FITS, "signal": "kv_cache_usage", "target": 80}}, f"{AT}.target"),
        ({AT: {**FITS, "signal": "gpu_utilization"}}, f"{AT}.signal"),
        ({AT: {**FITS, "polling_interval_seconds": 0}}, f"{AT}.polling_interval_seconds"),
        ({AT: {**FITS, "cooldown_seconds": -1}}, f"{AT}.cooldown_seconds"),
        ({AT: {**FITS, "initial_cooldown_seconds": -1}}, f"{AT}.initial_cooldown_seconds"),
        # Kubernetes refuses an HPA stabilization window over an hour; the CRD does not.
        (
            {AT: {**FITS, "scale_down_stabilization_seconds": 3601}},
            f"{AT}.scale_down_stabilization_seconds",
        ),
        (
            {AT: {**FITS, "scale_up_stabilization_seconds": -1}},
            f"{AT}.scale_up_stabilization_seconds",
        ),
        ({AT: {**FITS, "fallback": 2}}, f"{AT}.fallback"),
    ],
)
def test_values_the_crd_or_kubernetes_would_refuse_are_refused_in_one_line(
    overrides: dict[str, Any], field: str
) -> None:
    assert _field_of(refusal(overrides)) == field


def test_replicas_is_the_starting_count_within_the_bounds() -> None:
    line = refusal({AT: {"min_replicas": 1, "max_replicas": 2}, "kvcache.endpoints.0.replicas": 1})
    assert line is None
    line = refusal({AT: {"min_replicas": 2, "max_replicas": 2}, "kvcache.endpoints.0.replicas": 1})
    assert _field_of(line) == "kvcache.endpoints.0.replicas"
    assert line is not None and "fix: set replicas to 2" in line


def test_a_maximum_beyond_the_gpu_nodes_is_refused_with_what_they_hold() -> None:
    line = refusal({AT: {"max_replicas": 3}})
    assert _field_of(line) == f"{AT}.max_replicas"
    assert line is not None and "at most 2:" in line
    assert refusal({AT: {"max_replicas": 3}, "hyperpod.gpu_group.instance_count": 3}) is None


def test_a_node_holds_as_many_replicas_as_its_cpu_allows_not_only_its_gpus() -> None:
    """ml.g6e.12xlarge: 4 GPUs, 48 vCPUs, 7.75 cores of other work. Replicas of 15 cores (and
    the operator's sidecars): two per node by CPU, not four by GPU."""
    big = {"hyperpod.gpu_group.instance_type": "ml.g6e.12xlarge"}
    fat = {"kvcache.endpoints.0.cpu": 15, "kvcache.endpoints.0.replicas": 1}
    assert refusal({**big, **fat, AT: {"max_replicas": 4}}) is None
    line = refusal({**big, **fat, AT: {"max_replicas": 5}})
    assert _field_of(line) == f"{AT}.max_replicas"
    assert line is not None and "at most 4:" in line and "hold 2 replicas" in line


def test_a_node_holds_only_as_many_replicas_as_its_memory_allows() -> None:
    """ml.g6e.12xlarge: 4 GPUs and 48 vCPUs, 381 GiB allocatable of which Tiered Storage (20 %
    of 384 GiB), Curvine and the node's daemons take 92 GiB. Replicas of 4 cores and 96 GiB
    (and the operator's sidecars): eight by CPU, four by GPU, two by memory."""
    big = {"hyperpod.gpu_group.instance_type": "ml.g6e.12xlarge"}
    wide = {
        "kvcache.endpoints.0.cpu": 4,
        "kvcache.endpoints.0.memory_gib": 96,
        "kvcache.endpoints.0.replicas": 1,
    }
    assert refusal({**big, **wide, AT: {"max_replicas": 4}}) is None
    line = refusal({**big, **wide, AT: {"max_replicas": 5}})
    assert _field_of(line) == f"{AT}.max_replicas"
    assert line is not None and "at most 4:" in line and "hold 2 replicas" in line


def test_the_operators_sidecars_come_with_every_replica() -> None:
    """The reverse proxy and the collector run in every replica's Pod (0.5 cores each pair):
    replicas of 13 cores take 13.5 each, two per node in 40 cores; counted once per node it
    would be three."""
    big = {"hyperpod.gpu_group.instance_type": "ml.g6e.12xlarge"}
    fat = {"kvcache.endpoints.0.cpu": 13, "kvcache.endpoints.0.replicas": 1}
    assert refusal({**big, **fat, AT: {"max_replicas": 4}}) is None
    line = refusal({**big, **fat, AT: {"max_replicas": 5}})
    assert line is not None and "at most 4:" in line and "hold 2 replicas" in line


def test_a_node_holds_as_many_replicas_as_its_gpus_divided_by_their_tensor_parallel_size() -> None:
    """Two GPUs a replica on four: two per node, small as the replicas are otherwise."""
    big = {"hyperpod.gpu_group.instance_type": "ml.g6e.12xlarge"}
    at = "kvcache.endpoints.0"
    pair = {
        f"{at}.cpu": 4,
        f"{at}.memory_gib": 40,
        f"{at}.tensor_parallel_size": 2,
        f"{at}.replicas": 1,
    }
    assert refusal({**big, **pair, AT: {"max_replicas": 4}}) is None
    line = refusal({**big, **pair, AT: {"max_replicas": 5}})
    assert line is not None and "at most 4:" in line and "hold 2 replicas" in line


def test_endpoints_count_at_their_maximum_when_sharing_the_gpu_group() -> None:
    """Each fits alone; at their peaks together they need three GPUs of two."""
    both = _endpoints(
        {"replicas": 1},
        {"name": "other", "replicas": 1, "autoscaling": {"max_replicas": 2}},
    )
    line = refusal(both)
    assert _field_of(line) == "kvcache.endpoints.1.autoscaling.max_replicas"
    assert line is not None and "3 GPUs > 2 GPUs" in line
    both["kvcache.endpoints"][1]["autoscaling"]["max_replicas"] = 1
    assert refusal(both) is None


def test_a_signal_needs_observability_and_says_why_there_is_no_cloudwatch_form() -> None:
    line = refusal({AT: FITS, "observability.enabled": False})
    assert _field_of(line) == f"{AT}.signal"
    assert line is not None and "observability.enabled: true" in line and "CloudWatch" in line


def test_a_signal_needs_the_collector_that_writes_it() -> None:
    """An existing cluster without the collector's subnets gets a workspace nobody writes to:
    the query would find nothing, which KEDA reads as zero load."""
    existing = {"existing_cluster": existing_cluster(), "hyperpod": EXISTING_GROUPS}
    assert refusal(existing) is None
    assert _field_of(refusal({**existing, AT: FITS})) == f"{AT}.signal"


def test_operator_3_0_cannot_take_an_amp_query_url() -> None:
    line = refusal({AT: FITS, "addons.inference_operator.version": "v1.0.0-eksbuild.1"})
    assert _field_of(line) == "addons.inference_operator.version"


def test_autoscaling_needs_the_add_ons_keda() -> None:
    line = refusal({AT: FITS, "addons.inference_operator.keda_enabled": False})
    assert _field_of(line) == "addons.inference_operator.keda_enabled"
    assert refusal({"addons.inference_operator.keda_enabled": False}) is None


def test_without_the_add_ons_a_cluster_the_app_creates_has_no_operator_or_keda() -> None:
    for key in ("addons.enabled", "addons.inference_operator.enabled"):
        line = refusal({AT: FITS, key: False})
        assert _field_of(line) == key
        assert line is not None and f"fix: set {key}: true, or remove {AT}" in line
    # Without autoscaling the same config is not refused for it.
    assert refusal({"addons.enabled": False}) is None


def test_without_the_add_ons_an_existing_cluster_brings_its_own_operator() -> None:
    """The cluster's operator and KEDA serve it (preflight checks them); the add-ons of the app
    are off, so nothing here refuses the autoscaled endpoint."""
    raw = with_overrides(
        {
            AT: FITS,
            "addons.enabled": False,
            "existing_cluster": existing_cluster(),
            "observability.scraper_subnet_ids": [
                "subnet-0aaa1111bbb22222a",
                "subnet-0ccc3333ddd44444b",
            ],
            "observability.scraper_security_group_ids": ["sg-0abc1234def567890"],
            "observability.scraper_source_cidrs": ["10.0.0.0/24"],
        }
    )
    raw["hyperpod"] = {**raw["hyperpod"], **EXISTING_GROUPS}
    assert parse_config(raw, SOURCE, ENV).kvcache.endpoints[0].autoscaling is not None


@pytest.mark.parametrize(
    ("target", "said"),
    [(500, "(500 ms is 0.5)"), (2000.0, "(2000 ms is 2)"), (61, "")],
)
def test_a_ttft_target_past_a_minute_is_refused_as_seconds(target: float, said: str) -> None:
    line = refusal({AT: {**FITS, "signal": "ttft_p95", "target": target}})
    assert _field_of(line) == f"{AT}.target"
    assert line is not None and "at most 60 seconds for signal ttft_p95" in line
    assert line.endswith(f"fix: write {AT}.target in seconds{' ' + said if said else ''}")


def test_a_ttft_target_taken_from_the_alert_bound_names_the_bound() -> None:
    line = refusal({AT: {**FITS, "signal": "ttft_p95"}, "observability.ttft_p95_bound_seconds": 90})
    assert _field_of(line) == "observability.ttft_p95_bound_seconds"
    # The same bound on an endpoint scaled on another signal is the alert's only.
    assert refusal({AT: FITS, "observability.ttft_p95_bound_seconds": 90}) is None


@pytest.mark.parametrize("target", [float("inf"), float("-inf"), float("nan"), "inf", "nan"])
def test_a_target_that_is_not_a_finite_number_is_refused_before_it_reaches_jsii(
    target: Any,
) -> None:
    line = refusal({AT: {**FITS, "target": target}})
    assert _field_of(line) == f"{AT}.target"
    assert line is not None and "finite number" in line


def test_the_scaled_objects_name_holds_the_endpoints_name_and_keda_limits_it() -> None:
    """KEDA refuses a ScaledObject name over 54 characters; the operator's is
    <name>-scaled-object (14 more), so an autoscaled endpoint's name holds 40."""
    field = "kvcache.endpoints.0.name"
    assert scaled_object_name("qwen3-8b") == "qwen3-8b-scaled-object"
    assert refusal({AT: FITS, field: "a" * 40}) is None
    line = refusal({AT: FITS, field: "a" * 41})
    assert _field_of(line) == field
    assert line is not None and f"ScaledObject {'a' * 41}-scaled-object has 55" in line
    # Without autoscaling there is no ScaledObject: only SageMaker's 63 holds.
    assert refusal({field: "a" * 41}) is None
