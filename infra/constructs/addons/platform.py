"""All platform add-ons of one cluster, with their requirements turned into dependencies."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.cluster_types import AnyCluster
from infra.config import AppConfig
from infra.config.model import model_bucket_names
from infra.constructs.addons.base import EksAddon
from infra.constructs.addons.cluster_addons import CertManagerAddon, MetricsServerAddon
from infra.constructs.addons.inference_operator import InferenceOperatorAddon
from infra.constructs.addons.storage_addons import (
    EbsCsiDriverAddon,
    FsxCsiDriverAddon,
    S3CsiDriverAddon,
)


class PlatformAddons(Construct):
    """Creates the add-ons the config manages (``create``/``adopt``; ``skip`` creates nothing).

    Independent add-ons are not chained, so CloudFormation installs them in parallel; an add-on
    that declares ``REQUIRES`` depends on each required add-on this stack manages.
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
    ) -> None:
        super().__init__(scope, id)
        addons = config.addons
        existing = config.existing
        self.addons: dict[str, EksAddon] = {}
        if not addons.enabled:
            return
        if addons.cert_manager.managed:
            self._keep(
                CertManagerAddon(
                    self,
                    "CertManager",
                    cluster=cluster,
                    settings=addons.cert_manager,
                    existing_cluster=existing,
                )
            )
        if addons.s3_csi.managed:
            self._keep(
                S3CsiDriverAddon(
                    self,
                    "S3CsiDriver",
                    cluster=cluster,
                    oidc_provider=oidc_provider,
                    # plus every endpoint's S3 model bucket (infra/config/model.py)
                    settings=addons.s3_csi.model_copy(
                        update={"model_bucket_names": model_bucket_names(config)}
                    ),
                    existing_cluster=existing,
                )
            )
        if addons.fsx_csi.managed:
            self._keep(
                FsxCsiDriverAddon(
                    self,
                    "FsxCsiDriver",
                    cluster=cluster,
                    settings=addons.fsx_csi,
                    existing_cluster=existing,
                )
            )
        if addons.metrics_server.managed:
            self._keep(
                MetricsServerAddon(
                    self,
                    "MetricsServer",
                    cluster=cluster,
                    settings=addons.metrics_server,
                    existing_cluster=existing,
                )
            )
        if addons.ebs_csi.managed:
            self._keep(
                EbsCsiDriverAddon(
                    self,
                    "EbsCsiDriver",
                    cluster=cluster,
                    oidc_provider=oidc_provider,
                    hyperpod_cluster_arn=hyperpod_cluster_arn,
                    settings=addons.ebs_csi,
                    existing_cluster=existing,
                )
            )
        if addons.inference_operator.managed:
            self._keep(
                InferenceOperatorAddon(
                    self,
                    "InferenceOperator",
                    cluster=cluster,
                    oidc_provider=oidc_provider,
                    hyperpod_cluster_arn=hyperpod_cluster_arn,
                    settings=addons.inference_operator,
                    existing_cluster=existing,
                    execution_role_unique_name=f"{config.stack_prefix}-{config.region}",
                    retain_stateful_resources=config.retain_stateful_resources,
                    endpoint_namespaces=[ep.namespace for ep in config.kvcache.endpoints],
                )
            )
        for addon in self.addons.values():
            for key in addon.REQUIRES:
                required = self.addons.get(key)
                if required is not None:  # absent: mode skip (installed elsewhere)
                    addon.add_dependency(required)

    def _keep(self, addon: EksAddon) -> None:
        self.addons[addon.CONFIG_KEY] = addon

    @property
    def inference_operator(self) -> InferenceOperatorAddon | None:
        addon = self.addons.get("inference_operator")
        return addon if isinstance(addon, InferenceOperatorAddon) else None
