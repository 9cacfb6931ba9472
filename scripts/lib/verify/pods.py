"""Whether the endpoint's running Pods carry what the L2 rule gives them (``verify``)."""

from __future__ import annotations

from typing import Any

from k8s.l2_pod import L2Settings
from k8s.names import POLICY
from scripts.lib.checks import Check

OPERATOR_URL_SCHEME = "sagemaker-hyperpod://"


def _model_containers(pod: dict[str, Any], want: L2Settings) -> list[dict[str, Any]]:
    """Every container the Kyverno rule patches: each one carrying ``want.marker``."""
    return [
        c
        for c in pod["spec"].get("containers") or []
        if any(e.get("name") == want.marker for e in c.get("env") or [])
    ]


def effective_env(container: dict[str, Any], name: str) -> tuple[bool, Any]:
    """(present, value) of ``name`` as the process sees it: when a name repeats, the kubelet
    keeps the last entry. An entry set from ``valueFrom`` reads as that source, never equal to
    a literal."""
    found: tuple[bool, Any] = (False, None)
    for item in container.get("env") or []:
        if item.get("name") == name:
            found = (
                True,
                item["value"] if "value" in item else {"valueFrom": item.get("valueFrom")},
            )
    return found


def _pod_problems(pod: dict[str, Any], want: L2Settings) -> list[str]:
    name = pod["metadata"]["name"]
    carriers = _model_containers(pod, want)
    if not carriers:
        return [f"{name}: no container carries {want.marker}"]
    problems = []
    for c in carriers:
        where = f"{name}/{c.get('name')}"
        for key, value in want.env_values().items():
            present, got = effective_env(c, key)
            if key == want.marker or got == value:
                continue
            state = f"{key}={got}" if present else f"{key} absent"
            problems.append(f"{where}: {state} (want {value})")
        mounts = {m.get("mountPath"): m for m in c.get("volumeMounts") or []}
        for m in want.mounts:
            got_mount = mounts.get(m["mountPath"])
            if got_mount is None:
                problems.append(f"{where}: no mount at {m['mountPath']}")
            elif got_mount != m:
                problems.append(f"{where}: mount at {m['mountPath']} is {got_mount}, want {m}")
    volumes = pod["spec"].get("volumes") or []
    problems += [f"{name}: no volume {v}" for v in want.volumes if v not in volumes]
    return problems


def _url_problems(pod: dict[str, Any], want: L2Settings, url: str) -> list[str]:
    """What keeps a Pod's LMCache off Curvine: no carrier, a carrier whose effective URL is not
    ``url``, or an entry anywhere still naming the operator's connector (a repeated name whose
    earlier entry the kubelet ignores is reported too: it is one edit away from winning)."""
    carriers = _model_containers(pod, want)
    if not carriers:
        return [f"{want.marker}=(absent)"]
    several = len(carriers) > 1
    found = []
    for c in carriers:
        present, got = effective_env(c, want.marker)
        if got != url:
            where = f"container {c.get('name')}: " if several else ""
            found.append(f"{where}{want.marker}={got if present else '(absent)'}")
    for c in pod["spec"].get("containers") or []:
        entries = c.get("env") or []
        for i, e in enumerate(entries):
            value = str(e.get("value", ""))
            if not value.startswith(OPERATOR_URL_SCHEME):
                continue
            last = not any(x.get("name") == e.get("name") for x in entries[i + 1 :])
            if last and e.get("name") == want.marker and c in carriers:
                continue  # its effective value, reported above
            found.append(
                f"container {c.get('name')}: {e.get('name')}={value} (repeated name)"
                if not last
                else f"container {c.get('name')}: {e.get('name')}={value}"
            )
    return found


