"""Every config rule at its boundary: the boundary itself is accepted, the value just
past it is refused with a message that names the field. Pure parsing, no double.

Two families: the numeric bounds declared on the model's fields (``Field(ge=..., le=...)``),
found by walking the model so a new bounded field is covered without editing this file, and the
rules across fields and sections (infra/config/rules.py), listed in RULES with their boundary by
hand.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, get_args

import annotated_types
import pytest
from pydantic import BaseModel

from infra.config import AppConfig
from infra.config.network import az_id_prefix
from infra.facts.instances import GPU_INSTANCES
from tests.support.config import BASE, SOURCE, refusal

# Fields whose bound another rule also constrains: the partner is moved out of the way.
COMPANIONS: dict[str, dict[str, Any]] = {
    "hyperpod.gpu_group.instance_count": {
        "kvcache.endpoints.0.l2_backend": "none",
        "kvcache.endpoints.0.replicas": 1,
    },
    "kvcache.curvine.evictor.low_water_percent": {"kvcache.curvine.evictor.high_water_percent": 99},
    "kvcache.curvine.evictor.high_water_percent": {"kvcache.curvine.evictor.low_water_percent": 5},
    # Curvine keeps reserved_gib free out of capacity_gib: the smallest pool needs a small reserve.
    "kvcache.curvine.worker.capacity_gib": {"kvcache.curvine.worker.reserved_gib": 0},
    "kvcache.curvine.fuse.cpu_limit_millicores": {
        "kvcache.curvine.fuse.cpu_request_millicores": 100
    },
    "kvcache.curvine.fuse.memory_limit_mib": {"kvcache.curvine.fuse.memory_request_mib": 512},
    # Below 11 GiB only without L1, never below vLLM's 10 (test_kvcache_memory.py beside this).
    "kvcache.endpoints.0.memory_gib": {"kvcache.endpoints.0.enable_l1_cache": False},
}
# An autoscaling section needs a maximum the two dev GPU nodes hold (the default 5 does not).
AUTOSCALING = "kvcache.endpoints.0.autoscaling"
COMPANIONS |= {
    f"{AUTOSCALING}.{name}": {f"{AUTOSCALING}.max_replicas": 2}
    for name in (
        "polling_interval_seconds",
        "cooldown_seconds",
        "initial_cooldown_seconds",
        "scale_up_stabilization_seconds",
        "scale_down_stabilization_seconds",
    )
}
# vLLM serves /metrics on the port it listens on: the two ports move together.
SAME_VALUE = {
    "kvcache.endpoints.0.container_port": "kvcache.endpoints.0.metrics_port",
    "kvcache.endpoints.0.metrics_port": "kvcache.endpoints.0.container_port",
}


# A written bench size is held to the endpoints' --max-model-len: at a size's bound, an
# endpoint that serves the model's own length (no --max-model-len) holds it.
MODEL_OWN_LENGTH = {"kvcache.endpoints.0.args": ["--gpu-memory-utilization", "0.9"]}


def _with_partners(path: str, value: Any) -> dict[str, Any]:
    partners = dict(COMPANIONS.get(path, MODEL_OWN_LENGTH if path.startswith("bench.") else {}))
    if path in SAME_VALUE:
        partners[SAME_VALUE[path]] = value
    return {**partners, path: value}


# --- numeric bounds declared on fields ---------------------------------------------------------


def _model_of(annotation: Any) -> type[BaseModel] | None:
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _bounded_fields(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(dotted path, bound, value just past it) of every bounded numeric field."""
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        sub = _model_of(info.annotation)
        if sub is not None:
            list_field = "tuple" in str(info.annotation) or "list" in str(info.annotation)
            yield from _bounded_fields(sub, f"{path}.0." if list_field else f"{path}.")
            continue
        step = 1 if info.annotation is int else 0.001
        for m in info.metadata:
            if isinstance(m, annotated_types.Ge):
                yield path, m.ge, m.ge - step
            elif isinstance(m, annotated_types.Le):
                yield path, m.le, m.le + step
            elif isinstance(m, annotated_types.Gt):
                yield path, m.gt + step, m.gt
            elif isinstance(m, annotated_types.Lt):
                yield path, m.lt - step, m.lt


FIELD_BOUNDS = sorted(_bounded_fields(AppConfig), key=lambda b: (b[0], b[1]))


def test_the_walk_finds_the_bounded_fields() -> None:
    paths = {p for p, _, _ in FIELD_BOUNDS}
    assert "kvcache.curvine.evictor.high_water_percent" in paths
    assert "kvcache.endpoints.0.container_port" in paths
    assert len(FIELD_BOUNDS) > 30


