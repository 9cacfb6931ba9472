"""The EKS cluster the app creates: name, Kubernetes minor, endpoint access, core add-ons."""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, Literal, cast

from pydantic import field_validator, model_validator

from infra.config.base import Section
from infra.config.errors import RuleViolation
from infra.config.fields import EKSBUILD_VERSION, cidr, retention_days
from infra.facts.versions import (
    CORE_ADDON_VERSIONS,
    DEFAULT_KUBERNETES_VERSION,
    HYPERPOD_SUPPORTED_MINORS,
    SUPPORTED_KUBERNETES,
    addon_minor,
)

EKS_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$")
ANY_ADDRESS = "0.0.0.0/0"
# Sources the public endpoint never sees: the internet reaches it from public addresses only, and
# EKS refuses reserved blocks in publicAccessCidrs.
NOT_PUBLIC = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "224.0.0.0/3",
    )
)


class EksAddonVersions(Section):
    vpc_cni: str = "v1.20.4-eksbuild.2"
    """``vpc-cni`` add-on version; HyperPod requires 1.18.3 or later."""
    kube_proxy: str = "v1.34.1-eksbuild.2"
    """``kube-proxy`` add-on version; must match the cluster's minor."""
    coredns: str = "v1.12.4-eksbuild.1"
    """``coredns`` add-on version (degraded until nodes join; the deploy does not wait on it)."""
    pod_identity_agent: str = "v1.3.9-eksbuild.3"
    """``eks-pod-identity-agent`` add-on version."""

    @field_validator("vpc_cni")
    @classmethod
    def _cni(cls, v: str) -> str:
        m = EKSBUILD_VERSION.match(v)
        if not m:
            raise RuleViolation(
                "an EKS add-on version like v1.20.4-eksbuild.2",
                "run `aws eks describe-addon-versions --addon-name vpc-cni`",
            )
        if tuple(map(int, m.groups())) < (1, 18, 3):
            raise RuleViolation("v1.18.3 or later (HyperPod requirement)", "raise the version")
        return v

    @field_validator("kube_proxy", "coredns", "pod_identity_agent")
    @classmethod
    def _pinned(cls, v: str) -> str:
        if not EKSBUILD_VERSION.match(v):
            raise RuleViolation(
                "a pinned EKS add-on version like v1.12.4-eksbuild.1",
                "run `aws eks describe-addon-versions --addon-name <name>` and pin one",
            )
        return v


