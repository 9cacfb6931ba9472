"""Builds the cdk8s charts of one environment. Both outputs use this: ``k8s.render`` writes them
as YAML, ``infra.constructs.kubernetes_layer`` deploys them through the cluster's kubectl
provider."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import cdk8s
from constructs import Construct

from infra.config import AppConfig
from infra.environment.amp_workspace import AmpWorkspace
from infra.environment.fsx import FsxVolume
from k8s.csi import CsiChart
from k8s.curvine import CurvineChart
from k8s.endpoints import EndpointsChart
from k8s.foundation import NamespacesChart, StorageChart
from k8s.l2_volume import L2VolumeChart, l2_claim
from k8s.network_policy import NetworkPolicyChart
from k8s.policy import PolicyChart

# The charts in apply order, by the name of their YAML file and of their manifest in the kvcache
# stack. A chart's construct id is its name without the number.
NAMESPACES = "00-namespaces"
STORAGE = "10-storage"
CURVINE = "20-curvine"
CURVINE_NETWORK_POLICY = "25-curvine-network-policy"
CURVINE_CSI = "30-curvine-csi"
L2_VOLUME = "40-l2-volume"
L2_POLICY = "50-l2-policy"
ENDPOINTS = "60-endpoints"


@dataclass(frozen=True)
class Charts:
    """The environment's charts in apply order, each under its name (``NAMESPACES``, ...)."""

    by_name: dict[str, cdk8s.Chart]

    @property
    def ordered(self) -> list[tuple[str, cdk8s.Chart]]:
        return list(self.by_name.items())

    def __getitem__(self, name: str) -> cdk8s.Chart:
        return self.by_name[name]


def build_charts(
    config: AppConfig, *, fsx: FsxVolume | None = None, workspace: AmpWorkspace | None = None
) -> Charts:
    """``fsx``: the file system of ``l2_backend: fsx_lustre``, required with it (the kvcache
    stack passes its attributes as CDK tokens; ``k8s.render`` the deployed values).
    ``workspace``: the observability AMP workspace, required when an endpoint autoscales (the
    same two sources). Nothing is written here: the App is only the charts' scope."""
    kv = config.kvcache
    curvine = "curvine" in kv.l2_backends
    # The L2 claim and policy exist with either mounted store; Curvine's own charts only with it.
    mounted = kv.mounted_l2_backend is not None
    Build = Callable[[Construct, str], cdk8s.Chart]
    table: list[tuple[str, bool, Build]] = [
        (NAMESPACES, True, lambda s, i: NamespacesChart(s, i, config=config)),
        (STORAGE, True, lambda s, i: StorageChart(s, i, config=config)),
        (CURVINE, curvine, lambda s, i: CurvineChart(s, i, config=config)),
        (CURVINE_NETWORK_POLICY, curvine, lambda s, i: NetworkPolicyChart(s, i, config=config)),
        (CURVINE_CSI, curvine, lambda s, i: CsiChart(s, i, config=config)),
        (L2_VOLUME, mounted, lambda s, i: L2VolumeChart(s, i, config=config, fsx=fsx)),
        (
            L2_POLICY,
            mounted,
            lambda s, i: PolicyChart(s, i, config=config, claim=l2_claim(config, fsx)),
        ),
        (ENDPOINTS, True, lambda s, i: EndpointsChart(s, i, config=config, workspace=workspace)),
    ]
    app = cdk8s.App()
    return Charts(
        {name: build(app, name.split("-", 1)[1]) for name, wanted, build in table if wanted}
    )


def manifests(charts: Charts) -> dict[str, list[dict[str, Any]]]:
    """name -> the chart's objects as plain JSON (what kubectl and the kubectl provider get)."""
    return {name: [dict(o) for o in chart.to_json()] for name, chart in charts.ordered}
