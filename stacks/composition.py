"""Compose the stacks of one environment; their order comes from infra/environment/layout.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import Environment, IStackSynthesizer, Stack
from constructs import Construct

from infra.cdk.tagging import tag_everything
from infra.config import AppConfig
from infra.environment.layout import STACK_SUFFIXES, dependencies, stack_name
from k8s.app import ENDPOINTS, L2_POLICY, L2_VOLUME
from stacks.addons_stack import AddonsStack
from stacks.egress_stack import EgressStack
from stacks.eks_stack import EksStack
from stacks.endpoints_stack import EndpointsStack
from stacks.hyperpod_stack import HyperPodStack
from stacks.kvcache_stack import KvCacheStack
from stacks.network_stack import NetworkStack
from stacks.nodes_stack import NodesStack
from stacks.observability_stack import ObservabilityStack
from stacks.tiered_storage_stack import TieredStorageStack

REPO_ROOT = Path(__file__).resolve().parents[1]


def default_chart_dir(config: AppConfig) -> Path:
    """Where `make chart` puts the pinned HyperPod dependencies chart."""
    chart = config.hyperpod.dependencies_chart
    return REPO_ROOT / ".charts" / chart.commit / chart.path


@dataclass
class EnvironmentStacks:
    """The stacks of one environment (None: not part of this mode)."""

    network: NetworkStack | None
    eks: EksStack | None
    hyperpod: HyperPodStack
    nodes: NodesStack
    tiered_storage: TieredStorageStack
    addons: AddonsStack | None
    kvcache: KvCacheStack
    endpoints: EndpointsStack
    observability: ObservabilityStack | None = None
    egress: EgressStack | None = None

    @property
    def by_suffix(self) -> dict[str, Stack]:
        """Stacks by suffix, in the deploy order of infra/environment/layout.py."""
        named: dict[str, Stack | None] = {
            "network": self.network,
            "eks": self.eks,
            "egress": self.egress,
            "hyperpod": self.hyperpod,
            "nodes": self.nodes,
            "tiered-storage": self.tiered_storage,
            "addons": self.addons,
            "kvcache": self.kvcache,
            "endpoints": self.endpoints,
            "observability": self.observability,
        }
        return {s: named[s] for s in STACK_SUFFIXES if named[s] is not None}  # type: ignore[misc]

    @property
    def stacks(self) -> list[Stack]:
        return list(self.by_suffix.values())


def compose(
    app: Construct,
    config: AppConfig,
    *,
    chart_dir: Path | None = None,
    synthesizer: IStackSynthesizer | None = None,
) -> EnvironmentStacks:
    """The environment's stacks under ``app`` (an App, or a pipeline Stage).

    Stack dependencies are the ones infra/environment/layout.py lists (teardown deletes in the same
    order); resources that wait for a resource of another stack say so with
    ``infra.cdk.deps.needs``.
    """
    env = Environment(account=config.account, region=config.region)

    def common(suffix: str) -> dict[str, Any]:
        # Explicit stack names: the same whether deployed by the CLI or inside a pipeline Stage
        # (which would otherwise prefix them), so teardown and verify find them either way.
        return {
            "env": env,
            "termination_protection": config.termination_protection,
            "stack_name": stack_name(config, suffix),
            "synthesizer": synthesizer,
        }

    tag_everything(
        app, {**config.tags, "project": config.project, "environment": config.environment}
    )

    network = eks_stack = egress = None
    if config.existing_cluster is None:
        network = NetworkStack(
            app,
            stack_name(config, "network"),
            config=config,
            description="HyperPod KV cache: VPC, HyperPod subnet, cluster security group",
            **common("network"),
        )
        eks_stack = EksStack(
            app,
            stack_name(config, "eks"),
            config=config,
            network=network.network,
            description="HyperPod KV cache: EKS control plane and core add-ons",
            **common("eks"),
        )
        if config.network.existing_vpc is None:
            # The VPC's NAT gateways, built while the control plane is (an existing VPC has its
            # own egress).
            egress = EgressStack(
                app,
                stack_name(config, "egress"),
                config=config,
                network=network.network,
                description="HyperPod KV cache: NAT gateways, private subnets' default routes",
                **common("egress"),
            )
    hyperpod = HyperPodStack(
        app,
        stack_name(config, "hyperpod"),
        config=config,
        chart_dir=chart_dir or default_chart_dir(config),
        network=network.network if network else None,
        eks_stack=eks_stack,
        egress=egress.egress if egress else None,
        description="HyperPod KV cache: HyperPod cluster, its prerequisites, the Tiered "
        "Storage and node gate providers",
        **common("hyperpod"),
    )
    hyperpod_cluster = hyperpod.hyperpod.cluster if hyperpod.hyperpod else None
    tiered_storage = TieredStorageStack(
        app,
        stack_name(config, "tiered-storage"),
        config=config,
        provider=hyperpod.tiered_storage_provider,
        hyperpod_cluster_name=hyperpod.hyperpod_cluster_name,
        hyperpod_cluster_arn=hyperpod.hyperpod_cluster_arn,
        hyperpod_cluster=hyperpod_cluster,
        description="HyperPod KV cache: Tiered Storage on the HyperPod cluster (UpdateCluster)",
        **common("tiered-storage"),
    )
    nodes = NodesStack(
        app,
        stack_name(config, "nodes"),
        config=config,
        cluster=hyperpod.eks_cluster,
        hyperpod_cluster_name=hyperpod.hyperpod_cluster_name,
        hyperpod_cluster_arn=hyperpod.hyperpod_cluster_arn,
        provider=hyperpod.node_gate_provider,
        hyperpod_cluster=hyperpod_cluster,
        description="HyperPod KV cache: node readiness gate and CoreDNS",
        **common("nodes"),
    )
    observability = None
    if config.observability.enabled:
        # Metrics store, collector and alerts; the collector needs the cluster and its network.
        # Before the add-ons and endpoints: KEDA's role and autoscaled endpoints name it.
        observability = ObservabilityStack(
            app,
            stack_name(config, "observability"),
            config=config,
            cluster=hyperpod.eks_cluster,
            network=network.network if network else None,
            description="HyperPod KV cache: AMP workspace, managed collector, alerts",
            **common("observability"),
        )
    addons = None
    if config.addons.any_managed:
        # Add-on Pods need nodes and CoreDNS; the operator needs the cluster ARN.
        addons = AddonsStack(
            app,
            stack_name(config, "addons"),
            config=config,
            cluster=hyperpod.eks_cluster,
            oidc_provider=hyperpod.oidc_provider,
            hyperpod_cluster_arn=hyperpod.hyperpod_cluster_arn,
            nodes_ready=nodes.ready,
            metrics_workspace_arn=observability.workspace_arn if observability else None,
            description="HyperPod KV cache: EKS add-ons, their IAM, the inference operator",
            **common("addons"),
        )
    kvcache = KvCacheStack(
        app,
        stack_name(config, "kvcache"),
        config=config,
        cluster=hyperpod.eks_cluster,
        network=network.network if network else None,
        skip=frozenset({ENDPOINTS}),
        nodes_ready=nodes.ready,
        workspace=observability.workspace if observability else None,
        description="HyperPod KV cache: Curvine or the FSx file system, the L2 volume and "
        "Kyverno with its policy",
        **common("kvcache"),
    )
    # The endpoint CRD comes from the operator add-on (or the cluster's owner, when skipped);
    # Tiered Storage and the L2 objects must be in place before the first Pod.
    l2 = [kvcache.manifests[n] for n in (L2_VOLUME, L2_POLICY) if n in kvcache.manifests]
    operator = addons.platform.addons.get("inference_operator") if addons else None
    endpoints = EndpointsStack(
        app,
        stack_name(config, "endpoints"),
        config=config,
        cluster=hyperpod.eks_cluster,
        chart=kvcache.charts[ENDPOINTS],
        after=[
            *([operator.resource] if operator is not None else []),
            tiered_storage.tiered_storage.resource,
            *l2,
        ],
        description="HyperPod KV cache: the inference endpoints",
        **common("endpoints"),
    )
    stacks = EnvironmentStacks(
        network=network,
        eks=eks_stack,
        egress=egress,
        hyperpod=hyperpod,
        nodes=nodes,
        tiered_storage=tiered_storage,
        addons=addons,
        kvcache=kvcache,
        endpoints=endpoints,
        observability=observability,
    )
    by_suffix = stacks.by_suffix
    for suffix, deps in dependencies(by_suffix).items():
        for dep in deps:
            by_suffix[suffix].add_stack_dependency(by_suffix[dep])
    return stacks
