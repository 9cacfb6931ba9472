"""Stage-by-stage verification of a live environment, ending in the cross-Pod L2 test."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError
from kubernetes.client.exceptions import ApiException

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from k8s.names import CSI_DRIVER, POLICY
from scripts.clients import Clients
from scripts.common import Check, OperationError
from scripts.endpoints import L2Settings, l2_claim, l2_settings
from scripts.kube import (
    Show,
    Transport,
    container_port,
    find_endpoint_deployment,
    model_container_index,
    pod_ready,
    pods_of,
    read_endpoint,
    selector_string,
    wait_for,
)
from scripts.lmcache_logs import L2Verdict, l2_verdict, parse_log
from scripts.openai_stream import StreamResult, list_models, stream_completion
from scripts.prompts import make_prompt

# Add-ons the product installs (DESIGN.md); each must be ACTIVE.
EXPECTED_ADDONS = (
    "cert-manager",
    "aws-mountpoint-s3-csi-driver",
    "aws-fsx-csi-driver",
    "metrics-server",
    "aws-ebs-csi-driver",
    "amazon-sagemaker-hyperpod-inference",
)
AI_TOOLKIT_NAMESPACE = "aws-hyperpod"


def cluster_names(cfg: AppConfig) -> tuple[str, str]:
    """(EKS cluster name, HyperPod cluster name) for owned or existing clusters."""
    if cfg.existing_cluster is not None:
        return cfg.existing_cluster.eks_cluster_name, cfg.existing_cluster.hyperpod_cluster_name
    return cfg.eks.cluster_name, cfg.hyperpod.cluster_name


def _guard(stage: str, fn: Callable[[], Check]) -> Check:
    try:
        return fn()
    except ApiException as exc:
        return Check(
            stage,
            "fail",
            f"Kubernetes API: {exc.status} {exc.reason}",
            "check kubectl access (aws eks update-kubeconfig)",
        )
    except (ClientError, BotoCoreError) as exc:
        return Check(stage, "fail", f"AWS: {exc}", "check credentials and region")


def _tiered_storage(clients: Clients, cfg: AppConfig) -> tuple[bool, str, str]:
    """(matches the config, what it reads, ClusterStatus) from DescribeCluster."""
    _, hp_name = cluster_names(cfg)
    desc = clients.aws("sagemaker").describe_cluster(ClusterName=hp_name)
    got = desc.get("TieredStorageConfig") or {}
    want = cfg.tiered_storage
    mode, pct = got.get("Mode"), got.get("InstanceMemoryAllocationPercentage")
    ok = mode == want.mode and (
        want.mode != "Enable" or pct == want.instance_memory_allocation_percentage
    )
    detail = (
        f"Mode={mode} {pct}% (config: {want.mode} {want.instance_memory_allocation_percentage}%)"
    )
    return ok, detail, str(desc.get("ClusterStatus", "?"))


def check_tiered_storage(clients: Clients, cfg: AppConfig) -> Check:
    ok, detail, _ = _tiered_storage(clients, cfg)
    return Check(
        "tiered storage",
        "pass" if ok else "fail",
        detail,
        "" if ok else "redeploy the hyperpod stack (make deploy) to re-apply it",
    )


def gpu_nodes(clients: Clients, cfg: AppConfig) -> list[dict[str, Any]]:
    core = clients.core()
    group = cfg.hyperpod.gpu_group
    if group.labels:
        nodes = clients.to_dict(core.list_node(label_selector=selector_string(group.labels)))
        if nodes.get("items"):
            return list(nodes["items"])
    nodes = clients.to_dict(
        core.list_node(label_selector=f"node.kubernetes.io/instance-type={group.instance_type}")
    )
    return list(nodes.get("items") or [])


def check_ai_toolkit(clients: Clients, cfg: AppConfig) -> Check:
    stage = "ai-toolkit DaemonSet"
    dsets = clients.to_dict(clients.apps().list_namespaced_daemon_set(AI_TOOLKIT_NAMESPACE))
    found = [d for d in dsets.get("items") or [] if "ai-toolkit" in d["metadata"]["name"]]
    if not found:
        return Check(
            stage,
            "fail",
            f"no ai-toolkit DaemonSet in {AI_TOOLKIT_NAMESPACE}",
            "Tiered Storage is not on: run verify's first stage fix",
        )
    status = found[0].get("status") or {}
    ready = int(status.get("numberReady") or 0)
    nodes = len(gpu_nodes(clients, cfg))
    ok = nodes > 0 and ready >= nodes
    return Check(
        stage,
        "pass" if ok else "fail",
        f"{ready} ready on {nodes} GPU nodes",
        ""
        if ok
        else f"kubectl -n {AI_TOOLKIT_NAMESPACE} describe ds {found[0]['metadata']['name']}",
    )


def check_addons(clients: Clients, cfg: AppConfig) -> Check:
    eks_name, _ = cluster_names(cfg)
    eks = clients.aws("eks")
    names = eks.list_addons(clusterName=eks_name).get("addons", [])
    states = {
        n: eks.describe_addon(clusterName=eks_name, addonName=n)["addon"]["status"] for n in names
    }
    bad = {n: s for n, s in states.items() if s != "ACTIVE"}
    missing = [n for n in EXPECTED_ADDONS if n not in states]
    if bad:
        detail = ", ".join(f"{n}={s}" for n, s in sorted(bad.items()))
        return Check(
            "add-ons ACTIVE",
            "fail",
            detail,
            f"aws eks describe-addon --cluster-name {eks_name} --addon-name <name>",
        )
    if missing:
        return Check(
            "add-ons ACTIVE",
            "warn",
            f"{len(states)} ACTIVE; not installed as EKS add-ons: {', '.join(missing)}",
            "fine if installed by Helm; otherwise deploy the addons stack",
        )
    return Check("add-ons ACTIVE", "pass", f"{len(states)} add-ons ACTIVE")


def check_csi_driver(clients: Clients) -> Check:
    stage = f"CSIDriver {CSI_DRIVER}"
    try:
        clients.storage().read_csi_driver(CSI_DRIVER)
    except ApiException as exc:
        if exc.status == 404:
            return Check(stage, "fail", "not registered", "deploy the kvcache stack")
        raise
    return Check(stage, "pass", "registered")


PROBES = ("startupProbe", "readinessProbe", "livenessProbe")


def _probed(pod: dict[str, Any]) -> bool:
    return any(k in c for c in pod["spec"].get("containers") or [] for k in PROBES)


def _restarts(pod: dict[str, Any]) -> list[str]:
    out = []
    for s in (pod.get("status") or {}).get("containerStatuses") or []:
        if int(s.get("restartCount") or 0) > 0:
            last = ((s.get("lastState") or {}).get("terminated") or {}).get("reason") or "?"
            out.append(f"{s['name']} restarted {s['restartCount']}x (last: {last})")
    return out


def check_curvine_probes(clients: Clients, cfg: AppConfig) -> Check:
    """Every probed Curvine Pod (masters, workers) is Ready: its kubelet probes pass under the
    namespace's NetworkPolicies. A Pod that is not names itself, its restarts and the kubelet's
    probe messages (Events with reason Unhealthy)."""
    stage = "Curvine probes"
    cv = cfg.kvcache.curvine
    if not cv.enabled:
        return Check(stage, "skip", "kvcache.curvine.enabled is false: no Curvine Pods")
    core = clients.core()
    pods = [p for p in clients.to_dict(core.list_namespaced_pod(cv.namespace)).get("items") or []
            if _probed(p)]  # fmt: skip
    if not pods:
        return Check(stage, "fail", f"no probed Pods in {cv.namespace}", "deploy the kvcache stack")
    down = [p["metadata"]["name"] for p in pods if not pod_ready(p)]
    if not down:
        restarted = [f"{p['metadata']['name']}: {r}" for p in pods for r in _restarts(p)]
        note = f"; {'; '.join(restarted)}" if restarted else ""
        return Check(stage, "pass", f"{len(pods)} Pods Ready{note}")
    events = clients.to_dict(core.list_namespaced_event(cv.namespace)).get("items") or []
    probe_messages = {
        (e.get("involvedObject") or {}).get("name"): e.get("message", "")
        for e in events
        if e.get("reason") == "Unhealthy"
    }
    by_name = {p["metadata"]["name"]: p for p in pods}
    found = "; ".join(
        ", ".join([f"{n}: not Ready", *_restarts(by_name[n]),
                   *([probe_messages[n]] if n in probe_messages else [])])
        for n in down
    )  # fmt: skip
    return Check(
        stage, "fail", f"{found} ({len(pods) - len(down)}/{len(pods)} Ready)",
        f"kubectl -n {cv.namespace} describe pod {' '.join(down)} (its Events hold the "
        f"kubelet's probe messages), then kubectl -n {cv.namespace} logs {down[0]}",
    )  # fmt: skip


def check_pvc(clients: Clients, ref: EndpointConfig, claim: str) -> Check:
    """``claim``: the L2 claim of the deployed environment (``scripts.endpoints.l2_claim``)."""
    stage = f"PVC {ref.namespace}/{claim}"
    try:
        pvc = clients.core().read_namespaced_persistent_volume_claim(claim, ref.namespace)
    except ApiException as exc:
        if exc.status == 404:
            return Check(stage, "fail", "not found", "deploy the kvcache stack")
        raise
    phase = pvc.status.phase if pvc.status else None
    return Check(
        stage,
        "pass" if phase == "Bound" else "fail",
        f"phase {phase}",
        "" if phase == "Bound" else f"kubectl -n {ref.namespace} describe pvc {claim}",
    )


def _claim_check(clients: Clients, cfg: AppConfig, ref: EndpointConfig) -> tuple[str | None, Check]:
    """The L2 claim and its row; with FSx an unknown file system fails the row (claim None)."""
    try:
        claim = l2_claim(clients, cfg)
    except OperationError as exc:
        return None, Check(f"PVC {ref.namespace}", "fail", str(exc), "deploy the kvcache stack")
    return claim, _guard(f"PVC {ref.namespace}/{claim}", lambda: check_pvc(clients, ref, claim))


def check_endpoint(clients: Clients, ref: EndpointConfig) -> Check:
    stage = f"endpoint {ref.namespace}/{ref.name}"
    iec = read_endpoint(clients, ref)
    if iec is None:
        return Check(
            stage,
            "fail",
            "InferenceEndpointConfig not found",
            "deploy the kvcache stack or pass --endpoint",
        )
    state = (iec.get("status") or {}).get("state")
    ok = state == "DeploymentComplete"
    return Check(
        stage,
        "pass" if ok else "fail",
        f"state {state}",
        "" if ok else f"kubectl -n {ref.namespace} describe inferenceendpointconfig {ref.name}",
    )


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
        "them, or run `python -m scripts patch`",
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
            "check the Kyverno policy (kubectl get clusterpolicy) or run `python -m scripts patch`",
        )
    env = ", ".join(f"{k}={v}" for k, v in want.env_values().items() if k != want.marker)
    mounts = ", ".join(f"{m['mountPath']} (subPath {m.get('subPath', '-')})" for m in want.mounts)
    return Check(stage, "pass", f"{len(pods)} Pods: {env}; mount {mounts}")


@dataclass
class CrossPodResult:
    pod_a: str
    node_a: str
    pod_b: str
    node_b: str
    first: dict[str, Any]
    second: dict[str, Any]
    verdict: L2Verdict

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": asdict(self.verdict)}


def pick_pods_on_two_nodes(
    pods: list[dict[str, Any]],
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    ready = [p for p in pods if pod_ready(p)]
    for a in ready:
        for b in ready:
            if a["spec"].get("nodeName") != b["spec"].get("nodeName"):
                return a, b
    return None


def _result_dict(r: StreamResult) -> dict[str, Any]:
    return {"ttft_ms": round(r.ttft_ms, 2), "prompt_tokens": r.prompt_tokens, "text": r.text}


def cross_pod_l2(
    clients: Clients,
    pods: list[dict[str, Any]],
    transport: Transport,
    *,
    prompt_words: int = 1900,
    max_tokens: int = 4,
    seed: int | None = None,
    min_hit_ratio: float = 0.5,
    port: int | None = None,
    log_wait_s: float = 3.0,
) -> CrossPodResult | Check:
    pair = pick_pods_on_two_nodes(pods)
    if pair is None:
        return Check(
            "cross-Pod L2",
            "fail",
            "need two Ready Pods on different nodes",
            "scale the endpoint to 2 replicas with anti-affinity across GPU nodes",
        )
    pod_a, pod_b = pair
    idx = model_container_index(pod_a["spec"]) or 0
    container = pod_a["spec"]["containers"][idx]
    the_port = port or container_port(container)
    # A fresh prefix per run, unless --seed pins it: a prompt already in L2 would hit on Pod A.
    prompt = make_prompt(seed if seed is not None else time.time_ns() % (2**31), prompt_words)
    started = time.time()
    with transport.open(pod_a, the_port) as url_a:
        model = list_models(url_a)[0]
        first = stream_completion(url_a, model, prompt, max_tokens=max_tokens)
    with transport.open(pod_b, the_port) as url_b:
        second = stream_completion(url_b, model, prompt, max_tokens=max_tokens)
    time.sleep(log_wait_s)  # LMCache logs the store after the response
    since = max(1, math.ceil(time.time() - started) + 5)
    logs = []
    for pod in (pod_a, pod_b):
        # _preload_content=False: kubernetes 36 turns a text/plain body into "b'...'" otherwise.
        resp = clients.core().read_namespaced_pod_log(
            pod["metadata"]["name"],
            pod["metadata"]["namespace"],
            container=container["name"],
            since_seconds=since,
            _preload_content=False,
        )
        logs.append(parse_log(resp.data.decode("utf-8", "replace")))
    verdict = l2_verdict(
        logs[0], logs[1], second.prompt_tokens or first.prompt_tokens, min_hit_ratio
    )
    return CrossPodResult(
        pod_a["metadata"]["name"],
        pod_a["spec"].get("nodeName", ""),
        pod_b["metadata"]["name"],
        pod_b["spec"].get("nodeName", ""),
        _result_dict(first),
        _result_dict(second),
        verdict,
    )


# Below this L2 hit rate while requests flow, the cross-Pod reuse is not happening (the alert of
# the same name: a missing PYTHONHASHSEED, a mutation that did not apply, an unmounted claim).
L2_NEAR_ZERO = 0.01


def check_metrics(
    cfg: AppConfig, ref: EndpointConfig, connect: Callable[[], Any], window: str = "1h"
) -> Check:
    """The endpoint's tier hit rates from the metrics store, when it has samples. ``connect``
    gives a ``scripts.report.PromClient`` (None without credentials). The metrics are extra
    evidence: when there are none, or the store cannot be reached, the row is skipped with the
    reason and the cross-Pod test below, which reads LMCache's logs, decides."""
    from datetime import UTC, datetime

    from scripts.report import summary

    stage = "metrics: tier hit rates"
    if not cfg.observability.enabled:
        return Check(stage, "skip", "observability.enabled is false: logs are used")
    try:
        prom = connect()
        if prom is None:
            return Check(stage, "skip", "no credentials to query the metrics store: logs are used")
        found = summary(cfg, prom, window, datetime.now(UTC))["endpoints"]
    except (OSError, RuntimeError, LookupError, ClientError, BotoCoreError) as exc:
        return Check(stage, "skip", f"metrics store not reachable ({exc}): logs are used")
    rates = found.get(f"{ref.namespace}/{ref.name}") or {}
    l2, rps = rates.get("l2_hit_rate"), rates.get("requests_per_second")
    if l2 is None:
        return Check(stage, "skip", f"no L2 samples in the last {window}: logs are used")

    def pct(key: str) -> str:
        value = rates.get(key)
        return "-" if value is None else f"{value:.0%}"

    ttft = rates.get("ttft_p95_seconds")
    detail = (
        f"last {window}: L0 {pct('l0_hit_rate')}, L1 {pct('l1_hit_rate')}, L2 {pct('l2_hit_rate')}"
        f"; TTFT p95 {'-' if ttft is None else f'{ttft * 1000:.0f} ms'}"
    )
    if (rps or 0) > 0 and l2 < L2_NEAR_ZERO:
        return Check(
            stage, "fail", f"{detail}: L2 hit rate near zero while requests flow",
            "compare PYTHONHASHSEED and the L2 mount on the Pods (rows above)",
        )  # fmt: skip
    return Check(stage, "pass", detail)


