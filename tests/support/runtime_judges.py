"""What the runtime layer holds the engines' answers to: for one endpoint, what LMCache made of its
container's env and what vLLM made of its arguments, as a list of problems (empty: as designed).

The expectations come from the rendered container (the mount the URL must name, the size the env
carries) and from the engines themselves (LMCache's own default L1), not from the app's constants,
so an app that renders one thing and means another is caught."""

from __future__ import annotations

from typing import Any

from infra.config.images import ImageFacts
from infra.config.kvcache import MOUNTED_L2_BACKENDS, EndpointConfig
from infra.metrics.tiers import LMCACHE_CHUNK_TOKENS
from k8s.l2_pod import L1_SIZE_ENV
from tests.doubles.operator_pod import SHARED_MEMORY
from tests.support.runtime import Container

HYPERPOD_EXTRA = {"sagemaker_hyperpod_shared_memory_name": "ai_toolkit_cache"}


def lmcache_problems(
    e: EndpointConfig, container: Container, answer: dict[str, Any], default_l1_gib: float
) -> list[str]:
    """``answer``: the lmcache_config oracle's for the container's env."""
    cfg, env = answer["config"], container.env
    problems = [
        f"{name}: LMCache reads no such variable, so it is ignored"
        for name in sorted(env)
        if name.startswith("LMCACHE_") and name not in answer["known"]
    ]
    if answer["validate"]:
        problems.append(f"LMCache refuses the configuration: {answer['validate']}")
    if cfg["chunk_size"] != LMCACHE_CHUNK_TOKENS:
        problems.append(
            f"chunk_size {cfg['chunk_size']}: the tier shares count "
            f"{LMCACHE_CHUNK_TOKENS}-token chunks"
        )
    if cfg["save_unfull_chunk"]:
        problems.append("save_unfull_chunk: the tier shares count whole chunks only")
    if e.enable_l1_cache:
        asked, got = env.get(L1_SIZE_ENV), cfg["max_local_cpu_size"]
        if got is None:
            problems.append(
                f"{L1_SIZE_ENV}={asked!r}: LMCache cannot read it (the L1 size "
                "becomes None and its storage fails to start)"
            )
        elif got != (default_l1_gib if asked is None else float(asked)):
            problems.append(f"L1 is {got} GiB, the container asks for {asked or 'the default'}")
        if not cfg["local_cpu"]:
            problems.append("local_cpu is off: LMCache keeps no CPU cache")
    problems += _l2_problems(e, container, answer)
    return problems


def _l2_problems(e: EndpointConfig, container: Container, answer: dict[str, Any]) -> list[str]:
    cfg, remote, url = answer["config"], answer["remote"], answer["config"]["remote_url"]
    if e.l2_backend in MOUNTED_L2_BACKENDS:
        if url is None:
            return ["no remote URL: LMCache runs without its L2"]
        if "error" in remote:
            return [f"LMCache refuses {url}: {remote['error']} (L2 silently off)"]
        path = remote["path"].rstrip("/")
        problems = []
        if path not in container.claims:
            problems.append(
                f"{url} names {path}, where the container mounts no claim "
                f"(claims at {sorted(container.claims)})"
            )
        if cfg["remote_serde"] != "naive":
            problems.append(f"remote_serde {cfg['remote_serde']}: remote connectors need naive")
        return problems
    if e.l2_backend == "tieredstorage":
        problems = []
        if remote.get("scheme") != "sagemaker-hyperpod":
            problems.append(f"remote URL {url}: tieredstorage reads sagemaker-hyperpod://")
        if cfg["extra_config"] != HYPERPOD_EXTRA:
            problems.append(
                f"extra_config {cfg['extra_config']}: the daemon's shared memory is "
                f"{HYPERPOD_EXTRA}"
            )
        if SHARED_MEMORY not in container.mounts:
            problems.append(f"{SHARED_MEMORY} is not mounted: the connector cannot start")
        return problems
    return [] if url is None else [f"remote URL {url} on an endpoint without L2"]


def vllm_problems(e: EndpointConfig, facts: ImageFacts | None, answer: dict[str, Any]) -> list[str]:
    """``answer``: the vllm_args oracle's for the container's arguments."""
    if not answer["ok"]:
        return [f"vLLM refuses the arguments ({answer['stage']}): {answer['error']}"]
    parsed, problems = answer["parsed"], []
    if parsed["port"] != e.container_port:
        problems.append(f"vLLM listens on {parsed['port']}, the endpoint on {e.container_port}")
    if parsed["tensor_parallel_size"] != e.tensor_parallel_size:
        problems.append(
            f"tensor parallel {parsed['tensor_parallel_size']}, the endpoint "
            f"{e.tensor_parallel_size}"
        )
    kv = parsed["kv_transfer_config"] or {}
    if (kv.get("kv_connector"), kv.get("kv_role")) != ("LMCacheConnectorV1", "kv_both"):
        problems.append(f"kv_transfer_config {kv}: LMCache must store and load (kv_both)")
    policy = kv.get("kv_load_failure_policy")
    if facts is not None and facts.failure_policy and policy != "recompute":
        problems.append(f"kv_load_failure_policy {policy}: a failed L2 read must be recomputed")
    return problems