class EksConfig(Section):
    if TYPE_CHECKING:  # what a loaded config holds: AppConfig names a null one
        cluster_name: str = cast(str, None)
    else:
        cluster_name: str | None = None
        """Name of the EKS cluster (unique per account and Region). Null (the default):
        ``<project>-<environment>``, e.g. hyperpod-kvcache-dev, so a config copied for another
        environment names its own cluster. A name another environment's config in the same
        folder (same account and Region) creates or deploys into is refused: each environment
        deploys and tears down the clusters it names."""
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    """Kubernetes minor; selects the kubectl layer and cdk8s-plus package
    (infra/facts/versions.py)."""
    endpoint_access: Literal["public_and_private", "private"] = "public_and_private"
    """API endpoint access. ``private`` needs a deploy host inside the VPC (or VPN)."""
    public_access_cidrs: tuple[str, ...] = ()
    """CIDRs that may reach the public API endpoint (ignored when ``private``): the public
    (egress) addresses of the networks that run ``cdk deploy``, kubectl and the operations CLI;
    private and reserved ranges are refused. Required in prod while the endpoint
    is public; left empty elsewhere, the endpoint accepts any address (0.0.0.0/0) and the synth
    warns. The kubectl handler reaches the API from the VPC's private subnets either way."""
    admin_principal_arns: tuple[str, ...] = ()
    """IAM role/user ARNs (humans and the CI role) given cluster-admin through access entries."""
    bootstrap_creator_admin: bool | None = None
    """Give the principal that creates the cluster (CloudFormation's deploy role) cluster-admin.
    Null: only while ``admin_principal_arns`` is empty (someone must administer the cluster).
    EKS applies it only when it creates the cluster: for a cluster that exists, write the value
    it was created with (``hpkv preflight`` compares), or CloudFormation tries to
    replace the cluster. Clusters created before this setting existed have it true."""
    log_retention_days: int = 30
    """Retention of the control-plane log group, in days."""
    addons: EksAddonVersions = EksAddonVersions()

    @property
    def creator_admin(self) -> bool:
        """Whether the cluster's creator gets a cluster-admin access entry."""
        if self.bootstrap_creator_admin is not None:
            return self.bootstrap_creator_admin
        return not self.admin_principal_arns

    @property
    def public_cidrs(self) -> tuple[str, ...]:
        """What the public endpoint admits: the configured CIDRs, or any address."""
        return self.public_access_cidrs or (ANY_ADDRESS,)

    @field_validator("cluster_name")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        if v is not None and not EKS_NAME.match(v):
            raise RuleViolation(
                "1-100 characters: letters, digits, '-' and '_', starting with a letter or digit",
                "rename eks.cluster_name",
            )
        return v

    @field_validator("kubernetes_version")
    @classmethod
    def _version(cls, v: str) -> str:
        if v in SUPPORTED_KUBERNETES:
            return v
        supported = ", ".join(SUPPORTED_KUBERNETES)
        if v in HYPERPOD_SUPPORTED_MINORS:
            raise RuleViolation(
                f"{supported} (HyperPod accepts {v}, but this toolkit pins kubectl layers and "
                "cdk8s-plus only for the minors listed)",
                f"set eks.kubernetes_version to {DEFAULT_KUBERNETES_VERSION}",
            )
        raise RuleViolation(
            f"{supported} (HyperPod supports {', '.join(HYPERPOD_SUPPORTED_MINORS)})",
            f'set eks.kubernetes_version to "{DEFAULT_KUBERNETES_VERSION}" (quoted)',
        )

    @model_validator(mode="after")
    def _addon_versions_follow_the_minor(self) -> EksConfig:
        """Keys left out of ``eks.addons`` come from the minor's table (infra/facts/versions.py)."""
        minor = self.kubernetes_version
        table = CORE_ADDON_VERSIONS.get(minor)
        if table is None:
            raise RuleViolation(
                f"a minor with an add-on version table in infra/facts/versions.py "
                f"({', '.join(CORE_ADDON_VERSIONS)})",
                "add the minor to CORE_ADDON_VERSIONS or pick one listed",
                field="eks.kubernetes_version",
                value=minor,
            )
        chosen = self.addons.model_fields_set
        defaults = {k: getattr(table, k) for k in EksAddonVersions.model_fields if k not in chosen}
        addons = self.addons.model_copy(update=defaults)
        proxy_minor = addon_minor(addons.kube_proxy)
        if proxy_minor != minor:
            raise RuleViolation(
                f"a kube-proxy version of the cluster's minor {minor} (e.g. {table.kube_proxy})",
                f"set eks.addons.kube_proxy to {table.kube_proxy}, or remove the key to use it",
                field="eks.addons.kube_proxy",
                value=addons.kube_proxy,
            )
        object.__setattr__(self, "addons", addons)  # frozen model: set once, while validating
        return self

    @field_validator("admin_principal_arns")
    @classmethod
    def _arns(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for arn in v:
            if not re.match(r"^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/.+$", arn):
                raise RuleViolation(
                    "IAM role or user ARNs (arn:aws:iam::123456789012:role/Name)",
                    f"replace {arn!r}; for an SSO session use its role ARN, not the sts "
                    "assumed-role ARN",
                )
        return v

    @field_validator("public_access_cidrs")
    @classmethod
    def _public_cidrs(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for block in v:
            cidr(block, "eks.public_access_cidrs", 0, 32)
            net = ipaddress.IPv4Network(block)
            hit = next((n for n in NOT_PUBLIC if block != ANY_ADDRESS and net.overlaps(n)), None)
            if hit is not None:
                raise RuleViolation(
                    f"public IPv4 networks (not {hit}: a private or reserved range never reaches "
                    "the public endpoint, and EKS refuses it)",
                    "list the public egress addresses (NAT, VPN) of the networks that run kubectl; "
                    "inside the VPC the private endpoint serves",
                    field="eks.public_access_cidrs",
                    value=block,
                )
        return v

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, v: int) -> int:
        return retention_days(v, "eks.log_retention_days")