def check_remote_url(pods: list[dict[str, Any]], want: L2Settings) -> Check:
    """Each running Pod's LMCACHE_REMOTE_URL is the Curvine fs:// URL the rule writes, in every
    container that carries it and as the process sees it (the last entry of a repeated name),
    and no env entry still names the operator's sagemaker-hyperpod:// connector: such a Pod
    shares no cache through Curvine."""
    stage = f"{want.marker} is Curvine"
    url = want.env_values()[want.marker]
    if not pods:
        return Check(stage, "fail", "no Pods for the endpoint", "wait for the endpoint")
    wrong = [
        (pod["metadata"]["name"], problems)
        for pod in pods
        if (problems := _url_problems(pod, want, url))
    ]
    if not wrong:
        return Check(stage, "pass", f"{len(pods)} Pods: {want.marker}={url}")
    ns = pods[0]["metadata"].get("namespace", "")
    found = "; ".join(f"Pod {n}: {', '.join(p)}" for n, p in wrong)
    return Check(
        stage,
        "fail",
        f"{found} (want {url})",
        f"check `kubectl get clusterpolicy {POLICY}` is Ready, then recreate the Pods "
        f"(kubectl -n {ns} delete pod {' '.join(n for n, _ in wrong)}) so admission repoints "
        "them, or run `hpkv patch`",
    )


def check_pods(pods: list[dict[str, Any]], want: L2Settings) -> Check:
    """Every Pod carries the rest of what the Kyverno rule adds (the URL has its own row): the
    env, the mount (with the endpoint's subPath) and the PVC volume, read from
    ``k8s.policy.rule``."""
    stage = "Pods carry L2 settings"
    if not pods:
        return Check(
            stage, "fail", "no Pods for the endpoint", "wait for the endpoint or check its events"
        )
    problems = [p for pod in pods for p in _pod_problems(pod, want)]
    if problems:
        return Check(
            stage,
            "fail",
            "; ".join(problems),
            "check the Kyverno policy (kubectl get clusterpolicy) or run `hpkv patch`",
        )
    env = ", ".join(f"{k}={v}" for k, v in want.env_values().items() if k != want.marker)
    mounts = ", ".join(f"{m['mountPath']} (subPath {m.get('subPath', '-')})" for m in want.mounts)
    return Check(stage, "pass", f"{len(pods)} Pods: {env}; mount {mounts}")


HASH_SEED = "PYTHONHASHSEED"


def _tiered_problems(pod: dict[str, Any]) -> list[str]:
    """What keeps a Pod off Tiered Storage: no container with the operator's connector URL, or
    no fixed PYTHONHASHSEED (LMCache's chunk keys differ between Pods without one)."""
    name = pod["metadata"]["name"]
    found = []
    for c in pod["spec"].get("containers") or []:
        present, url = effective_env(c, "LMCACHE_REMOTE_URL")
        if present:
            found.append((c, str(url)))
    if not found:
        return [f"{name}: no container carries LMCACHE_REMOTE_URL"]
    problems = []
    for c, url in found:
        where = f"{name}/{c.get('name')}"
        if not url.startswith(OPERATOR_URL_SCHEME):
            problems.append(f"{where}: LMCACHE_REMOTE_URL={url} (want {OPERATOR_URL_SCHEME}...)")
        if not effective_env(c, HASH_SEED)[0]:
            problems.append(f"{where}: {HASH_SEED} absent")
    return problems


def check_tiered_url(pods: list[dict[str, Any]]) -> Check:
    """An endpoint on tieredstorage: each Pod keeps the operator's ``sagemaker-hyperpod://`` URL
    (nothing repoints it) and a fixed PYTHONHASHSEED."""
    stage = "LMCACHE_REMOTE_URL is Tiered Storage"
    if not pods:
        return Check(stage, "fail", "no Pods for the endpoint", "wait for the endpoint")
    problems = [p for pod in pods for p in _tiered_problems(pod)]
    if problems:
        return Check(
            stage,
            "fail",
            "; ".join(problems),
            "a curvine or fsx_lustre policy rule must not select this endpoint's Pods "
            "(kubectl get clusterpolicy -o yaml); check enableL2Cache on its "
            "InferenceEndpointConfig",
        )
    return Check(stage, "pass", f"{len(pods)} Pods: {OPERATOR_URL_SCHEME} (the node's daemon)")
