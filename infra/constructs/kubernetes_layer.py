"""The Kubernetes layer as CDK deploys it: the cdk8s charts of ``k8s.app``, Kyverno (Helm) and,
with ``kvcache.l2_backend: fsx_lustre``, the FSx for Lustre file system the L2 PersistentVolume
names. ``k8s.render`` writes the same charts to dist/<env>/.

Manifests wait only where apply or delete needs it: namespaced objects for their namespaces, the
L2 policy for Kyverno's CRDs and webhook, the L2 volume for what deletes its volumes (so that on
delete the claims go first); the rest is applied side by side. On a cluster this app creates,
every chart is one ``KubernetesManifest`` applied by the cluster's kubectl provider. On an
existing cluster (``existing_cluster``), every chart is one ``Custom::HyperPodOwnedManifest``
(infra/constructs/owned_layer.py). Kyverno is installed only for the L2 policy (an endpoint on
curvine or fsx_lustre) and when ``kvcache.kyverno.install`` is true, with the values of
``k8s.kyverno``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import cdk8s
from aws_cdk import Duration
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct, IConstruct

from infra.cdk.deps import needs
from infra.config import AppConfig
from infra.constructs.fsx_lustre import FsxLustreL2, l2_file_system
from infra.constructs.network import Network
from infra.constructs.owned_layer import absent_checks, hints_for, present_checks
from infra.custom_resources.owned_manifest.construct import OwnedManifests
from infra.environment.amp_workspace import AmpWorkspace
from k8s.app import (
    CURVINE,
    CURVINE_CSI,
    CURVINE_NETWORK_POLICY,
    ENDPOINTS,
    L2_POLICY,
    L2_VOLUME,
    NAMESPACES,
    STORAGE,
    Charts,
    build_charts,
)
from k8s.kyverno import RELEASE as KYVERNO_RELEASE
from k8s.kyverno import kyverno_values
from k8s.policy import KYVERNO_REPOSITORY

# What deletes the L2 claims' volumes: the class, Curvine (the directory behind a volume), its
# network policies (the CSI controller's RPC to the masters) and the CSI driver (the provisioner).
L2_PROVIDERS = (STORAGE, CURVINE, CURVINE_NETWORK_POLICY, CURVINE_CSI)


def chart_manifest(
    scope: Construct,
    name: str,
    objects: list[dict[str, Any]],
    *,
    cluster: eks.ICluster,
    owned: OwnedManifests | None,
    hints: Mapping[str, str],
    preflight: Sequence[Mapping[str, Any]] = (),
    present: Sequence[Mapping[str, Any]] = (),
    absent: Sequence[Mapping[str, Any]] = (),
) -> IConstruct:
    """One chart's objects: a ``KubernetesManifest``, or an owned manifest (``owned``)."""
    if owned is None:
        return eks.KubernetesManifest(
            scope, f"K8s-{name}", cluster=cluster, manifest=objects, overwrite=True
        )
    return owned.add(
        f"K8s-{name}", objects, preflight=preflight, present=present, absent=absent, hints=hints
    )