@pytest.mark.parametrize(
    ("path", "bound", "past"), FIELD_BOUNDS, ids=[f"{p}={b}" for p, b, _ in FIELD_BOUNDS]
)
def test_a_field_refuses_the_value_past_its_bound(path: str, bound: Any, past: Any) -> None:
    message = refusal(_with_partners(path, past))
    assert message is not None, f"{path} = {past} was accepted"
    assert f"{path} = {past!r}" in message, message
    assert refusal(_with_partners(path, bound)) is None, f"{path} = {bound} was refused"


# --- rules written as validators -----------------------------------------------------------------

NVME_GIB = int(GPU_INSTANCES["ml.g6e.4xlarge"].nvme_gb * 1e9 / 2**30)
RESERVED = 10
STATIC_ON = "kvcache.curvine.static_pv.enabled"
STATIC_PATH = "kvcache.curvine.static_pv.curvine_path"
TIERED_STORAGE_OFF = {"tiered_storage.mode": "Disable", "kvcache.l2_backend": "none"}

# (rule, accepted at the boundary, refused just past it, field the refusal names)
RULES: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    (
        "evictor low < high",
        {
            "kvcache.curvine.evictor.low_water_percent": 84,
            "kvcache.curvine.evictor.high_water_percent": 85,
        },
        {
            "kvcache.curvine.evictor.low_water_percent": 85,
            "kvcache.curvine.evictor.high_water_percent": 85,
        },
        "kvcache.curvine.evictor.low_water_percent",
    ),
    (
        "static volume inside the pool the evictor keeps",
        {STATIC_ON: True, STATIC_PATH: "/l2cache"},
        {STATIC_ON: True, STATIC_PATH: "/l2cache2"},
        STATIC_PATH,
    ),
    (
        "reserve below capacity",
        {"kvcache.curvine.worker.capacity_gib": 50, "kvcache.curvine.worker.reserved_gib": 49},
        {"kvcache.curvine.worker.capacity_gib": 50, "kvcache.curvine.worker.reserved_gib": 50},
        "kvcache.curvine.worker.reserved_gib",
    ),
    # The reserve is kept free inside the capacity: a capacity of the whole disk fits, with it.
    (
        "NVMe holds the capacity, its reserve inside it",
        {
            "kvcache.curvine.worker.capacity_gib": NVME_GIB,
            "kvcache.curvine.worker.reserved_gib": RESERVED,
        },
        {
            "kvcache.curvine.worker.capacity_gib": NVME_GIB + 1,
            "kvcache.curvine.worker.reserved_gib": RESERVED,
        },
        "kvcache.curvine.worker.capacity_gib",
    ),
    (
        "NVMe holds the capacity + the operator's weights cache",
        {
            "kvcache.curvine.worker.capacity_gib": 400,
            "kvcache.curvine.worker.reserved_gib": RESERVED,
            "kvcache.curvine.worker.weights_cache_gib": NVME_GIB - 400,
        },
        {
            "kvcache.curvine.worker.capacity_gib": 400,
            "kvcache.curvine.worker.reserved_gib": RESERVED,
            "kvcache.curvine.worker.weights_cache_gib": NVME_GIB - 399,
        },
        "kvcache.curvine.worker.capacity_gib",
    ),
    (
        "FUSE memory limit >= request",
        {
            "kvcache.curvine.fuse.memory_request_mib": 9000,
            "kvcache.curvine.fuse.memory_limit_mib": 9000,
        },
        {
            "kvcache.curvine.fuse.memory_request_mib": 9000,
            "kvcache.curvine.fuse.memory_limit_mib": 8999,
        },
        "kvcache.curvine.fuse.memory_limit_mib",
    ),
    (
        "FUSE CPU limit >= request",
        {
            "kvcache.curvine.fuse.cpu_request_millicores": 2000,
            "kvcache.curvine.fuse.cpu_limit_millicores": 2000,
        },
        {
            "kvcache.curvine.fuse.cpu_request_millicores": 2000,
            "kvcache.curvine.fuse.cpu_limit_millicores": 1999,
        },
        "kvcache.curvine.fuse.cpu_limit_millicores",
    ),
    (
        "GPU and system groups have different names",
        {"hyperpod.system_group.name": "system-2"},
        {"hyperpod.system_group.name": BASE["hyperpod"]["gpu_group"]["name"]},
        "hyperpod.system_group.name",
    ),
    (
        "two GPU nodes when L2 is on",
        {"hyperpod.gpu_group.instance_count": 2},
        {"hyperpod.gpu_group.instance_count": 1},
        "hyperpod.gpu_group.instance_count",
    ),
    (
        "HyperPod CIDR next to the VPC",
        {"network.vpc_cidr": "10.192.0.0/20", "network.hyperpod_subnet.cidr": "10.192.16.0/20"},
        {"network.vpc_cidr": "10.192.0.0/20", "network.hyperpod_subnet.cidr": "10.192.0.0/19"},
        "network.hyperpod_subnet.cidr",
    ),
    (
        "HyperPod CIDR not inside the VPC",
        {"network.vpc_cidr": "10.192.0.0/20", "network.hyperpod_subnet.cidr": "10.192.16.0/24"},
        {"network.vpc_cidr": "10.192.0.0/20", "network.hyperpod_subnet.cidr": "10.192.15.0/24"},
        "network.hyperpod_subnet.cidr",
    ),
    (
        "HyperPod subnet prefix /16 at most",
        {"network.hyperpod_subnet.cidr": "10.0.0.0/16"},
        {"network.hyperpod_subnet.cidr": "10.0.0.0/15"},
        "network.hyperpod_subnet.cidr",
    ),
    (
        "HyperPod subnet prefix /24 at least",
        {"network.hyperpod_subnet.cidr": "10.1.0.0/24"},
        {"network.hyperpod_subnet.cidr": "10.1.0.0/25"},
        "network.hyperpod_subnet.cidr",
    ),
    (
        "EBS volume from 100 GiB",
        {"hyperpod.gpu_group.ebs_volume_size_gib": 100},
        {"hyperpod.gpu_group.ebs_volume_size_gib": 99},
        "hyperpod.gpu_group.ebs_volume_size_gib",
    ),
    (
        "EBS volume to 16384 GiB",
        {"hyperpod.gpu_group.ebs_volume_size_gib": 16384},
        {"hyperpod.gpu_group.ebs_volume_size_gib": 16385},
        "hyperpod.gpu_group.ebs_volume_size_gib",
    ),
    (
        "Tiered Storage from 20 percent",
        {"tiered_storage.instance_memory_allocation_percentage": 20},
        {"tiered_storage.instance_memory_allocation_percentage": 19},
        "tiered_storage.instance_memory_allocation_percentage",
    ),
    # Tiered Storage off: reserving 100 percent of the memory leaves no room for a replica.
    (
        "Tiered Storage to 100 percent",
        {"tiered_storage.instance_memory_allocation_percentage": 100, **TIERED_STORAGE_OFF},
        {"tiered_storage.instance_memory_allocation_percentage": 101, **TIERED_STORAGE_OFF},
        "tiered_storage.instance_memory_allocation_percentage",
    ),
    (
        "replicas x TP fit the GPUs",
        {"kvcache.endpoints.0.replicas": 2, "kvcache.endpoints.0.rollout": "scale_down_first"},
        {"kvcache.endpoints.0.replicas": 3, "kvcache.endpoints.0.rollout": "scale_down_first"},
        "kvcache.endpoints.0.replicas",
    ),
    # dev on ml.g6e.4xlarge: 15890m allocatable, 8250m taken by the rest; 127967 MiB, 42398 MiB.
    (
        "a replica's CPU fits one GPU node",
        {"kvcache.endpoints.0.cpu": 7},
        {"kvcache.endpoints.0.cpu": 8},
        "kvcache.endpoints.0.cpu",
    ),
    (
        "a replica's memory fits one GPU node",
        {"kvcache.endpoints.0.memory_gib": 83},
        {"kvcache.endpoints.0.memory_gib": 84},
        "kvcache.endpoints.0.memory_gib",
    ),
    # Operator 3.2 drops a tieredstorage endpoint's L1 size: LMCache's default 5 GiB beside
    # vLLM's 10 GiB (one GPU) must fit the Pod's memory.
    (
        "LMCache's default L1 fits where the operator drops the size",
        {"kvcache.endpoints.0.l2_backend": "tieredstorage", "kvcache.endpoints.0.memory_gib": 15},
        {"kvcache.endpoints.0.l2_backend": "tieredstorage", "kvcache.endpoints.0.memory_gib": 14},
        "kvcache.endpoints.0.memory_gib",
    ),
    (
        "autoscaling max >= min",
        {f"{AUTOSCALING}.min_replicas": 2, f"{AUTOSCALING}.max_replicas": 2},
        {f"{AUTOSCALING}.min_replicas": 2, f"{AUTOSCALING}.max_replicas": 1},
        f"{AUTOSCALING}.max_replicas",
    ),
    (
        "autoscaling max fits the GPU nodes",
        {f"{AUTOSCALING}.max_replicas": 2},
        {f"{AUTOSCALING}.max_replicas": 3},
        f"{AUTOSCALING}.max_replicas",
    ),
    (
        "autoscaling starts within its bounds",
        {f"{AUTOSCALING}.max_replicas": 2, "kvcache.endpoints.0.replicas": 2},
        {f"{AUTOSCALING}.max_replicas": 1, "kvcache.endpoints.0.replicas": 2},
        "kvcache.endpoints.0.replicas",
    ),
    (
        "kv_cache_usage target a fraction",
        {
            f"{AUTOSCALING}.max_replicas": 2,
            f"{AUTOSCALING}.signal": "kv_cache_usage",
            f"{AUTOSCALING}.target": 1,
        },
        {
            f"{AUTOSCALING}.max_replicas": 2,
            f"{AUTOSCALING}.signal": "kv_cache_usage",
            f"{AUTOSCALING}.target": 1.001,
        },
        f"{AUTOSCALING}.target",
    ),
    (
        "a ttft_p95 target is seconds, at most a minute",
        {
            f"{AUTOSCALING}.max_replicas": 2,
            f"{AUTOSCALING}.signal": "ttft_p95",
            f"{AUTOSCALING}.target": 60,
        },
        {
            f"{AUTOSCALING}.max_replicas": 2,
            f"{AUTOSCALING}.signal": "ttft_p95",
            f"{AUTOSCALING}.target": 60.001,
        },
        f"{AUTOSCALING}.target",
    ),
    (
        "an autoscaled endpoint's ScaledObject name fits KEDA's labels",
        {f"{AUTOSCALING}.max_replicas": 2, "kvcache.endpoints.0.name": "a" * 40},
        {f"{AUTOSCALING}.max_replicas": 2, "kvcache.endpoints.0.name": "a" * 41},
        "kvcache.endpoints.0.name",
    ),
    (
        "HyperPod cluster names hold 63 characters, hyphens too",
        {"hyperpod.cluster_name": "a" + "-b" * 31},
        {"hyperpod.cluster_name": "a" + "-b" * 31 + "c"},
        "hyperpod.cluster_name",
    ),
    (
        "numbers are 32-bit",
        {"kvcache.curvine.fuse.cpu_limit_millicores": 2**31 - 1},
        {"kvcache.curvine.fuse.cpu_limit_millicores": 2**31},
        "kvcache.curvine.fuse.cpu_limit_millicores",
    ),
    (
        "Curvine masters 1, 3 or 5",
        {"kvcache.curvine.master.replicas": 5},
        {"kvcache.curvine.master.replicas": 6},
        "kvcache.curvine.master.replicas",
    ),
]


