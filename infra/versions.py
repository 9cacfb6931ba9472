"""Kubernetes minors the toolkit supports, and the pinned packages that go with each.

A minor is supported when SageMaker HyperPod supports it (EKS prerequisites page: 1.28 to 1.34)
*and* this repository pins both its kubectl Lambda layer and its cdk8s-plus package
(requirements.txt). Older minors that HyperPod still accepts are left out on purpose: they are out
of EKS standard support and cdk8s-plus-28 is frozen at Kubernetes 1.28 (no StatefulSet volume
claim templates).
"""

from __future__ import annotations

import importlib
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

DEFAULT_KUBERNETES_VERSION = "1.34"