class KubernetesLayer(Construct):
    """Every chart but those in ``skip`` (another stack's), Kyverno and the L2 file system.

    ``network``: the created network (None on an existing cluster: the file system's placement
    comes from ``kvcache.fsx``). ``owned``: the ownership-aware apply on an existing cluster.
    ``nodes_ready``: what Pods need before they can run.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        cluster: eks.ICluster,
        owned: OwnedManifests | None,
        network: Network | None = None,
        skip: frozenset[str] = frozenset(),
        nodes_ready: list[IConstruct] | None = None,
        workspace: AmpWorkspace | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.l2_file_system: FsxLustreL2 | None = None
        if "fsx_lustre" in config.kvcache.l2_backends:
            self.l2_file_system = l2_file_system(self, config, network)
        fsx = self.l2_file_system.volume if self.l2_file_system else None
        # The charts as deployed: the FSx values are CDK tokens here (never written to dist/).
        # The workspace is another stack's token: only the endpoints chart (its own stack) has it;
        # the first owned apply here takes the endpoints' names, not their specs.
        self.charts: Charts = build_charts(config, fsx=fsx, workspace=workspace)
        self.manifests = self._manifests(config, cluster, owned, skip)
        _claims_go_first(self.manifests)
        self.kyverno: eks.HelmChart | None = None
        if config.kvcache.installs_kyverno:
            self.kyverno = kyverno_release(self, config, cluster)
            self.kyverno.node.add_dependency(self.manifests[NAMESPACES])
            if L2_POLICY in self.manifests:
                self.manifests[L2_POLICY].node.add_dependency(self.kyverno)
        if nodes_ready:
            # Kyverno waits for its Pods and Curvine's Pods need nodes (a stack dependency).
            if self.kyverno is not None:
                needs(self.kyverno, *nodes_ready)
            for m in self.manifests.values():
                needs(m, *nodes_ready)

    def _manifests(
        self,
        config: AppConfig,
        cluster: eks.ICluster,
        owned: OwnedManifests | None,
        skip: frozenset[str],
    ) -> dict[str, IConstruct]:
        ordered = [(n, [dict(o) for o in c.to_json()]) for n, c in self.charts.ordered]
        # The first owned apply checks every object of the layer, the endpoints' too, so a
        # refusal comes before anything is created.
        every = [o for _, objects in ordered for o in objects]
        manifests: dict[str, IConstruct] = {}
        for name, objects in ordered:
            if name in skip or not objects:
                continue  # the endpoints' own stack; or e.g. 10-storage with nothing to apply
            first = not manifests
            m = chart_manifest(
                self,
                name,
                objects,
                cluster=cluster,
                owned=owned,
                hints=hints_for(config),
                preflight=every if first else (),
                present=present_checks(config) if first else (),
                absent=absent_checks(config) if first else (),
            )
            # Only the namespaces come first: a StorageClass or a PVC is accepted before its
            # provisioner runs (the claim binds when it does).
            if manifests:
                m.node.add_dependency(manifests[NAMESPACES])
            manifests[name] = m
        return manifests


def kyverno_release(scope: Construct, config: AppConfig, cluster: eks.ICluster) -> eks.HelmChart:
    """Kyverno's Helm release, its admission webhook serving before the release completes."""
    return eks.HelmChart(
        scope,
        "Kyverno",
        cluster=cluster,
        chart="kyverno",
        repository=KYVERNO_REPOSITORY,
        version=config.kvcache.kyverno.chart_version,
        release=KYVERNO_RELEASE,
        namespace=config.kvcache.kyverno.namespace,
        # Admission controller replicas, budget and placement: k8s/kyverno.py.
        values=kyverno_values(config),
        create_namespace=False,  # created with Pod Security labels by 00-namespaces
        wait=True,  # the admission webhook is serving before the policy is applied
        timeout=Duration.minutes(15),
    )


def _claims_go_first(manifests: dict[str, IConstruct]) -> None:
    """The L2 volume chart waits for what provisions its claims, so that on delete (which
    CloudFormation runs in reverse dependency order, and side by side where there is none) the
    claims and their volumes go while the provisioner and Curvine still run: a volume whose
    provisioner is gone keeps its finalizer, and its directory, for good. On apply it costs the
    seconds those charts take to apply."""
    if L2_VOLUME in manifests:
        for name in L2_PROVIDERS:
            if name in manifests:
                manifests[L2_VOLUME].node.add_dependency(manifests[name])


class EndpointsManifest(Construct):
    """The InferenceEndpointConfigs' chart, after ``after``. On an existing cluster they carry
    our ownership mark like the rest of the layer (whose first apply has already refused what is
    not ours)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        cluster: eks.ICluster,
        chart: cdk8s.Chart,
        owned: OwnedManifests | None,
        after: list[IConstruct],
    ) -> None:
        super().__init__(scope, id)
        objects = [dict(o) for o in chart.to_json()]
        self.manifest = chart_manifest(
            self,
            ENDPOINTS,
            objects,
            cluster=cluster,
            owned=owned,
            hints=hints_for(config),
        )
        needs(self.manifest, *after)
