"""What the model container's env gives LMCache: its metrics reach vLLM's /metrics only when
PROMETHEUS_MULTIPROC_DIR is set, and its CPU cache (L1) is LMCACHE_MAX_LOCAL_CPU_SIZE GiB. Checked
for every endpoint of the tiers variant (one per backend) on the Pod operator
3.2 renders (it drops the LMCACHE_* entries of worker.environmentVariables and keeps the rest),
after the rendered L2 policy (tests/doubles/kyverno_eval.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from infra.config.kvcache import MOUNTED_L2_BACKENDS, EndpointConfig
from tests.doubles.kyverno_eval import apply_policy
from tests.support.config import TIERS_VARIANT, env_config

POD = yaml.safe_load((Path(__file__).parent / "fixtures" / "operator_pod.yaml").read_text())
Obj = dict[str, Any]


def _operator_3_2_pod(iec: Obj) -> Obj:
    """The fixture Pod of ``iec``'s endpoint: its model container gets the endpoint's env,
    without the LMCACHE_* entries."""
    pod = copy.deepcopy(POD)
    pod["metadata"].update(namespace=iec["metadata"]["namespace"],
                           labels={"app": iec["metadata"]["name"]})  # fmt: skip
    (model,) = [c for c in pod["spec"]["containers"]
                if any(e["name"] == "LMCACHE_REMOTE_URL" for e in c.get("env") or [])]  # fmt: skip
    kept = [e for e in iec["spec"]["worker"]["environmentVariables"]
            if not e["name"].startswith("LMCACHE_")]  # fmt: skip
    model["env"] = [*model["env"], *kept]
    return pod


def _env_and_mounts(pod: Obj) -> tuple[dict[str, Any], set[str]]:
    (model,) = [c for c in pod["spec"]["containers"]
                if any(e["name"] == "LMCACHE_REMOTE_URL" for e in c.get("env") or [])]  # fmt: skip
    env = {e["name"]: e.get("value") for e in model["env"]}
    return env, {m["mountPath"] for m in model.get("volumeMounts") or []}


def test_every_backends_pod_sets_the_prometheus_multiprocess_dir(
    rendered_envs: dict[str, list[Obj]],
) -> None:
    objs, config = rendered_envs[TIERS_VARIANT], env_config(TIERS_VARIANT)
    assert config.observability.enabled
    (policy,) = [o for o in objs if o["kind"] == "ClusterPolicy"]
    iecs = {o["metadata"]["name"]: o for o in objs if o["kind"] == "InferenceEndpointConfig"}
    endpoints: dict[str, EndpointConfig] = {e.name: e for e in config.kvcache.endpoints}
    assert {e.l2_backend for e in endpoints.values()} == {"curvine", "tieredstorage", "none"}
    for name, e in endpoints.items():
        pod = apply_policy(policy, _operator_3_2_pod(iecs[name]), "CREATE")
        env, mounts = _env_and_mounts(pod)
        got = env.get("PROMETHEUS_MULTIPROC_DIR")
        if e.l2_backend in MOUNTED_L2_BACKENDS:
            # The rule's own emptyDir, mounted where the variable points.
            assert got == "/tmp/lmcache_prometheus" and got in mounts, name
        else:
            # No volume can be added through the endpoint: a directory every image has.
            assert got == "/tmp", name


def test_l1_gets_the_pods_memory_less_vllms_need_where_the_env_survives(
    rendered_envs: dict[str, list[Obj]],
) -> None:
    """On a curvine Pod the policy writes the size (operator 3.2 drops the endpoint's own
    LMCACHE_* entries); every endpoint also carries it for an operator that passes them on."""
    objs, config = rendered_envs[TIERS_VARIANT], env_config(TIERS_VARIANT)
    (policy,) = [o for o in objs if o["kind"] == "ClusterPolicy"]
    iecs = {o["metadata"]["name"]: o for o in objs if o["kind"] == "InferenceEndpointConfig"}
    for e in config.kvcache.endpoints:
        size = str(e.memory_gib - 8 - 2 * e.tensor_parallel_size)
        own = {
            v["name"]: v["value"] for v in iecs[e.name]["spec"]["worker"]["environmentVariables"]
        }
        assert own["LMCACHE_MAX_LOCAL_CPU_SIZE"] == size, e.name
        env, _ = _env_and_mounts(apply_policy(policy, _operator_3_2_pod(iecs[e.name]), "CREATE"))
        assert env.get("LMCACHE_MAX_LOCAL_CPU_SIZE") == (
            size if e.l2_backend in MOUNTED_L2_BACKENDS else None
        ), e.name
