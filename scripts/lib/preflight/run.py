"""``preflight``'s rows in order, for an owned or an existing cluster: the credentials first;
without them the AWS rows are skipped."""

from __future__ import annotations

from collections.abc import Callable

from infra.config import AppConfig
from infra.config.model import sagemaker_endpoint_name
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.gpu_driver import check_gpu_driver
from scripts.lib.preflight.account import (
    ZONES,
    check_endpoint_names,
    check_renamed_endpoints,
    check_zones,
)
from scripts.lib.preflight.existing import (
    SKIPPED_FOR_EXISTING,
    check_addons,
    check_eks_cluster,
    check_instance_groups,
    check_kubectl_role,
    check_oidc,
)
from scripts.lib.preflight.owned import (
    _identity,
    check_live_cluster,
    check_offerings,
    check_quotas,
    instance_demand,
)
from scripts.lib.preflight.placeholders import check_placeholders
from scripts.lib.preflight.routes import check_kubectl_routes
from scripts.lib.preflight.versions import (
    ToolRunner,
    check_addon_versions,
    check_kubernetes_minor,
    check_tools,
    run_tool,
)
from scripts.lib.weights_cache import check_weights_cache


def run_preflight(clients: Clients, cfg: AppConfig, run: ToolRunner = run_tool) -> list[Check]:
    identity, answered = _identity(clients, cfg)
    checks = [identity, *check_placeholders(cfg)]
    if not answered:
        # Without working credentials every AWS check would fail the same way: skip them.
        reason = "skipped: needs working AWS credentials (see the credentials row)"
        stages = [f"quota {t} for cluster usage" for t in sorted(instance_demand(cfg))]
        stages += [
            f"{t} in {cfg.network.hyperpod_subnet.az_id}" for t in sorted(instance_demand(cfg))
        ]
        stages += [ZONES, "kubectl layer minor", "creator admin"]
        stages += [
            f"SageMaker endpoint {sagemaker_endpoint_name(cfg, e)}" for e in cfg.kvcache.endpoints
        ]
        stages.append(f"Kubernetes {cfg.eks.kubernetes_version}")
        checks += [Check(stage, "skip", reason) for stage in stages]
        return checks + check_tools(run, cfg.eks.kubernetes_version)
    if cfg.existing_cluster is not None:
        return run_existing_preflight(clients, cfg, run, identity)
    checks += check_quotas(clients, cfg)
    checks += check_offerings(clients, cfg)
    checks.append(check_zones(clients, cfg))
    checks += check_endpoint_names(clients, cfg)
    checks += check_renamed_endpoints(clients, cfg)
    cluster_checks, cluster_minor, live = check_live_cluster(clients, cfg)
    checks += cluster_checks
    if live:  # its GPU nodes run already: their driver must run the images' CUDA
        checks.append(check_gpu_driver(clients, cfg))
    checks.append(check_kubernetes_minor(clients, cluster_minor))
    checks += check_addon_versions(clients, cfg, cluster_minor)
    checks += check_tools(run, cluster_minor)
    return checks


def run_existing_preflight(
    clients: Clients,
    cfg: AppConfig,
    run: Callable[[list[str]], tuple[int, str] | None],
    identity: Check,
) -> list[Check]:
    """The checks for existing-cluster mode, after the credentials row ``identity`` (called by
    run_preflight once AWS has answered)."""
    existing = cfg.existing_cluster
    assert existing is not None
    checks = [identity, *check_placeholders(cfg)]
    checks += [Check(stage, "skip", reason) for stage, reason in SKIPPED_FOR_EXISTING]
    cluster_checks, cluster = check_eks_cluster(clients, existing, cfg.eks.kubernetes_version)
    checks += cluster_checks
    if cluster is not None:
        checks.append(check_kubernetes_minor(clients, cluster["version"]))
        checks.append(check_oidc(clients, existing, cluster))
        checks += check_kubectl_role(clients, existing)
        checks += check_addons(clients, cfg, cluster["version"])
        # The owner's operator may cache weights on the disk Curvine is about to fill.
        checks.append(check_weights_cache(clients, cfg))
        checks.append(check_gpu_driver(clients, cfg))
    checks += check_instance_groups(clients, cfg)
    checks += check_endpoint_names(clients, cfg)
    checks += check_renamed_endpoints(clients, cfg)
    checks += check_kubectl_routes(clients, cfg)
    minor = cluster["version"] if cluster else cfg.eks.kubernetes_version
    checks += check_tools(run, minor)
    return checks
