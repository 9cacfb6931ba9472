"""Why the second Pod of ``verify``'s cross-Pod test did not read the first one's KV from L2, from
what the two Pods show: LMCache's own start line (its degraded mode), then the Pod specs (the L2
volume each mounts, the env that keys LMCache's chunks), then the logs of the run (what the first
stored, what the second found)."""

from __future__ import annotations

from typing import Any

from scripts.lib.bench_compare.scrape import DEGRADED
from scripts.lib.checks import Check
from scripts.lib.lmcache_logs import LmcacheLog
from scripts.lib.verify.pods import effective_env

STAGE = "cross-Pod L2"
# What LMCache derives a chunk's key (or finds its L2) from, beside the tokens: two replicas that
# differ in one of these never share a chunk. Absent, LMCache's default applies.
KEYING_ENV = {
    "LMCACHE_CHUNK_SIZE": "256 (LMCache's default)",
    "PYTHONHASHSEED": "unset (a random seed per process)",
    "LMCACHE_PRE_CACHING_HASH_ALGORITHM": "unset (LMCache's default hash)",
    "LMCACHE_REMOTE_URL": "unset",
}


def degraded(
    pods: list[dict[str, Any]], logs: list[LmcacheLog], states: list[str | None]
) -> Check | None:
    """A failing row naming each Pod whose LMCache started in its degraded mode (recompute),
    from its log line or, where the log no longer holds it, its /metrics (``states``:
    ``scrape.lmcache_state``): such a replica stores and reads nothing, and its first request
    stops vLLM's engine, so the test is not sent to it."""
    found = []
    for pod, log, state in zip(pods, logs, states, strict=True):
        if log.degraded:
            why = log.degraded[-1].why
            found.append((pod["metadata"]["name"], f" ({why})" if why else ""))
        elif state == DEGRADED:
            found.append(
                (
                    pod["metadata"]["name"],
                    " (its /metrics has none of the series LMCache's engine writes)",
                )
            )
    if not found:
        return None
    named = "; ".join(
        f"Pod {name}: LMCache started in its degraded mode (recompute), serving without L1 or "
        f"L2{why}"
        for name, why in found
    )
    names = " ".join(name for name, _ in found)
    fix = (
        f"read why in the Pod's log (kubectl logs {names}), fix it and restart the Pod: "
        "LMCache does not retry"
    )
    return Check(STAGE, "fail", named, fix)


def _l2_mount(pod: dict[str, Any], container: dict[str, Any]) -> tuple[str, str, str] | None:
    """(mountPath, claim, subPath) of the container's claim mount, None without one."""
    claims = {
        v["name"]: v["persistentVolumeClaim"]["claimName"]
        for v in pod["spec"].get("volumes") or []
        if "persistentVolumeClaim" in v
    }
    for m in container.get("volumeMounts") or []:
        if m.get("name") in claims:
            return m["mountPath"], claims[m["name"]], m.get("subPath", "")
    return None


def _describe(mount: tuple[str, str, str] | None) -> str:
    if mount is None:
        return "no claim"
    path, claim, sub = mount
    return f"claim {claim}, subPath {sub or '(none)'} at {path}"


def cause(
    pods: tuple[dict[str, Any], dict[str, Any]], index: int, first: LmcacheLog, second: LmcacheLog
) -> str:
    """Why the second Pod found none or part of what the first stored."""
    (a, b) = pods
    ca, cb = (p["spec"]["containers"][index] for p in pods)
    na, nb = a["metadata"]["name"], b["metadata"]["name"]
    differences = []
    ma, mb = _l2_mount(a, ca), _l2_mount(b, cb)
    if ma != mb:
        differences.append(
            f"{na} mounts {_describe(ma)}, {nb} {_describe(mb)}: they do not share an L2 folder"
        )
    for name, default in KEYING_ENV.items():
        (sa, va), (sb, vb) = effective_env(ca, name), effective_env(cb, name)
        if (sa, va) != (sb, vb):
            differences.append(
                f"{name} is {va if sa else default} on {na}, {vb if sb else default} on {nb}: "
                "their chunk keys differ"
            )
    if differences:
        return "; ".join(differences)
    if first.stored_tokens and not second.hits and not second.retrieves:
        return f"{nb} logged no LMCache lookup: is LMCache enabled in its container?"
    nodes = f"{a['spec'].get('nodeName', '?')} and {b['spec'].get('nodeName', '?')}"
    return (
        f"both mount {_describe(ma)} with the same keying env, and {nb} found "
        f"{second.hit_tokens} of the {first.stored_tokens} tokens {na} stored: the L2 volume is "
        f"not shared between nodes {nodes} (check the L2 mount on each node)"
    )
