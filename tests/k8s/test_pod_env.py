"""What the model container's env gives LMCache, on the Pod operator 3.2 renders
(tests/doubles/operator_pod.py: it drops the LMCACHE_* entries of worker.environmentVariables and
keeps the rest) after the rendered L2 policy (tests/doubles/kyverno_eval.py), for every endpoint
of the tiers variant (one per backend). LMCache's own loader judges the same env in the runtime
layer (tests/runtime/test_lmcache_env.py); this holds the rendering to it in make test."""

from __future__ import annotations

from typing import Any

from infra.config.kvcache import MOUNTED_L2_BACKENDS, EndpointConfig
from tests.doubles.kyverno_eval import apply_policy
from tests.doubles.operator_pod import operator_pod, process_env
from tests.support.config import TIERS_VARIANT, env_config

Obj = dict[str, Any]


def _containers(objs: list[Obj]) -> dict[str, tuple[dict[str, str], set[str], Obj]]:
    """Each endpoint's model container: its process env, its mountPaths, and its endpoint's own
    environmentVariables."""
    (policy,) = [o for o in objs if o["kind"] == "ClusterPolicy"]
    out = {}
    for iec in (o for o in objs if o["kind"] == "InferenceEndpointConfig"):
        pod = apply_policy(policy, operator_pod(iec, "3.2"), "CREATE")
        model = pod["spec"]["containers"][0]
        own = {v["name"]: v["value"] for v in iec["spec"]["worker"]["environmentVariables"]}
        mounts = {m["mountPath"] for m in model.get("volumeMounts") or []}
        out[iec["metadata"]["name"]] = (process_env(model), mounts, own)
    return out


def test_every_backends_container_counts_into_a_directory_new_at_each_start(
    rendered_envs: dict[str, list[Obj]],
) -> None:
    """PROMETHEUS_MULTIPROC_DIR reaches every backend's container (it is not LMCACHE_*), and
    names its own /tmp: a volume there would outlive a container restart, and the dead process's
    counters would stay summed in (tests/runtime/test_counters.py runs it)."""
    config = env_config(TIERS_VARIANT)
    assert config.observability.enabled
    containers = _containers(rendered_envs[TIERS_VARIANT])
    assert {e.l2_backend for e in config.kvcache.endpoints} == {"curvine", "tieredstorage", "none"}
    for e in config.kvcache.endpoints:
        env, mounts, _ = containers[e.name]
        assert env["PROMETHEUS_MULTIPROC_DIR"] == "/tmp", e.name
        assert not any(m == "/tmp" or m.startswith("/tmp/") for m in mounts), e.name


def test_l1_gets_the_pods_memory_less_vllms_need_where_the_env_survives(
    rendered_envs: dict[str, list[Obj]],
) -> None:
    """On a curvine Pod the policy writes the size (operator 3.2 drops the endpoint's own
    LMCACHE_* entries); every endpoint also carries it for an operator that passes them on."""
    config = env_config(TIERS_VARIANT)
    containers = _containers(rendered_envs[TIERS_VARIANT])
    e: EndpointConfig
    for e in config.kvcache.endpoints:
        size = str(e.memory_gib - 8 - 2 * e.tensor_parallel_size)
        env, _, own = containers[e.name]
        assert own["LMCACHE_MAX_LOCAL_CPU_SIZE"] == size, e.name
        assert env.get("LMCACHE_MAX_LOCAL_CPU_SIZE") == (
            size if e.l2_backend in MOUNTED_L2_BACKENDS else None
        ), e.name
