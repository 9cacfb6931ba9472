"""Which configured endpoint a command acts on, and what its L2 must look like.

The Kubernetes layer (k8s/) owns the names of the objects it creates; the CLI reads them from
``k8s.names`` (``PVC``, ``CSI_DRIVER``, ``CURVINE_SC``, ``fsx_claim``), which imports no cdk8s. The
L2 settings are read from the Kyverno rule itself (``k8s.policy.rule``), so ``patch`` and
``verify`` expect exactly what the admission policy writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from infra.fsx_outputs import FileSystemUnknown, deployed_file_system
from k8s.names import PVC, REMOTE_URL_ENV, fsx_claim
from scripts.common import OperationError

if TYPE_CHECKING:
    from scripts.clients import Clients

# The HyperPod inference operator's own objects (installed by the EKS add-on, not by k8s/).
OPERATOR_NAMESPACE = "hyperpod-inference-system"
OPERATOR_DEPLOYMENT = "hyperpod-inference-controller-manager"
IEC_GROUP = "inference.sagemaker.aws.amazon.com"
IEC_VERSION = "v1"
IEC_PLURAL = "inferenceendpointconfigs"


class UnknownEndpoint(ValueError):
    """``--endpoint``/``--namespace`` name no endpoint of ``kvcache.endpoints``."""


def resolve_endpoint(cfg: AppConfig, name: str | None, namespace: str | None) -> EndpointConfig:
    """The first configured endpoint matching the options (each option narrows the choice)."""
    endpoints = cfg.kvcache.endpoints
    for e in endpoints:
        if (name is None or e.name == name) and (namespace is None or e.namespace == namespace):
            return e
    asked = [f"--endpoint {name}"] if name is not None else []
    asked += [f"--namespace {namespace}"] if namespace is not None else []
    known = ", ".join(f"{e.namespace}/{e.name}" for e in endpoints) or "none"
    source = f"config/{cfg.environment}.yaml"
    raise UnknownEndpoint(
        f"{' '.join(asked) or 'no endpoint'}: not in kvcache.endpoints of {source} "
        f"(configured: {known})"
    )


@dataclass(frozen=True)
class L2Settings:
    """What the Kyverno rule adds to an endpoint's Pod: in the container that carries the env
    variable ``marker`` (the operator injects it into the model container) the ``env`` entries
    (by name) and ``mounts`` (by mountPath); in the Pod the ``volumes``."""

    marker: str
    env: tuple[dict[str, Any], ...]
    mounts: tuple[dict[str, Any], ...]
    volumes: tuple[dict[str, Any], ...]

    def env_values(self) -> dict[str, Any]:
        return {e["name"]: e.get("value") for e in self.env}


def l2_settings(cfg: AppConfig, endpoint: EndpointConfig, claim: str | None = None) -> L2Settings:
    """Read from ``k8s.policy.rule`` so a change of the rule changes ``patch`` and ``verify``.
    ``claim``: the L2 claim of the deployed environment (``l2_claim``; default curvine-pvc)."""
    # k8s.policy builds the rule with cdk8s loaded, and importing cdk8s starts Node.js (jsii): only
    # the commands that need the rule (verify, patch) load it, so the others run without Node.js.
    from k8s.policy import rule

    (loop,) = rule(cfg, endpoint, claim or PVC)["mutate"]["foreach"]
    spec = loop["patchStrategicMerge"]["spec"]
    (container,) = spec["containers"]
    return L2Settings(
        marker=REMOTE_URL_ENV,
        env=tuple(container["env"]),
        mounts=tuple(container["volumeMounts"]),
        volumes=tuple(spec["volumes"]),
    )


def l2_claim(clients: Clients, cfg: AppConfig) -> str:
    """The claim the L2 policy mounts in the deployed environment: ``curvine-pvc``, or with FSx
    the claim named after the deployed file system (read from the kvcache stack's outputs;
    OperationError with the reason when it cannot be)."""
    if cfg.kvcache.l2_backend != "fsx_lustre":
        return PVC
    try:
        return fsx_claim(deployed_file_system(cfg, clients.aws("cloudformation")))
    except FileSystemUnknown as exc:
        raise OperationError(str(exc)) from None
