"""Kubernetes minors the toolkit supports, and the pinned packages that go with each.

A minor is supported when SageMaker HyperPod supports it (EKS prerequisites page: 1.28 to 1.34)
*and* this repository pins both its kubectl Lambda layer and its cdk8s-plus package
(requirements.txt). Older minors that HyperPod still accepts are left out on purpose: they left
EKS standard support earlier still, and cdk8s-plus-28 is frozen at Kubernetes 1.28 (no
StatefulSet volume claim templates).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from types import ModuleType

HYPERPOD_SUPPORTED_MINORS = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34")


@dataclass(frozen=True)
class KubernetesPins:
    minor: str
    kubectl_layer_module: str
    cdk8s_plus_module: str

    @property
    def schema_version(self) -> str:
        """Version string kubernetes-validate uses for this minor's OpenAPI schema."""
        return f"{self.minor}.0"

    def kubectl_layer_class(self) -> type:
        module = importlib.import_module(self.kubectl_layer_module)
        return getattr(module, f"KubectlV{self.minor.split('.')[1]}Layer")

    def cdk8s_plus(self) -> ModuleType:
        return importlib.import_module(self.cdk8s_plus_module)


SUPPORTED_KUBERNETES: dict[str, KubernetesPins] = {
    minor: KubernetesPins(
        minor=minor,
        kubectl_layer_module=f"aws_cdk.lambda_layer_kubectl_v{minor.split('.')[1]}",
        cdk8s_plus_module=f"cdk8s_plus_{minor.split('.')[1]}",
    )
    for minor in ("1.33", "1.34")
}

# The newest minor HyperPod is documented to support. Evidence: the HyperPod EKS prerequisites
# page in its newest revision on record (the Chinese edition of docs.amazonaws.cn, a translation
# of the English page) lists 1.28 to 1.34, where older English revisions stop at 1.32 or 1.33;
# AWS's own HyperPod EKS reference deployment in awslabs/awsome-distributed-ai (slinky-slurm)
# runs 1.34. 1.33 left EKS standard support on 2026-07-29, 1.34 on 2026-12-02: both are billed at
# the extended-support rate now, and 1.35 (standard support until 2027-03-27) is not documented
# for HyperPod. `hpkv preflight` reads the minor's support status from EKS.
DEFAULT_KUBERNETES_VERSION = "1.34"


@dataclass(frozen=True)
class CoreAddonVersions:
    """EKS add-on versions the app installs on a cluster of one Kubernetes minor."""

    vpc_cni: str
    kube_proxy: str
    coredns: str
    pod_identity_agent: str


# Used for every ``eks.addons.*`` key the config leaves out. Sources (Amazon EKS User Guide, the
# "latest version of the Amazon EKS add-on type for each Kubernetes version" tables):
# - kube-proxy (minor-bound: its minor must equal the cluster's):
#   https://docs.aws.amazon.com/eks/latest/userguide/managing-kube-proxy.html
# - CoreDNS: https://docs.aws.amazon.com/eks/latest/userguide/managing-coredns.html
# - VPC CNI (one version for every supported minor; network policy needs 1.14.0 or later,
#   HyperPod 1.18.3 or later): https://docs.aws.amazon.com/eks/latest/userguide/managing-vpc-cni.html
# - EKS Pod Identity agent (one version for every supported minor):
#   https://docs.aws.amazon.com/eks/latest/userguide/workloads-add-ons-available-eks.html
# Check a pin for a Region with `aws eks describe-addon-versions --addon-name <name>
# --kubernetes-version <minor>` (preflight does this on a real account).
CORE_ADDON_VERSIONS: dict[str, CoreAddonVersions] = {
    "1.33": CoreAddonVersions(
        vpc_cni="v1.20.4-eksbuild.2",
        kube_proxy="v1.33.5-eksbuild.2",
        coredns="v1.12.4-eksbuild.1",
        pod_identity_agent="v1.3.9-eksbuild.3",
    ),
    "1.34": CoreAddonVersions(
        vpc_cni="v1.20.4-eksbuild.2",
        kube_proxy="v1.34.1-eksbuild.2",
        coredns="v1.12.4-eksbuild.1",
        pod_identity_agent="v1.3.9-eksbuild.3",
    ),
}


def addon_minor(version: str) -> str | None:
    """``v1.33.5-eksbuild.2`` -> ``1.33`` (None when the string has no such prefix)."""
    m = re.match(r"^v(\d+)\.(\d+)\.", version)
    return f"{m[1]}.{m[2]}" if m else None
