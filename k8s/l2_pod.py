"""What an endpoint's Pods get beyond what the operator renders, as plain data: the env, mounts
and volumes of the model container (the one the operator injects ``LMCACHE_REMOTE_URL`` into)
and of the Pod.

``k8s.policy`` renders the Kyverno rule of a curvine or fsx_lustre endpoint from
``l2_settings``; ``k8s.endpoints`` writes ``endpoint_env`` into every InferenceEndpointConfig;
``verify``, ``patch`` and the runtime tests read both directly. Nothing here imports cdk8s, so
the CLI reads it without Node.js.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from k8s.names import REMOTE_URL_ENV

VOLUME = "curvine-l2"  # the L2 claim's volume in the Pod
L1_SIZE_ENV = "LMCACHE_MAX_LOCAL_CPU_SIZE"
# LMCache's counters reach vLLM's /metrics through prometheus_client's multiprocess files, read
# from the directory this names (LMCache runs in the engine process, /metrics is served by the API
# server). The directory must be empty when the container starts: the collector sums every *.db
# file in it, a dead process's counters included (vLLM warns the same: "This directory must be
# wiped between vLLM runs"). /tmp on the container's own filesystem is: every image has it and a
# restarted container gets a new one, where an emptyDir would outlive the restart.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
MULTIPROC_DIR = "/tmp"


@dataclass(frozen=True)
class L2Settings:
    """What the L2 policy adds to an endpoint's Pod: in the container that carries the env
    variable ``marker`` (the operator injects it into the model container) the ``env`` entries
    (by name) and ``mounts`` (by mountPath); in the Pod the ``volumes``."""

    marker: str
    env: tuple[dict[str, str], ...]
    mounts: tuple[dict[str, str], ...]
    volumes: tuple[dict[str, Any], ...]

    def env_values(self) -> dict[str, str]:
        return {e["name"]: e["value"] for e in self.env}


def l2_url(config: AppConfig) -> str:
    """LMCache's fs connector URL for the mount. The connector ignores host and port, but its URL
    parser needs both (``fs:///path/`` and ``fs://host/path/`` are refused)."""
    return f"fs://localhost:0{config.kvcache.l2_mount_path}/"


def l2_env(config: AppConfig) -> list[dict[str, str]]:
    """The env the model container must carry (same keys replace the operator's values)."""
    return [
        {"name": REMOTE_URL_ENV, "value": l2_url(config)},
        {"name": "LMCACHE_REMOTE_SERDE", "value": "naive"},
        {"name": "PYTHONHASHSEED", "value": "0"},
    ]


def l1_env(e: EndpointConfig) -> list[dict[str, str]]:
    """LMCache's CPU cache size in GiB (its default is 5): the Pod's memory less vLLM's need
    (``EndpointConfig.l1_cache_gib``). None with L1 off."""
    if not e.enable_l1_cache:
        return []
    return [{"name": L1_SIZE_ENV, "value": str(e.l1_cache_gib)}]


def observability_env(config: AppConfig) -> list[dict[str, str]]:
    """The multiprocess directory, in every endpoint's own env: operator 3.2 drops only the
    LMCACHE_* entries of worker.environmentVariables, so this one reaches the container."""
    if not config.observability.enabled:
        return []
    return [{"name": MULTIPROC_ENV, "value": MULTIPROC_DIR}]


def endpoint_env(config: AppConfig, e: EndpointConfig) -> list[tuple[str, str]]:
    """The env the InferenceEndpointConfig asks for (``worker.environmentVariables``). Operator
    3.0 passes it through; 3.2 drops the LMCACHE_* entries, which is why the L2 policy writes
    them again into the Pod of a curvine or fsx_lustre endpoint (with the L1 size)."""
    own = [("LMCACHE_REMOTE_SERDE", "naive"), ("PYTHONHASHSEED", "0")]
    own += [(v["name"], v["value"]) for v in l1_env(e)]
    own += [(v["name"], v["value"]) for v in observability_env(config)]
    return own


def l2_settings(config: AppConfig, e: EndpointConfig, claim: str) -> L2Settings:
    """What the L2 policy gives a Pod of ``e`` (a curvine or fsx_lustre endpoint) whose claim is
    ``claim`` (``k8s.l2_volume.l2_claim``: on Curvine named after its size, with FSx after the
    file system). The mount's
    subPath gives each endpoint its own directory while the URL stays the documented one."""
    return L2Settings(
        marker=REMOTE_URL_ENV,
        env=(*l2_env(config), *l1_env(e)),
        mounts=({"name": VOLUME, "mountPath": config.kvcache.l2_mount_path, "subPath": e.name},),
        volumes=({"name": VOLUME, "persistentVolumeClaim": {"claimName": claim}},),
    )
