"""Values of the Kyverno Helm release (infra/constructs/kubernetes_layer.py installs it).

Kyverno's admission controller answers the L2 policy's fail-closed webhook: while no replica
serves, an endpoint Pod cannot be created (every other Pod is outside that webhook, k8s/policy.py).
So the controller runs on the system instance group, two replicas on two different system nodes
when the group has two, with a PodDisruptionBudget that keeps one serving through a drain.

With one system node it runs one replica and no budget: required anti-affinity cannot place a
second replica, and a budget over Pods that all sit on one node would block that node's drain
(HyperPod's node replacement) without keeping anything serving once the node goes.

Keys are those of the chart's values.yaml (kyverno chart 3.8.2; k8s/schemas/kyverno/values.yaml):
``admissionController.replicas`` (Deployment replicas), ``podDisruptionBudget`` (rendered when
enabled or replicas > 1), ``antiAffinity.enabled`` and ``podAntiAffinity`` (the Pod's affinity),
``updateStrategy`` and ``nodeSelector``.
"""

from __future__ import annotations

from typing import Any

from infra.config import AppConfig
from k8s.common import system_node_selector

RELEASE = "kyverno"
# Labels the chart puts on the admission controller's Pods (kyverno.admission-controller
# .matchLabels: the release's instance and the component).
ADMISSION_POD_LABELS = {
    "app.kubernetes.io/instance": RELEASE,
    "app.kubernetes.io/component": "admission-controller",
}
MAX_ADMISSION_REPLICAS = 2


def admission_replicas(config: AppConfig) -> int:
    """One replica per system node, at most two: each needs a node of its own."""
    return min(MAX_ADMISSION_REPLICAS, config.hyperpod.system_group.instance_count)


def kyverno_values(config: AppConfig) -> dict[str, Any]:
    replicas = admission_replicas(config)
    admission: dict[str, Any] = {
        "replicas": replicas,
        # The system group: Kyverno must not take a GPU node's room, and the group's size is
        # what the replica count is derived from.
        "nodeSelector": system_node_selector(config),
        "podDisruptionBudget": {
            "enabled": replicas > 1,
            "minAvailable": 1,
            # A replica that is not Ready may be evicted anyway: it serves nothing, and keeping
            # it would block the node's drain.
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    }
    if replicas > 1:
        admission |= {
            "antiAffinity": {"enabled": True},
            # Required, beside the chart's preferred default (Helm merges the maps, and a null
            # to drop it does not survive CDK's serialisation): two replicas on one node are one
            # failure away from none.
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": ADMISSION_POD_LABELS},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            },
            # With one replica per node, an update cannot add a Pod before removing one (the
            # chart's maxSurge 1 would stay Pending and its maxUnavailable 40% rounds to 0).
            "updateStrategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
            },
        }
    return {"admissionController": admission}
