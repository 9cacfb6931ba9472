"""Deploy rehearsal, per-node budget: what lands on one GPU node must fit its allocatable CPU and
memory, in every shipped environment; and the config rule that refuses a config where it does
not (infra/config/rules_budget.py) counts exactly what the rendered objects request.

Our objects are read from the real rendered output (every DaemonSet and CronJob whose
nodeSelector matches the GPU group's labels); one vLLM replica is the rendered
InferenceEndpointConfig's worker resources plus the operator's sidecars. What EKS and HyperPod run
on every node, and the sidecars, are the tables of infra/config/node_budget.py, which the config
rule reads too (no double: these are requests, summed). Allocatable comes from
infra/facts/instances.py (EC2 capacity minus the EKS AMI's kube-reserved and eviction threshold,
cited there).
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig, load_config
from infra.config.hyperpod import InstanceGroupConfig
from infra.config.node_budget import NODE_DAEMONS, OPERATOR_SIDECARS, own_pieces
from infra.facts.instances import GPU_INSTANCES
from k8s.common import INSTANCE_GROUP_LABEL
from tests.support.config import env_config

CURVINE_ENVS = ("dev", "test", "prod")
# fsx, tiers: tests/support/config.py FSX_VARIANT, TIERS_VARIANT
ENVS = (*CURVINE_ENVS, "fsx", "tiers")


def cpu_m(v: Any) -> int:
    s = str(v)
    return int(s[:-1]) if s.endswith("m") else int(float(s) * 1000)


def mem_mib(v: Any) -> int:
    s = str(v)
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}
    for suffix, factor in units.items():
        if s.endswith(suffix):
            return int(float(s[: -len(suffix)]) * factor)
    return int(int(s) / 2**20)


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    if obj["kind"] == "CronJob":
        spec: dict[str, Any] = obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        return spec
    spec = obj["spec"]["template"]["spec"]
    return spec


def requests(spec: dict[str, Any]) -> tuple[int, int]:
    """A Pod's effective request: the larger of its containers' sum and any init container."""

    def of(c: dict[str, Any]) -> tuple[int, int]:
        r = c.get("resources", {}).get("requests", {})
        return cpu_m(r.get("cpu", 0)), mem_mib(r.get("memory", 0))

    run = [of(c) for c in spec["containers"]]
    init = [of(c) for c in spec.get("initContainers", [])]
    cpu = max([sum(c for c, _ in run), *(c for c, _ in init)])
    mem = max([sum(m for _, m in run), *(m for _, m in init)])
    return cpu, mem


def node_labels(group: InstanceGroupConfig) -> dict[str, str]:
    """The labels a node of ``group`` carries: the configured ones, and the instance group's
    name, which HyperPod puts on every node itself."""
    return {**group.labels, INSTANCE_GROUP_LABEL: group.name}


def lands_on(spec: dict[str, Any], node_labels: dict[str, str]) -> bool:
    selector = spec.get("nodeSelector") or {}
    return bool(selector) and all(node_labels.get(k) == v for k, v in selector.items())


def own_rendered(objs: list[dict[str, Any]], config: AppConfig) -> list[tuple[str, int, int]]:
    """(what, cpu millicores, memory MiB) of our objects that run on every GPU node."""
    gpu = config.hyperpod.gpu_group
    pieces = []
    for o in objs:
        if o["kind"] in ("DaemonSet", "CronJob") and lands_on(pod_spec(o), node_labels(gpu)):
            c, m = requests(pod_spec(o))
            pieces.append(
                (f"{o['kind']} {o['metadata']['namespace']}/{o['metadata']['name']}", c, m)
            )
    return pieces


def gpu_node_pieces(objs: list[dict[str, Any]], config: AppConfig) -> list[tuple[str, int, int]]:
    """(what, cpu millicores, memory MiB) of everything that lands on one GPU node."""
    gpu = config.hyperpod.gpu_group
    pieces = [(f"{name} [{why}]", c, m) for name, (c, m, why) in NODE_DAEMONS.items()]
    pieces += own_rendered(objs, config)
    iec = next(o for o in objs if o["kind"] == "InferenceEndpointConfig")
    worker = iec["spec"]["worker"]["resources"]["requests"]
    pieces.append(
        (
            f"vLLM replica of {iec['metadata']['name']} (IEC worker requests)",
            cpu_m(worker["cpu"]),
            mem_mib(worker["memory"]),
        )
    )
    pieces += [(name, c, m) for name, (c, m) in OPERATOR_SIDECARS.items()]
    if config.tiered_storage.mode == "Enable":
        share = config.tiered_storage.instance_memory_allocation_percentage
        inst = GPU_INSTANCES[gpu.instance_type]
        pieces.append(
            (
                f"Tiered Storage L1 ({share}% of instance memory, counted as taken)",
                0,
                inst.memory_gib * 1024 * share // 100,
            )
        )
    return pieces


def overruns(objs: list[dict[str, Any]], config: AppConfig) -> list[str]:
    itype = config.hyperpod.gpu_group.instance_type
    inst = GPU_INSTANCES[itype]
    pieces = gpu_node_pieces(objs, config)
    out = []
    for resource, index, allocatable, unit in (
        ("cpu", 1, inst.allocatable_cpu_millicores, "m"),
        ("memory", 2, inst.allocatable_memory_mib, "Mi"),
    ):
        total = sum(int(p[index]) for p in pieces)
        if total > allocatable:
            listed = "; ".join(f"{p[0]} {p[index]}{unit}" for p in pieces if p[index])
            out.append(
                f"{itype}: {resource} requests {total}{unit} > allocatable "
                f"{allocatable}{unit}; pieces: {listed}"
            )
    return out


@pytest.mark.parametrize("env", ENVS)
def test_one_gpu_node_fits_its_requests(
    rendered_envs: dict[str, list[dict[str, Any]]], env: str
) -> None:
    config = env_config(env)
    names = [p[0] for p in gpu_node_pieces(rendered_envs[env], config)]
    # our per-node objects were found through the GPU group's nodeSelector
    if "curvine" in config.kvcache.l2_backends:
        assert any("curvine-worker" in n for n in names), names
        assert any("curvine-csi-node" in n for n in names), names
    else:
        assert any("fsx-l2-evictor" in n for n in names), names
        assert not any("curvine" in n for n in names), names
    problems = overruns(rendered_envs[env], config)
    assert not problems, f"{env}:\n" + "\n".join(problems)


@pytest.mark.parametrize("env", ENVS)
def test_the_config_rule_counts_what_the_rendered_gpu_node_objects_request(
    rendered_envs: dict[str, list[dict[str, Any]]], env: str
) -> None:
    """A per-node object added, removed or resized in the charts without the rule knowing would
    let the rule pass a config whose replica cannot be scheduled."""
    config = env_config(env)
    objs = rendered_envs[env]
    rendered = sorted((c, m) for _, c, m in own_rendered(objs, config))
    counted = sorted((p.cpu_millicores, p.memory_mib) for p in own_pieces(config))
    assert rendered == counted, own_rendered(objs, config)
    for iec in (o for o in objs if o["kind"] == "InferenceEndpointConfig"):
        worker = iec["spec"]["worker"]["resources"]["requests"]
        e = next(e for e in config.kvcache.endpoints if e.name == iec["metadata"]["name"])
        assert (cpu_m(worker["cpu"]), mem_mib(worker["memory"])) == (
            e.cpu * 1000,
            e.memory_gib * 1024,
        )


def test_an_endpoint_too_large_for_the_node_fails_naming_it(
    rendered: list[dict[str, Any]], dev_config: AppConfig
) -> None:
    """Mutation: the endpoint's memory raised above allocatable must fail, naming the pieces."""
    objs = [dict(o) for o in rendered]
    i = next(n for n, o in enumerate(objs) if o["kind"] == "InferenceEndpointConfig")
    iec = objs[i]
    worker = dict(iec["spec"]["worker"])
    worker["resources"] = {
        **worker["resources"],
        "requests": {**worker["resources"]["requests"], "memory": "130Gi"},
    }
    objs[i] = {**iec, "spec": {**iec["spec"], "worker": worker}}
    (problem,) = overruns(objs, dev_config)
    assert problem.startswith("ml.g6e.4xlarge: memory requests ")
    assert "> allocatable 127967Mi" in problem
    assert "vLLM replica of qwen3-8b (IEC worker requests) 133120Mi" in problem
    assert "DaemonSet curvine/curvine-worker 8192Mi" in problem


