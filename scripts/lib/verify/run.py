"""``verify``'s stages in order, each a row; the L2 rows follow the endpoint's backend: curvine
and fsx_lustre check the claim and what the L2 policy writes, tieredstorage checks that the Pods
keep the operator's ``sagemaker-hyperpod://`` connector, none has no L2 rows. The cross-Pod test
runs for every backend with an L2 (on tieredstorage it settles whether the managed tier serves a
Pod of another node)."""

from __future__ import annotations

from typing import Any

from kubernetes.client.exceptions import ApiException

from infra.config import AppConfig
from infra.config.kvcache import MOUNTED_L2_BACKENDS, EndpointConfig
from k8s.l2_pod import l2_settings
from k8s.names import CSI_DRIVER
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.gpu_driver import STAGE as GPU_DRIVER
from scripts.lib.gpu_driver import check_gpu_driver
from scripts.lib.kube import (
    Transport,
    find_endpoint_deployment,
    pods_of,
)
from scripts.lib.verify.cluster import (
    _claim_check,
    _guard,
    check_addons,
    check_ai_toolkit,
    check_csi_driver,
    check_curvine_probes,
    check_endpoint,
    check_tiered_storage,
)
from scripts.lib.verify.cross_pod import CrossPodResult, cross_pod_l2
from scripts.lib.verify.metrics import check_metrics, metrics_client
from scripts.lib.verify.pods import check_pods, check_remote_url, check_tiered_url
from scripts.lib.verify.scaler import check_scaler
from scripts.lib.weights_cache import check_weights_cache


def run_verify(
    clients: Clients,
    cfg: AppConfig,
    ref: EndpointConfig,
    transport: Transport | None,
    **l2_options: Any,
) -> tuple[list[Check], CrossPodResult | None]:
    claim, claim_check = _store_checks(clients, cfg, ref)
    checks = [
        _guard("tiered storage", lambda: check_tiered_storage(clients, cfg)),
        _guard("ai-toolkit DaemonSet", lambda: check_ai_toolkit(clients, cfg)),
        _guard("add-ons ACTIVE", lambda: check_addons(clients, cfg)),
        _csi_check(clients, ref),
        _guard("Curvine probes", lambda: check_curvine_probes(clients, cfg)),
        check_weights_cache(clients, cfg),
        _guard(GPU_DRIVER, lambda: check_gpu_driver(clients, cfg, ref)),
        claim_check,
        _guard(f"endpoint {ref.namespace}/{ref.name}", lambda: check_endpoint(clients, ref)),
        _guard(f"scaler {ref.namespace}/{ref.name}", lambda: check_scaler(clients, ref)),
        check_metrics(cfg, ref, lambda: metrics_client(cfg, clients)),
    ]
    pods: list[dict[str, Any]] = []

    def load_pods() -> list[dict[str, Any]]:
        nonlocal pods
        dep = find_endpoint_deployment(clients, ref)
        pods = pods_of(clients, dep) if dep else []
        return pods

    if ref.l2_backend == "tieredstorage":
        checks.append(_guard(TIERED_URL_STAGE, lambda: check_tiered_url(load_pods())))
        checks.append(
            Check("Pods carry L2 settings", "skip", "tieredstorage: no policy rule, no mount")
        )
    elif ref.l2_backend not in MOUNTED_L2_BACKENDS or claim is None:
        reason = (
            f"kvcache.endpoints {ref.name}: l2_backend is {ref.l2_backend} (no L2)"
            if ref.l2_backend == "none"
            else "the L2 claim is unknown (see the PVC row)"
        )
        checks.append(Check("LMCACHE_REMOTE_URL is Curvine", "skip", reason))
        checks.append(Check("Pods carry L2 settings", "skip", reason))
        checks.append(Check("cross-Pod L2", "skip", reason))
        return checks, None
    else:
        want = l2_settings(cfg, ref, claim)
        checks.append(
            _guard(f"{want.marker} is Curvine", lambda: check_remote_url(load_pods(), want))
        )
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
            "" if v.ok else _cross_pod_fix(ref),
        )
    )
    return checks, outcome


TIERED_URL_STAGE = "LMCACHE_REMOTE_URL is Tiered Storage"


def _store_checks(
    clients: Clients, cfg: AppConfig, ref: EndpointConfig
) -> tuple[str | None, Check]:
    """The claim row of an endpoint the policy mounts; skipped for any other backend."""
    if ref.l2_backend in MOUNTED_L2_BACKENDS:
        return _claim_check(clients, cfg, ref)
    return None, Check(
        f"PVC {ref.namespace}",
        "skip",
        f"l2_backend is {ref.l2_backend}: the endpoint mounts no claim",
    )


def _csi_check(clients: Clients, ref: EndpointConfig) -> Check:
    """Curvine's CSI driver matters only to an endpoint on Curvine."""
    stage = f"CSIDriver {CSI_DRIVER}"
    if ref.l2_backend != "curvine":
        return Check(stage, "skip", f"l2_backend is {ref.l2_backend}: no Curvine volume")
    return _guard(stage, lambda: check_csi_driver(clients))


def _cross_pod_fix(ref: EndpointConfig) -> str:
    if ref.l2_backend == "tieredstorage":
        # Each Pod talks to its own node's daemon: a miss here says the managed tier did not
        # serve the other node (docs/verification.md).
        return (
            "compare PYTHONHASHSEED on both Pods; a miss across nodes with equal seeds means "
            "Tiered Storage did not share the prefix between nodes"
        )
    return "compare PYTHONHASHSEED and the mount on both Pods"