@pytest.mark.parametrize(("rule", "ok", "bad", "field"), RULES, ids=[r[0] for r in RULES])
def test_a_rule_accepts_its_boundary_and_refuses_the_value_past_it(
    rule: str, ok: dict[str, Any], bad: dict[str, Any], field: str
) -> None:
    assert refusal(ok) is None, f"{rule}: the boundary {ok} was refused"
    message = refusal(bad)
    assert message is not None, f"{rule}: {bad} was accepted"
    assert f"{field} = " in message, message


@pytest.mark.parametrize(
    ("region", "prefix"),
    [
        ("us-west-2", "usw2"),
        ("ap-southeast-1", "apse1"),
        ("eu-central-1", "euc1"),
        ("us-gov-west-1", "usgw1"),
        ("us-iso-east-1", "usie1"),
        ("us-isob-east-1", "usibe1"),
        ("xx-moon-1", None),
        ("uswest2", None),
        ("us-isof-east-1", None),
    ],
)
def test_the_az_id_rule_knows_a_region_by_its_words(region: str, prefix: str | None) -> None:
    """The AZ id rule applies only where the prefix is known (us-west-2 -> usw2-az1,
    us-gov-west-1 -> usgw1-az1, ...)."""
    assert az_id_prefix(region) == prefix


@pytest.mark.parametrize("image", ["curvine/curvine:latest", "curvine/curvine"])
def test_an_unpinned_image_is_refused_with_the_fix(image: str) -> None:
    field = "kvcache.curvine.csi_provisioner_image"
    assert refusal({field: image}) == (
        f"{SOURCE}: {field} = {image!r}: allowed: an image with an explicit tag "
        "other than latest (repo/name:v1.2.3) or a digest; fix: pin a released tag"
    )
