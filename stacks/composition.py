"""Compose the stacks of one environment in deployment order."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import Environment, IStackSynthesizer, Stack
from constructs import Construct

from infra.config import AppConfig
from infra.tagging import tag_everything
from stacks.addons_stack import AddonsStack
from stacks.eks_stack import EksStack
from stacks.hyperpod_stack import HyperPodStack
from stacks.kvcache_stack import KvCacheStack
from stacks.network_stack import NetworkStack
from stacks.observability_stack import ObservabilityStack

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
    observability: ObservabilityStack | None = None

    @property
    def stacks(self) -> list[Stack]:
        ordered = (self.network, self.eks, self.hyperpod, self.addons, self.kvcache,
                   self.observability)  # fmt: skip
        return [s for s in ordered if s is not None]


def compose(
    app: Construct,
    config: AppConfig,
    *,
    chart_dir: Path | None = None,
    synthesizer: IStackSynthesizer | None = None,
) -> EnvironmentStacks:
    """The environment's stacks under ``app`` (an App, or a pipeline Stage)."""
    env = Environment(account=config.account, region=config.region)
    prefix = config.stack_prefix

    def common(suffix: str) -> dict[str, Any]:
        # Explicit stack names: the same whether deployed by the CLI or inside a pipeline Stage
        # (which would otherwise prefix them), so teardown and verify find them either way.
        return {
            "env": env,
            "termination_protection": config.termination_protection,
            "stack_name": f"{prefix}-{suffix}",
            "synthesizer": synthesizer,
        }

    tag_everything(
        app, {**config.tags, "project": config.project, "environment": config.environment}
    )

    network = eks_stack = None
    if config.existing_cluster is None:
        network = NetworkStack(
            app,
            f"{prefix}-network",
            config=config,
            description="HyperPod KV cache: VPC, HyperPod subnet, cluster security group",
            **common("network"),
        )
        eks_stack = EksStack(
            app,
            f"{prefix}-eks",
            config=config,
            network=network.network,
            description="HyperPod KV cache: EKS control plane and core add-ons",
            **common("eks"),
        )
    hyperpod = HyperPodStack(
        app,
        f"{prefix}-hyperpod",
        config=config,
        chart_dir=chart_dir or default_chart_dir(config),
        network=network.network if network else None,
        eks_stack=eks_stack,
        description="HyperPod KV cache: HyperPod cluster and Tiered Storage",
        **common("hyperpod"),
    )
    addons = None
    if config.addons.any_managed:
        # After the HyperPod stack: add-on Pods need nodes, and the operator needs the cluster ARN.
        addons = AddonsStack(
            app,
            f"{prefix}-addons",
            config=config,
            cluster=hyperpod.eks_cluster,
            oidc_provider=hyperpod.oidc_provider,
            hyperpod_cluster_arn=hyperpod.hyperpod_cluster_arn,
            nodes_ready=hyperpod.nodes_ready,
            description="HyperPod KV cache: EKS add-ons, their IAM, the inference operator",
            **common("addons"),
        )
        addons.add_stack_dependency(hyperpod)
    kvcache = KvCacheStack(
        app,
        f"{prefix}-kvcache",
        config=config,
        cluster=hyperpod.eks_cluster,
        nodes_ready=hyperpod.nodes_ready,
        l2_file_system=hyperpod.l2_file_system,
        description="HyperPod KV cache: Curvine, Kyverno and the inference endpoints",
        **common("kvcache"),
    )
    # The endpoint CRD, the CSI drivers and cert-manager come from the add-ons.
    kvcache.add_stack_dependency(addons or hyperpod)
    observability = None
    if config.observability.enabled:
        # Metrics store, collector and alerts; the collector needs the cluster and its network.
        observability = ObservabilityStack(
            app,
            f"{prefix}-observability",
            config=config,
            cluster=hyperpod.eks_cluster,
            network=network.network if network else None,
            description="HyperPod KV cache: AMP workspace, managed collector, alerts",
            **common("observability"),
        )
        observability.add_stack_dependency(hyperpod)
    return EnvironmentStacks(
        network=network,
        eks=eks_stack,
        hyperpod=hyperpod,
        addons=addons,
        kvcache=kvcache,
        observability=observability,
    )
