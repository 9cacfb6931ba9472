"""Endpoints stack: the InferenceEndpointConfigs, last.

They need the inference operator's CRD (add-ons stack), HyperPod Tiered Storage (the L1 and L2
paths the operator configures) and the L2 objects (the RWX PVC and the Kyverno policy that
mounts it, kvcache stack); nothing else waits for them.
"""

from __future__ import annotations

from typing import Any

import cdk8s
from aws_cdk import Stack
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct, IConstruct

from infra.cluster_types import AnyCluster, as_icluster
from infra.config import AppConfig
from infra.deps import needs
from stacks.kvcache_stack import hints_for, owned_manifests

ENDPOINTS_MANIFEST = "60-endpoints"


class EndpointsStack(Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        cluster: AnyCluster,
        chart: cdk8s.Chart,
        after: list[IConstruct],
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id, **kwargs)
        target = as_icluster(cluster)
        objects = [dict(o) for o in chart.to_json()]
        # On an existing cluster the endpoints carry our ownership mark like the rest of the
        # layer (the kvcache stack's first apply has already refused what is not ours).
        owned = owned_manifests(self, config, target)
        self.manifest: IConstruct = (
            eks.KubernetesManifest(
                self, f"K8s-{ENDPOINTS_MANIFEST}", cluster=target, manifest=objects,
                overwrite=True,
            )
            if owned is None
            else owned.add(f"K8s-{ENDPOINTS_MANIFEST}", objects, hints=hints_for(config))
        )  # fmt: skip
        needs(self.manifest, *after)
