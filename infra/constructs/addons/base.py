"""One EKS add-on as a ``CfnAddon``: pinned version, deliberate conflict handling, declared needs.

Each subclass names its EKS add-on and builds its IAM; the table in ``platform.py`` names each
one's config section and the add-ons it requires, which ``PlatformAddons`` turns into
CloudFormation dependencies (``infra.config.rules.check_addons`` rejects a config that disables
one).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from aws_cdk import RemovalPolicy
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from infra.cdk.cluster_types import AnyCluster
from infra.config.addons import AddonSettings


def resolve_conflicts(settings: AddonSettings, *, existing_cluster: bool) -> str:
    """How EKS treats Kubernetes fields that differ from the add-on's defaults.

    - our own cluster, ``create``: OVERWRITE. The stack owns the cluster and the add-on; on an
      update the declared configuration wins over out-of-band ``kubectl edit``s.
    - an existing cluster, ``create``: NONE. If a self-managed copy (a Helm release) is already
      there, CreateAddon fails and names the conflicting fields instead of taking them over.
    - ``adopt``: PRESERVE. The add-on was installed before this stack; updates keep the values
      its owners set on the cluster instead of overwriting them (and ``EksAddon`` declares the
      installed role and configuration, never new ones).
    """
    if settings.mode == "adopt":
        return "PRESERVE"
    return "NONE" if existing_cluster else "OVERWRITE"


class EksAddon(Construct):
    """Base class: subclasses set ``ADDON_NAME``, the EKS add-on's name."""

    ADDON_NAME: ClassVar[str]

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: AnyCluster,
        settings: AddonSettings,
        existing_cluster: bool,
        service_account_role_arn: str | None = None,
        configuration_values: dict[str, Any] | str | None = None,
    ) -> None:
        super().__init__(scope, id)
        if settings.adopted:
            # Taken over as it is: the declared values are the installed ones (config copies
            # them from DescribeAddon), so the import changes nothing and a later update keeps
            # the owner's role and configuration. A subclass creates no IAM for it.
            assert service_account_role_arn is None and configuration_values is None
            service_account_role_arn = settings.adopted_role_arn
            configuration_values = settings.adopted_configuration
        if isinstance(configuration_values, dict):
            configuration_values = json.dumps(configuration_values, separators=(",", ":"))
        self.settings = settings
        self.resource = eks.CfnAddon(
            self,
            "Resource",
            addon_name=self.ADDON_NAME,
            cluster_name=cluster.cluster_name,
            addon_version=settings.version,
            resolve_conflicts=resolve_conflicts(settings, existing_cluster=existing_cluster),
            service_account_role_arn=service_account_role_arn,
            configuration_values=configuration_values,
        )
        if settings.mode == "adopt":
            # It was there before this stack; deleting the stack must leave it as it was.
            self.resource.apply_removal_policy(RemovalPolicy.RETAIN)
            # Nor does it get this environment's tags: they mark what the app created (teardown
            # finds leftovers by them), and an update would write them onto the owner's add-on.
            self.resource.add_property_deletion_override("Tags")

    def add_dependency(self, other: EksAddon) -> None:
        self.resource.node.add_dependency(other.resource)
