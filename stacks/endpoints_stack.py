"""Endpoints stack: the InferenceEndpointConfigs, last.

They need the inference operator's CRD (add-ons stack), HyperPod Tiered Storage and the L2
objects (the RWX PVC and the Kyverno policy that mounts it, kvcache stack); nothing else waits for
them. Tiered Storage: for every endpoint with an L2, including the ``tieredstorage`` placeholder
of a curvine or fsx_lustre endpoint, the operator renders a Pod that mounts the ai-toolkit
daemon's shared memory, which only Tiered Storage creates; so the wait stays whatever the
backends. Only endpoints that are all ``none`` would not need it, and the stack still waits: the
stack order is one table (infra/environment/layout.py) that teardown reads too.
"""

from __future__ import annotations

from typing import Any

import cdk8s
from aws_cdk import Annotations, Stack
from constructs import Construct, IConstruct

from infra.cdk.cluster_types import AnyCluster, as_icluster
from infra.config import AppConfig
from infra.config.kvcache import PLACEHOLDER_MODEL_BUCKET
from infra.config.model import placeholder_buckets
from infra.constructs.kubernetes_layer import EndpointsManifest
from infra.constructs.owned_layer import owned_manifests


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
        # Id "Default" keeps the manifest's logical ID; the owned-manifest Provider stays at
        # the top, where its function's description names its construct path.
        self.endpoints = EndpointsManifest(
            self,
            "Default",
            config=config,
            cluster=target,
            chart=chart,
            owned=owned_manifests(self, config, target),
            after=after,
        )
        self.manifest: IConstruct = self.endpoints.manifest
        for field, name in placeholder_buckets(config):
            # A warning, not an error: the shipped configs hold the placeholder and synthesize.
            Annotations.of(self).add_warning_v2(
                f"hpkv:placeholder-model-bucket:{name}",
                f"{field} of endpoint {name} is the placeholder {PLACEHOLDER_MODEL_BUCKET}: its "
                "Pods would never load weights; write the bucket that holds them before "
                "deploying (hpkv preflight refuses it)",
            )
