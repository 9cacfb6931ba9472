"""All platform add-ons of one cluster, built from one table, their requirements turned into
dependencies."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.cdk.cluster_types import AnyCluster
from infra.config import AppConfig
from infra.config.addons import INFERENCE_REQUIRES
from infra.config.model import model_bucket_names
from infra.constructs.addons.base import EksAddon
from infra.constructs.addons.cluster_addons import CertManagerAddon, MetricsServerAddon
from infra.constructs.addons.inference_operator import InferenceOperatorAddon
from infra.constructs.addons.storage_addons import (
    EbsCsiDriverAddon,
    FsxCsiDriverAddon,
    S3CsiDriverAddon,
)

# What an add-on's IAM roles need from outside the add-ons stack.
OIDC = "oidc_provider"  # IRSA roles trust the cluster's OIDC provider
CLUSTER_ARN = "hyperpod_cluster_arn"  # roles scoped to the HyperPod cluster
WORKSPACE_ARN = "metrics_workspace_arn"  # KEDA's role queries the observability workspace


def _no_options(_config: AppConfig) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class AddonRow:
    """One platform add-on."""

    id: str
    """Construct id; the add-on's logical IDs derive from it."""
    key: str
    """Its config section, ``addons.<key>``."""
    addon: type[EksAddon]
    iam: tuple[str, ...] = ()
    """What its IAM roles need (``OIDC``, ``CLUSTER_ARN``, ``WORKSPACE_ARN``)."""
    requires: tuple[str, ...] = ()
    """Add-ons (keys) it depends on where this stack manages them (infra/config/rules.py refuses
    a config that disables one)."""
    options: Callable[[AppConfig], dict[str, Any]] = field(default=_no_options)
    """Its other arguments, from the whole config."""


def _s3_csi(config: AppConfig) -> dict[str, Any]:
    # The driver's role reads addons.s3_csi.model_bucket_names plus every endpoint's S3 model
    # bucket (infra/config/model.py).
    update = {"model_bucket_names": model_bucket_names(config)}
    return {"settings": config.addons.s3_csi.model_copy(update=update)}


def _inference_operator(config: AppConfig) -> dict[str, Any]:
    return {
        "execution_role_unique_name": f"{config.stack_prefix}-{config.region}",
        "retain_stateful_resources": config.retain_stateful_resources,
        "endpoint_namespaces": [ep.namespace for ep in config.kvcache.endpoints],
        "existing_vpc_id": config.existing_cluster.vpc_id if config.existing_cluster else None,
    }


# In creation order; independent add-ons are not chained, so CloudFormation installs them in
# parallel.
ADDONS: tuple[AddonRow, ...] = (
    AddonRow("CertManager", "cert_manager", CertManagerAddon),
    AddonRow("S3CsiDriver", "s3_csi", S3CsiDriverAddon, iam=(OIDC,), options=_s3_csi),
    AddonRow("FsxCsiDriver", "fsx_csi", FsxCsiDriverAddon),
    AddonRow("MetricsServer", "metrics_server", MetricsServerAddon),
    AddonRow("EbsCsiDriver", "ebs_csi", EbsCsiDriverAddon, iam=(OIDC, CLUSTER_ARN)),
    AddonRow(
        "InferenceOperator",
        "inference_operator",
        InferenceOperatorAddon,
        iam=(OIDC, CLUSTER_ARN, WORKSPACE_ARN),
        requires=INFERENCE_REQUIRES,
        options=_inference_operator,
    ),
)


class PlatformAddons(Construct):
    """Creates the add-ons the config manages (``create``/``adopt``; ``skip`` creates nothing).

    An add-on that requires others depends on each required add-on this stack manages.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        cluster: AnyCluster,
        oidc_provider: iam.IOpenIdConnectProvider,
        hyperpod_cluster_arn: str,
        metrics_workspace_arn: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.addons: dict[str, EksAddon] = {}
        if not config.addons.enabled:
            return
        iam_inputs: dict[str, Any] = {
            OIDC: oidc_provider,
            CLUSTER_ARN: hyperpod_cluster_arn,
            WORKSPACE_ARN: metrics_workspace_arn,
        }
        for row in ADDONS:
            settings = config.addons.settings(row.key)
            if not settings.managed:
                continue
            arguments: dict[str, Any] = {
                "settings": settings,
                **{name: iam_inputs[name] for name in row.iam},
                **row.options(config),
            }
            self.addons[row.key] = row.addon(
                self, row.id, cluster=cluster, existing_cluster=config.existing, **arguments
            )
        for row in ADDONS:
            addon = self.addons.get(row.key)
            if addon is None:
                continue
            for key in row.requires:
                required = self.addons.get(key)
                if required is not None:  # absent: mode skip (installed elsewhere)
                    addon.add_dependency(required)

    @property
    def inference_operator(self) -> InferenceOperatorAddon | None:
        addon = self.addons.get("inference_operator")
        return addon if isinstance(addon, InferenceOperatorAddon) else None
