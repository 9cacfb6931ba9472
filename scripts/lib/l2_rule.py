"""What the L2 admission policy gives an endpoint's Pods, read from the Kyverno rule itself
(``k8s.policy.rule``), so ``patch`` and ``verify`` expect exactly what the policy writes.

``k8s.policy`` builds the rule with cdk8s loaded, and importing cdk8s starts Node.js (jsii): the
CLI imports this module (through ``verify`` and ``patch``) only when one of those commands runs.
"""

from __future__ import annotations

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from k8s.names import PVC, REMOTE_URL_ENV
from k8s.policy import rule
from scripts.lib.endpoints import L2Settings


def l2_settings(cfg: AppConfig, endpoint: EndpointConfig, claim: str | None = None) -> L2Settings:
    """Read from ``k8s.policy.rule`` so a change of the rule changes ``patch`` and ``verify``.
    ``claim``: the L2 claim of the deployed environment (``l2_claim``; default curvine-pvc)."""
    (loop,) = rule(cfg, endpoint, claim or PVC)["mutate"]["foreach"]
    spec = loop["patchStrategicMerge"]["spec"]
    (container,) = spec["containers"]
    return L2Settings(
        marker=REMOTE_URL_ENV,
        env=tuple(container["env"]),
        mounts=tuple(container["volumeMounts"]),
        volumes=tuple(spec["volumes"]),
    )
