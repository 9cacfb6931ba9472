"""Kyverno ClusterPolicy that points each endpoint's L2 at Curvine when its Pods are admitted.

The operator re-renders its Deployment on every reconcile, so an edit of the Deployment is undone;
a mutation of the Pod at CREATE is not, because the operator never edits Pods. One rule per
endpoint; failurePolicy Fail so a Pod never starts without its L2 when Kyverno is down.
"""

from __future__ import annotations

from typing import Any

import cdk8s
from constructs import Construct

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from k8s.common import labels, raw
from k8s.l2_volume import PVC

POLICY = "hyperpod-kvcache-l2-curvine"
VOLUME = "curvine-l2"


def l2_url(config: AppConfig) -> str:
    """LMCache's fs connector URL for the mount (host and port are ignored by the connector)."""
    return f"fs://localhost:0{config.kvcache.l2_mount_path.rstrip('/')}/"


def l2_env(config: AppConfig) -> list[dict[str, str]]:
    """The env the vLLM container must carry (same keys replace the operator's values)."""
    return [
        {"name": "LMCACHE_REMOTE_URL", "value": l2_url(config)},
        {"name": "LMCACHE_REMOTE_SERDE", "value": "naive"},
        {"name": "PYTHONHASHSEED", "value": "0"},
    ]


def rule(config: AppConfig, e: EndpointConfig) -> dict[str, Any]:
    # The operator names the model container after the endpoint and labels Pods app=<name>.
    # subPath gives each endpoint its own directory while the URL stays the documented one.
    return {
        "name": f"l2-{e.namespace}-{e.name}"[:63],
        "match": {"any": [{"resources": {
            "kinds": ["Pod"], "operations": ["CREATE"], "namespaces": [e.namespace],
            "selector": {"matchLabels": {"app": e.name}},
        }}]},
        "mutate": {"patchStrategicMerge": {"spec": {
            "containers": [{
                "(name)": e.name,
                "env": l2_env(config),
                "volumeMounts": [{"name": VOLUME, "mountPath": config.kvcache.l2_mount_path,
                                  "subPath": e.name}],
            }],
            "volumes": [{"name": VOLUME, "persistentVolumeClaim": {"claimName": PVC}}],
        }}},
    }  # fmt: skip


def l2_endpoints(config: AppConfig) -> list[EndpointConfig]:
    return [e for e in config.kvcache.endpoints if e.enable_l2_cache]


class PolicyChart(cdk8s.Chart):
    def __init__(self, scope: Construct, id: str, *, config: AppConfig):
        super().__init__(scope, id, disable_resource_name_hashes=True)
        rules = [rule(config, e) for e in l2_endpoints(config)]
        if not rules:
            return
        raw(self, "policy", {
            "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {
                "name": POLICY, "labels": labels(POLICY, "policy"),
                "annotations": {"policies.kyverno.io/description":
                                "Mount curvine-pvc into the endpoint's vLLM container and point "
                                "LMCache L2 at it (Pods only, at CREATE)."},
            },
            "spec": {
                "background": False,
                "admission": True,
                "webhookConfiguration": {"failurePolicy": "Fail", "timeoutSeconds": 15},
                "rules": rules,
            },
        })  # fmt: skip