def metrics_client(cfg: AppConfig, clients: Clients) -> Any:
    """A signed client of the environment's metrics store, or None without credentials."""
    from botocore.credentials import Credentials

    from scripts.report import PromClient, query_endpoint

    found = boto3.Session(region_name=cfg.region).get_credentials()
    if found is None:
        return None
    frozen = found.get_frozen_credentials()
    base = query_endpoint(cfg, clients.aws("amp"))
    return PromClient(base, cfg.region, Credentials(frozen.access_key, frozen.secret_key,
                                                    frozen.token))  # fmt: skip


def run_verify(
    clients: Clients,
    cfg: AppConfig,
    ref: EndpointConfig,
    transport: Transport | None,
    **l2_options: Any,
) -> tuple[list[Check], CrossPodResult | None]:
    claim, claim_check = _claim_check(clients, cfg, ref)
    checks = [
        _guard("tiered storage", lambda: check_tiered_storage(clients, cfg)),
        _guard("ai-toolkit DaemonSet", lambda: check_ai_toolkit(clients, cfg)),
        _guard("add-ons ACTIVE", lambda: check_addons(clients, cfg)),
        _guard(f"CSIDriver {CSI_DRIVER}", lambda: check_csi_driver(clients)),
        _guard("Curvine probes", lambda: check_curvine_probes(clients, cfg)),
        claim_check,
        _guard(f"endpoint {ref.namespace}/{ref.name}", lambda: check_endpoint(clients, ref)),
        check_metrics(cfg, ref, lambda: metrics_client(cfg, clients)),
    ]
    pods: list[dict[str, Any]] = []
    if not ref.enable_l2_cache or claim is None:
        reason = (
            f"kvcache.endpoints {ref.name}: enable_l2_cache is false (no policy rule)"
            if not ref.enable_l2_cache
            else "the L2 claim is unknown (see the PVC row)"
        )
        checks.append(Check("LMCACHE_REMOTE_URL is Curvine", "skip", reason))
        checks.append(Check("Pods carry L2 settings", "skip", reason))
        checks.append(Check("cross-Pod L2", "skip", reason))
        return checks, None

    want = l2_settings(cfg, ref, claim)

    def url_check() -> Check:
        nonlocal pods
        dep = find_endpoint_deployment(clients, ref)
        pods = pods_of(clients, dep) if dep else []
        return check_remote_url(pods, want)

    checks.append(_guard(f"{want.marker} is Curvine", url_check))
    checks.append(_guard("Pods carry L2 settings", lambda: check_pods(pods, want)))
    if transport is None:
        checks.append(Check("cross-Pod L2", "skip", "--skip-l2-test given"))
        return checks, None
    if "fail" in (checks[-1].status, checks[-2].status):
        checks.append(Check("cross-Pod L2", "skip", "Pods are not set up for L2 (see above)"))
        return checks, None
    outcome: CrossPodResult | Check
    try:
        outcome = cross_pod_l2(clients, pods, transport, **l2_options)
    except (ApiException, OSError, RuntimeError) as exc:
        outcome = Check(
            "cross-Pod L2", "fail", f"{type(exc).__name__}: {exc}", "check the endpoint Pods' logs"
        )
    if isinstance(outcome, Check):
        checks.append(outcome)
        return checks, None
    v = outcome.verdict
    latency = f", L2 read {v.l2_read_ms:.2f} ms" if v.l2_read_ms is not None else ""
    detail = (
        f"{outcome.pod_a}@{outcome.node_a} -> {outcome.pod_b}@{outcome.node_b}: "
        f"hit ratio {v.hit_ratio:.2f}{latency}; TTFT {outcome.first['ttft_ms']} -> "
        f"{outcome.second['ttft_ms']} ms; {v.reason}"
    )
    checks.append(
        Check(
            "cross-Pod L2",
            "pass" if v.ok else "fail",
            detail,
            "" if v.ok else "compare PYTHONHASHSEED and the mount on both Pods",
        )
    )
    return checks, outcome


