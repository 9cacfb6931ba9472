"""The model container the HyperPod inference operator renders for an InferenceEndpointConfig, as
far as LMCache and vLLM see it: its env, its mounts and its arguments. A model (the operator's
source is not public), of operator 3.2 only, from:

- a user report on aws/sagemaker-hyperpod-cli, "Inference Operator v3.2.0 ignores l2CacheBackend:
  redis" (2026-06-21; operator image v3.2.0, add-on v1.3.0-eksbuild.1): with
  ``enableL2Cache`` the operator injects ``LMCACHE_REMOTE_URL=sagemaker-hyperpod://$(NODE_IP):9200``
  and ``LMCACHE_EXTRA_CONFIG={"sagemaker_hyperpod_shared_memory_name": "ai_toolkit_cache"}``,
  whatever ``l2CacheBackend`` says, and the ``LMCACHE_*`` entries of
  ``worker.environmentVariables`` do not reach the Pod; the others do;
- the AWS walk-through and awslabs' "HyperPod Managed KV Cache with LMCache": ``NODE_IP`` from
  ``status.hostIP``, the daemon's shared memory mounted at ``/dev/shm/ai_toolkit_cache`` on a Pod
  with an L2, the weights at ``worker.modelVolumeMount``, the container's arguments those of
  ``worker.args``.

Anything else refuses (``Unmodelled``): another operator version, or an endpoint field this model
does not know the operator's answer to. ``process_env`` then gives the environment the process
starts with, as the kubelet builds it (a later entry of a name wins; ``$(NAME)`` expands to an
earlier entry; ``status.hostIP`` is the node's address).
"""

from __future__ import annotations

import re
from typing import Any

NODE_IP = "10.1.2.3"  # the node's address in these tests
MODELLED = ("3.2",)
SHARED_MEMORY = "/dev/shm/ai_toolkit_cache"
MODEL_CONTAINER = "inference"  # the HyperPod SDK's get_logs example; the policy does not rely on it
Obj = dict[str, Any]


class Unmodelled(ValueError):
    """The operator's answer to this input is not modelled here."""


def operator_pod(iec: Obj, operator: str) -> Obj:
    """The Pod the operator renders for ``iec`` (its model container first)."""
    if operator not in MODELLED:
        raise Unmodelled(f"operator {operator}: only {', '.join(MODELLED)} is modelled")
    spec, worker = iec["spec"], iec["spec"]["worker"]
    kv = spec.get("kvCacheSpec") or {}
    if not kv.get("enableL1Cache", True):
        raise Unmodelled("enableL1Cache false: what the operator renders then is not modelled")
    host_ip = {"fieldRef": {"fieldPath": "status.hostIP"}}
    env: list[Obj] = [{"name": "NODE_IP", "valueFrom": host_ip}]
    own = worker.get("environmentVariables") or []
    env += [e for e in own if not e["name"].startswith("LMCACHE_")]
    mounts = [{"name": "model-weights", "mountPath": worker["modelVolumeMount"]["mountPath"]}]
    volumes: list[Obj] = [{"name": "model-weights", "emptyDir": {}}]
    if kv.get("enableL2Cache"):
        backend = (kv.get("l2CacheSpec") or {}).get("l2CacheBackend")
        if backend != "tieredstorage":
            raise Unmodelled(f"l2CacheBackend {backend!r}: only tieredstorage is modelled")
        env += [
            {"name": "LMCACHE_REMOTE_URL", "value": "sagemaker-hyperpod://$(NODE_IP):9200"},
            {
                "name": "LMCACHE_EXTRA_CONFIG",
                "value": '{"sagemaker_hyperpod_shared_memory_name": "ai_toolkit_cache"}',
            },
        ]
        mounts.append({"name": "ai-toolkit-cache", "mountPath": SHARED_MEMORY})
        volumes.append(
            {"name": "ai-toolkit-cache", "hostPath": {"path": SHARED_MEMORY, "type": "File"}}
        )
    container = {
        "name": MODEL_CONTAINER,
        "image": worker["image"],
        "args": list(worker.get("args") or []),
        "env": env,
        "volumeMounts": mounts,
    }
    meta = iec["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": meta["namespace"],
            "labels": {"app": meta["name"]},
            "generateName": f"{meta['name']}-",
        },
        "spec": {"containers": [container], "volumes": volumes},
    }


_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def process_env(container: Obj, node_ip: str = NODE_IP) -> dict[str, str]:
    """The environment the container's process starts with."""
    env: dict[str, str] = {}
    for entry in container.get("env") or []:
        if "value" in entry:
            value = _REFERENCE.sub(lambda m: env.get(m[1], m[0]), entry["value"])
        elif entry.get("valueFrom") == {"fieldRef": {"fieldPath": "status.hostIP"}}:
            value = node_ip
        else:
            raise Unmodelled(f"env {entry['name']}: only values and status.hostIP are modelled")
        env[entry["name"]] = value
    return env
