"""EKS add-ons installed after the HyperPod nodes exist, and the inference operator's settings.

Versions are pinned per add-on (``aws eks describe-addon-versions --addon-name <name>
--kubernetes-version <minor>`` lists what exists; ``hpkv preflight`` checks them
against the account). README.md (Platform add-ons) says where each default comes from.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import field_validator

from infra.config.base import Section
from infra.config.errors import RuleViolation
from infra.config.fields import EKSBUILD_VERSION, S3_BUCKET_NAME
from infra.config.operator_versions import OperatorVersion, operator_for_addon

AddonMode = Literal["create", "adopt", "skip"]
IAM_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$")

# What the inference operator needs before it starts: its init container checks for CSIDriver
# s3.csi.aws.com, CSIDriver fsx.csi.aws.com and the cert-manager CRDs; the AWS setup guide also
# lists metrics-server as a required add-on. Keys are the ``addons.<key>`` sections below; the
# constructs in infra/constructs/addons declare their requirements from this same tuple.
INFERENCE_REQUIRES: tuple[str, ...] = ("cert_manager", "s3_csi", "fsx_csi", "metrics_server")
_WHY_REQUIRED = {
    "cert_manager": "the operator's webhooks need the cert-manager CRDs",
    "s3_csi": "the operator's init container refuses to start without CSIDriver s3.csi.aws.com",
    "fsx_csi": "the operator's init container refuses to start without CSIDriver fsx.csi.aws.com",
    "metrics_server": "the AWS setup guide lists it as required; the install fails without it",
}


def _pinned(version: str) -> str:
    if not EKSBUILD_VERSION.match(version):
        raise RuleViolation(
            "a pinned EKS add-on version like v1.18.2-eksbuild.2 (never latest)",
            "run `aws eks describe-addon-versions --addon-name <name> --kubernetes-version "
            "<minor>` and pin one",
        )
    return version


class AddonSettings(Section):
    """Fields every managed add-on has."""

    enabled: bool = True
    """Install (or adopt, or rely on) this add-on. False means the cluster does without it."""
    mode: AddonMode = "create"
    """``create``: this app installs the add-on with its own IAM roles (the CloudFormation create
    fails, naming the add-on, if EKS already has it). ``skip``: installed and managed elsewhere
    (recommended for a cluster set up by the console's Quick Install); this app neither creates
    nor changes it. ``adopt``: the installed EKS add-on is imported into the stack as it is
    (``make deploy`` passes ``--import-existing-resources``; kept on destroy): no IAM role,
    bucket or pod identity association is created for it, and its version, service-account role
    and configuration come from ``version``, ``adopted_role_arn`` and ``adopted_configuration``
    (``hpkv preflight`` prints them). ``adopt``/``skip`` need ``existing_cluster``."""
    version: str = "v0.0.0-eksbuild.0"
    """Pinned EKS add-on version (``vX.Y.Z-eksbuild.N``); with ``adopt`` the installed one."""
    adopted_role_arn: str | None = None
    """``adopt`` only: the IAM role the installed add-on's service account uses today
    (``aws eks describe-addon ... --query addon.serviceAccountRoleArn``); null when it has none."""
    adopted_configuration: str | None = None
    """``adopt`` only: the installed add-on's configuration values, character for character as
    ``aws eks describe-addon ... --query addon.configurationValues`` returns them; null when it
    has none."""

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        return _pinned(v)

    @field_validator("adopted_role_arn")
    @classmethod
    def _role(cls, v: str | None) -> str | None:
        if v is not None and not IAM_ROLE_ARN.match(v):
            raise RuleViolation(
                "an IAM role ARN (arn:aws:iam::123456789012:role/Name) or null",
                "copy serviceAccountRoleArn from `aws eks describe-addon`",
            )
        return v

    @property
    def adopted(self) -> bool:
        """True when the stack takes over an installed add-on as it is (no new IAM)."""
        return self.enabled and self.mode == "adopt"

    @property
    def managed(self) -> bool:
        """True when this app's stack holds the add-on resource (create or adopt)."""
        return self.enabled and self.mode != "skip"


class CertManagerConfig(AddonSettings):
    version: str = "v1.18.2-eksbuild.2"
    """``cert-manager`` add-on version (HyperPod inference needs v1.18.2-eksbuild.2 or later)."""


class S3CsiConfig(AddonSettings):
    version: str = "v2.7.0-eksbuild.1"
    """``aws-mountpoint-s3-csi-driver`` add-on version (inference needs v1.14.1-eksbuild.1+)."""
    model_bucket_names: tuple[str, ...] = ()
    """S3 buckets holding model weights; the driver's role may only list and read these."""

    @field_validator("model_bucket_names")
    @classmethod
    def _buckets(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for name in v:
            if not S3_BUCKET_NAME.match(name):
                raise RuleViolation(
                    "S3 bucket names (3-63 lower-case letters, digits, '.' and '-'), not ARNs "
                    "or s3:// URLs",
                    f"write the bare bucket name instead of {name!r}",
                )
        return v


class FsxCsiConfig(AddonSettings):
    version: str = "v1.8.0-eksbuild.1"
    """``aws-fsx-csi-driver`` add-on version (inference needs v1.6.0-eksbuild.1 or later)."""
    dynamic_provisioning: bool = False
    """Let the driver create and delete FSx for Lustre file systems (attaches the AWS-managed
    AmazonFSxFullAccess). False: the driver only mounts existing file systems and its role can
    only describe them."""


class MetricsServerConfig(AddonSettings):
    version: str = "v0.8.0-eksbuild.6"
    """``metrics-server`` add-on version (inference needs v0.7.2-eksbuild.4 or later)."""


class EbsCsiConfig(AddonSettings):
    version: str = "v1.54.0-eksbuild.1"
    """``aws-ebs-csi-driver`` add-on version (Curvine's master volumes attach through it)."""


class InferenceOperatorConfig(AddonSettings):
    version: str = "v1.3.0-eksbuild.1"
    """``amazon-sagemaker-hyperpod-inference`` add-on version; must be a row of the table in
    infra/config/operator_versions.py, which names the operator it ships (v1.3.0-eksbuild.1:
    operator 3.2; v1.0.0-eksbuild.1: operator 3.0) and the CRD the endpoints are checked
    against."""
    alb_enabled: bool = True
    """Let the add-on install its AWS Load Balancer Controller (role
    ``hyperpod-inference-system:aws-load-balancer-controller``). False when the cluster already
    runs one."""
    keda_enabled: bool = True
    """Let the add-on install KEDA for endpoint autoscaling (role
    ``hyperpod-inference-system:keda-operator``)."""

    @field_validator("version")
    @classmethod
    def _known(cls, v: str) -> str:
        operator_for_addon(_pinned(v))
        return v

    @property
    def operator(self) -> OperatorVersion:
        """The operator this add-on version ships (its CRD and the model sources it accepts)."""
        return operator_for_addon(self.version)


class AddonsConfig(Section):
    enabled: bool = True
    """Install the platform add-ons (cert-manager, CSI drivers, inference operator)."""
    cert_manager: CertManagerConfig = CertManagerConfig()
    s3_csi: S3CsiConfig = S3CsiConfig()
    fsx_csi: FsxCsiConfig = FsxCsiConfig()
    metrics_server: MetricsServerConfig = MetricsServerConfig()
    ebs_csi: EbsCsiConfig = EbsCsiConfig()
    inference_operator: InferenceOperatorConfig = InferenceOperatorConfig()

    def settings(self, key: str) -> AddonSettings:
        value = getattr(self, key)
        assert isinstance(value, AddonSettings)
        return value

    @property
    def any_managed(self) -> bool:
        """True when this app's stack holds at least one add-on (none: no add-ons stack)."""
        return self.enabled and any(self.settings(key).managed for key in ADDON_KEYS)


ADDON_KEYS: tuple[str, ...] = (
    "cert_manager",
    "s3_csi",
    "fsx_csi",
    "metrics_server",
    "ebs_csi",
    "inference_operator",
)
