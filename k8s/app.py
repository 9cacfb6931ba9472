"""Builds the cdk8s charts of one environment. Both outputs use this: ``k8s.render`` writes them
as YAML, ``infra.constructs.kubernetes_layer`` deploys them through the cluster's kubectl
provider."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cdk8s

from infra.config import AppConfig
from infra.fsx_outputs import FsxVolume
from k8s.csi import CsiChart
from k8s.curvine import CurvineChart
from k8s.endpoints import EndpointsChart
from k8s.foundation import NamespacesChart, StorageChart
from k8s.l2_volume import L2VolumeChart, l2_claim
from k8s.network_policy import NetworkPolicyChart
from k8s.policy import PolicyChart


@dataclass(frozen=True)
class Charts:
    """The charts in apply order; ``ordered`` pairs each with its file/manifest name."""

    namespaces: cdk8s.Chart
    storage: cdk8s.Chart
    curvine: cdk8s.Chart | None
    network_policy: cdk8s.Chart | None
    csi: cdk8s.Chart | None
    l2_volume: cdk8s.Chart | None
    policy: cdk8s.Chart | None
    endpoints: cdk8s.Chart

    @property
    def ordered(self) -> list[tuple[str, cdk8s.Chart]]:
        named = [
            ("00-namespaces", self.namespaces),
            ("10-storage", self.storage),
            ("20-curvine", self.curvine),
            ("25-curvine-network-policy", self.network_policy),
            ("30-curvine-csi", self.csi),
            ("40-l2-volume", self.l2_volume),
            ("50-l2-policy", self.policy),
            ("60-endpoints", self.endpoints),
        ]
        return [(name, chart) for name, chart in named if chart is not None]


def build_charts(config: AppConfig, *, fsx: FsxVolume | None = None) -> Charts:
    """``fsx``: the file system of ``l2_backend: fsx_lustre``, required with it (the kvcache
    stack passes its attributes as CDK tokens; ``k8s.render`` the deployed values). Nothing is
    written here: the App is only the charts' scope."""
    app = cdk8s.App()
    on = config.kvcache.curvine.enabled
    # The L2 claim and policy exist with either store; Curvine's own charts only with Curvine.
    l2 = config.kvcache.shared_store is not None
    return Charts(
        # Equivalent mutants: the chart id "namespaces" becomes "XXnamespacesXX"; a chart id reaches
        # no output: every object of these charts sets its own name (no name is generated from the
        # construct path), the YAML files and the kvcache stack's manifests are named by
        # `Charts.ordered`, and the stack adds each chart under that name; "namespaces" (upper
        # case): a chart id reaches no output: every object of these charts sets its own name (no
        # name is generated from the construct path), the YAML files and the kvcache stack's
        # manifests are named by `Charts.ordered`, and the stack adds each chart under that name
        namespaces=NamespacesChart(app, "namespaces", config=config),  # pragma: no mutate
        # Equivalent mutants: "storage": a chart id reaches no output: every object of these charts
        # sets its own name (no name is generated from the construct path), the YAML files and the
        # kvcache stack's manifests are named by `Charts.ordered`, and the stack adds each chart
        # under that name; "storage" (upper case): a chart id reaches no output: every object of
        # these charts sets its own name (no name is generated from the construct path), the YAML
        # files and the kvcache stack's manifests are named by `Charts.ordered`, and the stack adds
        # each chart under that name
        storage=StorageChart(app, "storage", config=config),  # pragma: no mutate
        # Equivalent mutants: "curvine": a chart id reaches no output: every object of these charts
        # sets its own name (no name is generated from the construct path), the YAML files and the
        # kvcache stack's manifests are named by `Charts.ordered`, and the stack adds each chart
        # under that name; "curvine" (upper case): a chart id reaches no output: every object of
        # these charts sets its own name (no name is generated from the construct path), the YAML
        # files and the kvcache stack's manifests are named by `Charts.ordered`, and the stack adds
        # each chart under that name
        curvine=CurvineChart(app, "curvine", config=config) if on else None,  # pragma: no mutate
        # Equivalent mutants: "curvine-network-policy": a chart id reaches no output: every object
        # of these charts sets its own name (no name is generated from the construct path), the YAML
        # files and the kvcache stack's manifests are named by `Charts.ordered`, and the stack adds
        # each chart under that name; "curvine-network-policy" (upper case): a chart id reaches no
        # output: every object of these charts sets its own name (no name is generated from the
        # construct path), the YAML files and the kvcache stack's manifests are named by
        # `Charts.ordered`, and the stack adds each chart under that name
        network_policy=NetworkPolicyChart(
            app,
            "curvine-network-policy",  # pragma: no mutate
            config=config,  # pragma: no mutate
        )  # pragma: no mutate
        if on
        else None,
        # Equivalent mutants: "curvine-csi": a chart id reaches no output: every object of these
        # charts sets its own name (no name is generated from the construct path), the YAML files
        # and the kvcache stack's manifests are named by `Charts.ordered`, and the stack adds each
        # chart under that name; "curvine-csi" (upper case): a chart id reaches no output: every
        # object of these charts sets its own name (no name is generated from the construct path),
        # the YAML files and the kvcache stack's manifests are named by `Charts.ordered`, and the
        # stack adds each chart under that name
        csi=CsiChart(app, "curvine-csi", config=config) if on else None,  # pragma: no mutate
        # Equivalent mutants: "l2-volume": a chart id reaches no output: every object of these
        # charts sets its own name (no name is generated from the construct path), the YAML files
        # and the kvcache stack's manifests are named by `Charts.ordered`, and the stack adds each
        # chart under that name; "l2-volume" (upper case): a chart id reaches no output: every
        # object of these charts sets its own name (no name is generated from the construct path),
        # the YAML files and the kvcache stack's manifests are named by `Charts.ordered`, and the
        # stack adds each chart under that name
        l2_volume=L2VolumeChart(app, "l2-volume", config=config, fsx=fsx)  # pragma: no mutate
        if l2
        else None,  # pragma: no mutate
        # Equivalent mutants: "l2-policy": a chart id reaches no output: every object of these
        # charts sets its own name (no name is generated from the construct path), the YAML files
        # and the kvcache stack's manifests are named by `Charts.ordered`, and the stack adds each
        # chart under that name; "l2-policy" (upper case): a chart id reaches no output: every
        # object of these charts sets its own name (no name is generated from the construct path),
        # the YAML files and the kvcache stack's manifests are named by `Charts.ordered`, and the
        # stack adds each chart under that name
        policy=PolicyChart(
            app,
            "l2-policy",  # pragma: no mutate
            config=config,
            claim=l2_claim(config, fsx),  # pragma: no mutate
        )  # pragma: no mutate
        if l2
        else None,
        # Equivalent mutants: "endpoints": a chart id reaches no output: every object of these
        # charts sets its own name (no name is generated from the construct path), the YAML files
        # and the kvcache stack's manifests are named by `Charts.ordered`, and the stack adds each
        # chart under that name; "endpoints" (upper case): a chart id reaches no output: every
        # object of these charts sets its own name (no name is generated from the construct path),
        # the YAML files and the kvcache stack's manifests are named by `Charts.ordered`, and the
        # stack adds each chart under that name
        endpoints=EndpointsChart(app, "endpoints", config=config),  # pragma: no mutate
    )


def manifests(charts: Charts) -> dict[str, list[dict[str, Any]]]:
    """name -> the chart's objects as plain JSON (what kubectl and the kubectl provider get)."""
    return {name: [dict(o) for o in chart.to_json()] for name, chart in charts.ordered}
