"""Which configured endpoint a command acts on, the HyperPod inference operator's own objects,
and the L2 claim an endpoint mounts.

The Kubernetes layer (k8s/) owns the names of the objects it creates; the CLI reads them from
``k8s.names`` (``curvine_claim``, ``fsx_claim``) and what the L2 policy gives an endpoint's Pods
from ``k8s.l2_pod``; neither imports cdk8s.
"""

from __future__ import annotations

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from infra.environment.fsx import FileSystemUnknown, deployed_file_system
from k8s.names import curvine_claim, fsx_claim
from scripts.lib.clients import Clients
from scripts.lib.errors import OperationError

# The HyperPod inference operator's own objects (installed by the EKS add-on, not by k8s/).
IEC_GROUP = "inference.sagemaker.aws.amazon.com"
IEC_VERSION = "v1"
IEC_PLURAL = "inferenceendpointconfigs"


class UnknownEndpoint(ValueError):
    """``--endpoint``/``--namespace`` name no endpoint of ``kvcache.endpoints``: the option,
    the value, and what is configured."""

    def __init__(self, option: str, value: str, configured: str, source: str) -> None:
        super().__init__(
            f"{option} = {value}: not in kvcache.endpoints of {source} (configured: {configured})"
        )
        self.option, self.value, self.configured, self.source = option, value, configured, source


def resolve_endpoint(cfg: AppConfig, name: str | None, namespace: str | None) -> EndpointConfig:
    """The first configured endpoint matching the options (each option narrows the choice)."""
    endpoints = cfg.kvcache.endpoints
    for e in endpoints:
        if (name is None or e.name == name) and (namespace is None or e.namespace == namespace):
            return e
    known = ", ".join(f"{e.namespace}/{e.name}" for e in endpoints) or "none"
    source = f"config/{cfg.environment}.yaml"
    if name is not None and all(e.name != name for e in endpoints):
        raise UnknownEndpoint("--endpoint", name, known, source)
    if namespace is not None and all(e.namespace != namespace for e in endpoints):
        raise UnknownEndpoint("--namespace", namespace, known, source)
    raise UnknownEndpoint("--endpoint with --namespace", f"{name} in {namespace}", known, source)


def l2_claim(clients: Clients, cfg: AppConfig) -> str:
    """The claim the L2 policy mounts in the deployed environment: ``curvine-pvc-<GiB>gi``
    (named after the size ``cfg`` gives it), or with FSx
    the claim named after the deployed file system (read from the kvcache stack's outputs;
    OperationError with the reason when it cannot be)."""
    if "fsx_lustre" not in cfg.kvcache.l2_backends:
        return curvine_claim(cfg)
    try:
        return fsx_claim(deployed_file_system(cfg, clients.aws("cloudformation")))
    except FileSystemUnknown as exc:
        raise OperationError(str(exc)) from None
