"""The Kubernetes layer, deployed through the cluster's kubectl provider: Kyverno (Helm), then the
cdk8s charts of ``k8s.app`` in apply order. The same chart objects are written to dist/<env>/."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct, IDependable

from infra.cluster_types import AnyCluster, as_icluster
from infra.config import AppConfig
from infra.constructs.fsx_lustre import FsxLustreL2
from k8s.app import build_charts

KYVERNO_REPOSITORY = "https://kyverno.github.io/kyverno/"


class KvCacheStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        cluster: AnyCluster,
        nodes_ready: IDependable | None = None,
        l2_file_system: FsxLustreL2 | None = None,
        **stack_kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **stack_kwargs)
        charts = build_charts(config, fsx=l2_file_system.volume if l2_file_system else None)
        target = as_icluster(cluster)
        manifests: dict[str, eks.KubernetesManifest] = {}
        previous: eks.KubernetesManifest | None = None
        for name, chart in charts.ordered:
            # Each chart is one manifest, applied after the one before it: namespaces before
            # their objects, StorageClasses before claims, Curvine before the PVC, PVC and policy
            # before the endpoint.
            m = eks.KubernetesManifest(
                self, f"K8s-{name}", cluster=target,
                manifest=[dict(o) for o in chart.to_json()], overwrite=True,
            )  # fmt: skip
            if previous is not None:
                m.node.add_dependency(previous)
            manifests[name] = m
            previous = m
        kyverno = eks.HelmChart(
            self, "Kyverno", cluster=target,
            chart="kyverno", repository=KYVERNO_REPOSITORY,
            version=config.kvcache.kyverno.chart_version,
            release="kyverno", namespace=config.kvcache.kyverno.namespace,
            create_namespace=False,  # created with Pod Security labels by 00-namespaces
            wait=True,  # the admission webhook is serving before the policy is applied
            timeout=Duration.minutes(15),
        )  # fmt: skip
        kyverno.node.add_dependency(manifests["00-namespaces"])
        if "50-l2-policy" in manifests:
            manifests["50-l2-policy"].node.add_dependency(kyverno)
        if nodes_ready is not None:
            # Kyverno waits for its Pods and Curvine's Pods need nodes (a stack dependency).
            kyverno.node.add_dependency(nodes_ready)
            for m in manifests.values():
                m.node.add_dependency(nodes_ready)
        self.manifests = manifests
        self.kyverno = kyverno