# ---- waits (progress through scripts.kube.wait_for) ---------------------------------------------


def tiered_storage_state(clients: Clients, cfg: AppConfig) -> tuple[bool, str]:
    """Done when the cluster is InService and its TieredStorageConfig reads back as configured
    (the update goes through UpdateCluster, which takes the cluster through Updating)."""
    ok, detail, status = _tiered_storage(clients, cfg)
    return ok and status == "InService", f"{status}; {detail}"


def nodes_ready_state(clients: Clients, cfg: AppConfig) -> tuple[bool, str]:
    want = cfg.hyperpod.gpu_group.instance_count
    ready = sum(1 for node in gpu_nodes(clients, cfg) if pod_ready(node))  # same condition shape
    return ready >= want, f"{ready}/{want} GPU nodes Ready"


def rollout_state(clients: Clients, ref: EndpointConfig) -> tuple[bool, str]:
    dep = find_endpoint_deployment(clients, ref)
    if dep is None:
        return False, "no Deployment yet"
    want = int(dep["spec"].get("replicas") or 0)
    status = dep.get("status") or {}
    updated, ready = int(status.get("updatedReplicas") or 0), int(status.get("readyReplicas") or 0)
    done = want > 0 and updated >= want and ready >= want
    return done, f"{updated}/{want} updated, {ready}/{want} Ready"


def wait_until_ready(
    clients: Clients,
    cfg: AppConfig,
    ref: EndpointConfig | None,
    timeout_s: float,
    interval_s: float = 15.0,
    show: Show = True,
) -> dict[str, float]:
    """Wait for Tiered Storage, the GPU nodes and (with ``ref``) the endpoint's rollout, each
    within ``timeout_s``; returns the seconds each took."""
    _, hp_name = cluster_names(cfg)
    waited = {
        "tiered_storage": wait_for(
            f"Tiered Storage on {hp_name} (InService, config read back)",
            lambda: tiered_storage_state(clients, cfg),
            timeout_s,
            interval_s,
            show,
        ),
        "gpu_nodes": wait_for(
            "GPU nodes Ready", lambda: nodes_ready_state(clients, cfg), timeout_s, interval_s, show
        ),
    }
    if ref is not None:
        waited["rollout"] = wait_for(
            f"rollout of {ref.namespace}/{ref.name}",
            lambda: rollout_state(clients, ref),
            timeout_s,
            interval_s,
            show,
        )
    return waited
