"""One GPU node's budget: what lands on a node that runs a replica (infra/config/node_budget.py)
must fit its allocatable CPU and memory (infra/facts/instances.py). A replica too large for it
deploys, then stays Pending: the scheduler finds no node."""

from __future__ import annotations

from infra.config.errors import RuleViolation
from infra.config.kvcache import EndpointConfig
from infra.config.model import AppConfig
from infra.config.node_budget import gpu_node_pieces
from infra.facts.instances import GPU_INSTANCES

FREE_THE_NODE = (
    "lower what else runs there (kvcache.curvine.worker, kvcache.curvine.fuse, "
    "tiered_storage.instance_memory_allocation_percentage), or use a larger "
    "hyperpod.gpu_group.instance_type"
)


def check_node_budget(app: AppConfig) -> None:
    for i, endpoint in enumerate(app.kvcache.endpoints):
        _check_replica(app, i, endpoint)


def _check_replica(app: AppConfig, i: int, e: EndpointConfig) -> None:
    itype = app.hyperpod.gpu_group.instance_type
    inst = GPU_INSTANCES[itype]
    pieces = gpu_node_pieces(app, e)
    for key, asked, unit, per_unit, allocatable, others in (
        (
            "cpu",
            e.cpu,
            "cores",
            1000,
            inst.allocatable_cpu_millicores,
            sum(p.cpu_millicores for p in pieces) - e.cpu * 1000,
        ),
        (
            "memory_gib",
            e.memory_gib,
            "GiB",
            1024,
            inst.allocatable_memory_mib,
            sum(p.memory_mib for p in pieces) - e.memory_gib * 1024,
        ),
    ):
        room = (allocatable - others) // per_unit
        if asked <= room:
            continue
        small = "m" if key == "cpu" else " MiB"
        takers = ["the node's daemons", "Curvine", "the evictor", "the operator's sidecars"]
        takers += ["Tiered Storage"] if key == "memory_gib" else []
        node = (
            f"one {itype} node has {allocatable}{small} allocatable and {others}{small} of it go "
            f"to {', '.join(takers[:-1])} and {takers[-1]}"
        )
        field = f"kvcache.endpoints.{i}.{key}"
        raise RuleViolation(
            f"at most {room} {unit}: {node}" if room > 0 else f"no replica at all: {node}",
            f"lower {field}, or {FREE_THE_NODE}" if room > 0 else FREE_THE_NODE,
            field=field,
            value=asked,
        )
