"""The Kubernetes layer on a cluster the app does not own (``existing_cluster``): every chart is
one ``Custom::HyperPodOwnedManifest`` (infra/custom_resources/owned_manifest/), so objects we did
not create are never changed or deleted, and a deploy that would touch one is refused before
anything is applied. This module builds the ownership-aware apply for one stack and says what
its first apply checks: what the cluster must already have, what it must not, and the config
change that avoids taking over an object that is not ours.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Fn
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.config import AppConfig
from infra.custom_resources.owned_manifest.construct import OwnedManifests
from k8s.common import EBS_SC

KYVERNO_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "name": "clusterpolicies.kyverno.io",
}


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


def present_checks(config: AppConfig) -> list[dict[str, Any]]:
    """What an existing cluster must already have for the reuse the config asks for."""
    checks: list[dict[str, Any]] = []
    sc = config.kvcache.curvine.master.storage_class
    if sc is not None and "curvine" in config.kvcache.l2_backends:
        checks.append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "name": sc,
                "match": {"provisioner": "ebs.csi.aws.com"},
                "fix": "kvcache.curvine.master.storage_class must name an EBS CSI StorageClass "
                "(`kubectl get storageclass`), or be removed to let the app create ebs-sc",
            }
        )
    if config.kvcache.uses_kyverno and not config.kvcache.installs_kyverno:
        checks.append(
            {
                **KYVERNO_CRD,
                "fix": "kvcache.kyverno.install is false but Kyverno is not installed: install it "
                "or set kvcache.kyverno.install to true",
            }
        )
    return checks


def absent_checks(config: AppConfig) -> list[dict[str, Any]]:
    if not config.kvcache.installs_kyverno:
        return []
    return [
        {
            **KYVERNO_CRD,
            "fix": "Kyverno is installed already: set kvcache.kyverno.install to false to use it",
        }
    ]


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
