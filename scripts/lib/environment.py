"""What one environment's clusters and stacks are called, and whether it is production."""

from __future__ import annotations

from infra.config import AppConfig
from infra.environment.layout import STACK_SUFFIXES, deletion_waves, stack_name


def cluster_names(cfg: AppConfig) -> tuple[str, str]:
    """(EKS cluster name, HyperPod cluster name) for owned or existing clusters."""
    if cfg.existing_cluster is not None:
        return cfg.existing_cluster.eks_cluster_name, cfg.existing_cluster.hyperpod_cluster_name
    return cfg.eks.cluster_name, cfg.hyperpod.cluster_name


# The stack of infra/environment/layout.py that holds the VPC, its subnets and security groups.
NETWORK_SUFFIX = "network"


def is_prod(cfg: AppConfig) -> bool:
    """Production by name, or by the protections only production turns on."""
    return (
        cfg.environment.lower().startswith("prod")
        or cfg.termination_protection
        or cfg.retain_stateful_resources
    )


def stack_waves(cfg: AppConfig) -> list[list[str]]:
    """Stack names in deletion waves: each wave's stacks can be deleted in parallel once the
    waves before it are gone (stacks a mode lacks are simply not found)."""
    return [[stack_name(cfg, s) for s in wave] for wave in deletion_waves(STACK_SUFFIXES)]


def network_stack(cfg: AppConfig) -> str:
    """The stack whose subnets and security groups Lambda's network interfaces hold."""
    return stack_name(cfg, NETWORK_SUFFIX)


def stack_names(cfg: AppConfig) -> list[str]:
    """Stacks in teardown order (the waves, flattened)."""
    return [name for wave in stack_waves(cfg) for name in wave]
