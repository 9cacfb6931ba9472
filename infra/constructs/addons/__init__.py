"""Platform add-ons (cert-manager, CSI drivers, metrics-server, inference operator) and IAM."""

from infra.constructs.addons.base import EksAddon, resolve_conflicts
from infra.constructs.addons.cluster_addons import CertManagerAddon, MetricsServerAddon
from infra.constructs.addons.inference_operator import InferenceOperatorAddon
from infra.constructs.addons.platform import PlatformAddons
from infra.constructs.addons.storage_addons import (
    EbsCsiDriverAddon,
    FsxCsiDriverAddon,
    S3CsiDriverAddon,
)

__all__ = [
    "CertManagerAddon",
    "EbsCsiDriverAddon",
    "EksAddon",
    "FsxCsiDriverAddon",
    "InferenceOperatorAddon",
    "MetricsServerAddon",
    "PlatformAddons",
    "S3CsiDriverAddon",
    "resolve_conflicts",
]