def test_allocatable_follows_the_eks_formula() -> None:
    inst = GPU_INSTANCES["ml.g6e.4xlarge"]
    # 16 vCPUs: 60 + 10 + 2 x 10 ... = 60m + 10m + 10m + 12 x 2.5m = 110m
    assert inst.kube_reserved_cpu_millicores == 110
    assert inst.allocatable_cpu_millicores == 15890
    # 128 GiB - (11 x 250 + 255) MiB - 100 MiB
    assert inst.allocatable_memory_mib == 131072 - 3005 - 100


@pytest.mark.parametrize("env", CURVINE_ENVS)
def test_the_curvine_master_stays_off_gpu_nodes(
    rendered_envs: dict[str, list[dict[str, Any]]], env: str
) -> None:
    config = load_config(env)
    sts = [o for o in rendered_envs[env] if o["kind"] == "StatefulSet"]
    master = next(o for o in sts if o["metadata"]["name"] == "curvine-master")
    spec = pod_spec(master)
    system = node_labels(config.hyperpod.system_group)
    assert lands_on(spec, system), (
        f"{env}: StatefulSet curvine/curvine-master has nodeSelector {spec.get('nodeSelector')}: "
        f"it can take a GPU node's room (want a selector that system nodes {system} match)"
    )
    assert not lands_on(spec, node_labels(config.hyperpod.gpu_group))
