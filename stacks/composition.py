"""Compose the stacks of one environment in deployment order."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aws_cdk import App, Environment, Stack, Tags

from infra.config import AppConfig
from stacks.addons_stack import AddonsStack
from stacks.eks_stack import EksStack
from stacks.hyperpod_stack import HyperPodStack
from stacks.kvcache_stack import KvCacheStack
from stacks.network_stack import NetworkStack

REPO_ROOT = Path(__file__).resolve().parents[1]


def default_chart_dir(config: AppConfig) -> Path:
    """Where `make chart` puts the pinned HyperPod dependencies chart."""
    chart = config.hyperpod.dependencies_chart
    return REPO_ROOT / ".charts" / chart.commit / chart.path


@dataclass
class EnvironmentStacks:
    """The stacks of one environment, in deployment order (None: not part of this mode)."""

    network: NetworkStack | None
    eks: EksStack | None
    hyperpod: HyperPodStack
    addons: AddonsStack | None
    kvcache: KvCacheStack

    @property
    def stacks(self) -> list[Stack]:
        ordered = (self.network, self.eks, self.hyperpod, self.addons, self.kvcache)
        return [s for s in ordered if s is not None]


def compose(app: App, config: AppConfig, *, chart_dir: Path | None = None) -> EnvironmentStacks:
    env = Environment(account=config.account, region=config.region)
    prefix = config.stack_prefix
    common = {"env": env, "termination_protection": config.termination_protection}
    Tags.of(app).add("project", config.project)
    Tags.of(app).add("environment", config.environment)
    for key, value in config.tags.items():
        Tags.of(app).add(key, value)

    network = eks_stack = None
    if config.existing_cluster is None:
        network = NetworkStack(
            app, f"{prefix}-network", config=config,
            description="HyperPod KV cache: VPC, HyperPod subnet, cluster security group", **common,
        )  # fmt: skip
        eks_stack = EksStack(
            app, f"{prefix}-eks", config=config, network=network.network,
            description="HyperPod KV cache: EKS control plane and core add-ons", **common,
        )  # fmt: skip
    hyperpod = HyperPodStack(
        app, f"{prefix}-hyperpod", config=config,
        chart_dir=chart_dir or default_chart_dir(config),
        network=network.network if network else None, eks_stack=eks_stack,
        description="HyperPod KV cache: HyperPod cluster and Tiered Storage", **common,
    )  # fmt: skip
    addons = None
    if config.addons.enabled:
        # After the HyperPod stack: add-on Pods need nodes, and the operator needs the cluster ARN.
        addons = AddonsStack(
            app, f"{prefix}-addons", config=config, cluster=hyperpod.eks_cluster,
            oidc_provider=hyperpod.oidc_provider,
            hyperpod_cluster_arn=hyperpod.hyperpod_cluster_arn,
            description="HyperPod KV cache: EKS add-ons, their IAM, the inference operator",
            **common,
        )  # fmt: skip
        addons.add_stack_dependency(hyperpod)
    kvcache = KvCacheStack(
        app, f"{prefix}-kvcache", config=config, cluster=hyperpod.eks_cluster,
        description="HyperPod KV cache: Curvine, Kyverno and the inference endpoints", **common,
    )  # fmt: skip
    # The endpoint CRD, the CSI drivers and cert-manager come from the add-ons.
    kvcache.add_stack_dependency(addons or hyperpod)
    return EnvironmentStacks(
        network=network, eks=eks_stack, hyperpod=hyperpod, addons=addons, kvcache=kvcache
    )
