"""The Kubernetes layer but the endpoints (stacks/endpoints_stack.py): Kyverno (Helm), the
cdk8s charts of ``k8s.app`` and, with ``kvcache.l2_backend: fsx_lustre``, the FSx for Lustre file
system the L2 PersistentVolume names. ``k8s.render`` writes the same charts to dist/<env>/.

The file system lives here, beside the manifests that carry its id, DNS name and mount name: a
change that replaces it (its subnet, security group or KMS key) changes those values, and
CloudFormation refuses to change an export another stack imports. In one stack the update
creates the new file system, applies the PersistentVolume and claim named after it (the old ones
are pruned) and only then deletes the old file system.

Manifests wait only where apply or delete needs it: namespaced objects for their namespaces, the
L2 policy for Kyverno's CRDs and webhook, the L2 volume for what deletes its volumes (so that on
delete the claims go first); the rest is applied side by side. On a cluster this app creates,
every chart is one ``KubernetesManifest`` applied by the cluster's kubectl provider. On an
existing cluster (``existing_cluster``), every chart is one ``Custom::HyperPodOwnedManifest``
(infra/custom_resources/owned_manifest/): objects we did not create are never changed or
deleted, and a deploy that would touch one is refused before anything is applied. Kyverno is
installed only when ``kvcache.kyverno.install`` is true, with the values of ``k8s.kyverno``.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration, Fn, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct, IConstruct

from infra.cluster_types import AnyCluster, as_icluster
from infra.config import AppConfig
from infra.constructs.fsx_lustre import FsxLustreL2, l2_file_system
from infra.constructs.network import Network
from infra.custom_resources.owned_manifest.construct import OwnedManifests
from infra.deps import needs
from k8s.app import Charts, build_charts
from k8s.common import EBS_SC
from k8s.kyverno import RELEASE as KYVERNO_RELEASE
from k8s.kyverno import kyverno_values
from k8s.policy import KYVERNO_REPOSITORY

KYVERNO_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "name": "clusterpolicies.kyverno.io",
}
NAMESPACES = "00-namespaces"


class KvCacheStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        cluster: AnyCluster,
        network: Network | None = None,
        skip: frozenset[str] = frozenset(),
        nodes_ready: list[IConstruct] | None = None,
        **stack_kwargs: Any,
    ) -> None:
        """``network``: the created network (None on an existing cluster: the file system's
        placement comes from ``kvcache.fsx``). ``skip``: chart names another stack deploys."""
        super().__init__(scope, id, **stack_kwargs)
        target = as_icluster(cluster)
        self.l2_file_system: FsxLustreL2 | None = None
        if config.kvcache.l2_backend == "fsx_lustre":
            self.l2_file_system = l2_file_system(self, config, network)
        fsx = self.l2_file_system.volume if self.l2_file_system else None
        # The charts as deployed: the FSx values are CDK tokens here (never written to dist/).
        self.charts: Charts = build_charts(config, fsx=fsx)
        owned = owned_manifests(self, config, target)
        ordered = [(n, [dict(o) for o in c.to_json()]) for n, c in self.charts.ordered]
        # The first owned apply checks every object of the layer, the endpoints' too, so a
        # refusal comes before anything is created.
        every = [o for _, objects in ordered for o in objects]
        manifests: dict[str, IConstruct] = {}
        for name, objects in ordered:
            if name in skip or not objects:
                continue  # the endpoints' own stack; or e.g. 10-storage with nothing to apply
            m: IConstruct
            if owned is None:
                m = eks.KubernetesManifest(
                    self, f"K8s-{name}", cluster=target, manifest=objects, overwrite=True
                )
            else:
                first = not manifests
                m = owned.add(
                    f"K8s-{name}",
                    objects,
                    preflight=every if first else (),
                    present=_present(config) if first else (),
                    absent=_absent(config) if first else (),
                    hints=hints_for(config),
                )
            # Only the namespaces come first: a StorageClass or a PVC is accepted before its
            # provisioner runs (the claim binds when it does).
            if manifests:
                m.node.add_dependency(manifests[NAMESPACES])
            manifests[name] = m
        _claims_go_first(manifests)
        self.kyverno: eks.HelmChart | None = None
        if config.kvcache.kyverno.install:
            kyverno = eks.HelmChart(
                self, "Kyverno", cluster=target,
                chart="kyverno", repository=KYVERNO_REPOSITORY,
                version=config.kvcache.kyverno.chart_version,
                release=KYVERNO_RELEASE, namespace=config.kvcache.kyverno.namespace,
                # Admission controller replicas, budget and placement: k8s/kyverno.py.
                values=kyverno_values(config),
                create_namespace=False,  # created with Pod Security labels by 00-namespaces
                wait=True,  # the admission webhook is serving before the policy is applied
                timeout=Duration.minutes(15),
            )  # fmt: skip
            kyverno.node.add_dependency(manifests[NAMESPACES])
            if "50-l2-policy" in manifests:
                manifests["50-l2-policy"].node.add_dependency(kyverno)
            self.kyverno = kyverno
        if nodes_ready:
            # Kyverno waits for its Pods and Curvine's Pods need nodes (a stack dependency).
            if self.kyverno is not None:
                needs(self.kyverno, *nodes_ready)
            for m in manifests.values():
                needs(m, *nodes_ready)
        self.manifests = manifests


# What deletes the L2 claims' volumes: the class, Curvine (the directory behind a volume), its
# network policies (the CSI controller's RPC to the masters) and the CSI driver (the provisioner).
L2_PROVIDERS = ("10-storage", "20-curvine", "25-curvine-network-policy", "30-curvine-csi")
L2_VOLUME = "40-l2-volume"


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


def owned_manifests(
    scope: Construct, config: AppConfig, target: eks.ICluster
) -> OwnedManifests | None:
    """On an existing cluster: the ownership-aware apply (None on a cluster this app creates)."""
    existing = config.existing_cluster
    if existing is None:
        return None
    provider = target.kubectl_provider
    assert provider is not None and provider.role is not None, "imported without kubectl"
    # The kubectl handler's role: it holds the cluster-admin access entry, eks:DescribeCluster
    # and log writes. Imported immutable, so nothing is added to a role of another stack.
    role = iam.Role.from_role_arn(scope, "KubectlRole", provider.role.role_arn, mutable=False)
    vpc = (
        ec2.Vpc.from_vpc_attributes(
            scope, "Vpc", vpc_id=existing.vpc_id, availability_zones=Fn.get_azs()
        )
        if existing.kubectl_subnet_ids and existing.vpc_id
        else None
    )
    return OwnedManifests(
        scope,
        "OwnedManifests",
        cluster_name=existing.eks_cluster_name,
        owner=config.stack_prefix,
        role=role,
        vpc=vpc,
        subnet_ids=existing.kubectl_subnet_ids,
        security_group_id=existing.kubectl_security_group_id,
    )


def _present(config: AppConfig) -> list[dict[str, Any]]:
    """What an existing cluster must already have for the reuse the config asks for."""
    checks: list[dict[str, Any]] = []
    sc = config.kvcache.curvine.master.storage_class
    if sc is not None and config.kvcache.curvine.enabled:
        checks.append({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "name": sc,
            "match": {"provisioner": "ebs.csi.aws.com"},
            "fix": "kvcache.curvine.master.storage_class must name an EBS CSI StorageClass "
            "(`kubectl get storageclass`), or be removed to let the app create ebs-sc",
        })  # fmt: skip
    if not config.kvcache.kyverno.install:
        checks.append({
            **KYVERNO_CRD,
            "fix": "kvcache.kyverno.install is false but Kyverno is not installed: install it "
            "or set kvcache.kyverno.install to true",
        })  # fmt: skip
    return checks


def _absent(config: AppConfig) -> list[dict[str, Any]]:
    if not config.kvcache.kyverno.install:
        return []
    return [{
        **KYVERNO_CRD,
        "fix": "Kyverno is installed already: set kvcache.kyverno.install to false to use it",
    }]  # fmt: skip


def hints_for(config: AppConfig) -> dict[str, str]:
    """Object key -> the config change that avoids taking over an object that is not ours."""
    kv = config.kvcache
    hints = {
        f"Namespace/{kv.curvine.namespace}": "set kvcache.curvine.namespace to a namespace that "
        "does not exist",
        f"Namespace/{kv.kyverno.namespace}": "set kvcache.kyverno.install to false to use the "
        "installed Kyverno, or kvcache.kyverno.namespace to a namespace that does not exist",
        f"StorageClass/{EBS_SC}": f"set kvcache.curvine.master.storage_class to {EBS_SC} to use "
        "the existing class (provisioner ebs.csi.aws.com)",
    }
    for i, e in enumerate(kv.endpoints):
        hints.setdefault(
            f"Namespace/{e.namespace}",
            f"set kvcache.endpoints.{i}.namespace to a namespace that does not exist",
        )
    return hints
