"""KEDA's objects for an autoscaled endpoint, shaped as the API server returns them: the
ScaledObject the inference operator creates (keda.sh/v1alpha1, named ``<endpoint>-scaled-object``,
its status as KEDA 2.17.1 writes it: conditions Ready, Active, Fallback, Paused, ``hpaName``)
and the HPA KEDA creates from it (autoscaling/v2, ``keda-hpa-<scaledobject>``, one External
metric per trigger, ``s<index>-prometheus``). The tests hold them to KEDA's CRD and to the
Kubernetes OpenAPI schema."""

from __future__ import annotations

from typing import Any

SCALED_OBJECTS = "/apis/keda.sh/v1alpha1/namespaces/models/scaledobjects"
HPAS = "/apis/autoscaling/v2/namespaces/models/horizontalpodautoscalers"
METRIC = "s0-prometheus"
SINCE = "2026-12-04T10:00:00Z"


def _condition(kind: str, status: bool, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
    }


def scaled_object(
    endpoint: str = "vllm-kvcache", ready: bool = True, active: bool = True
) -> dict[str, Any]:
    name = f"{endpoint}-scaled-object"
    ready_c = (
        _condition(
            "Ready",
            True,
            "ScaledObjectReady",
            "ScaledObject is defined correctly and is ready for scaling",
        )
        if ready
        else _condition(
            "Ready",
            False,
            "TriggerError",
            "Triggers defined in ScaledObject are not working correctly",
        )
    )
    active_c = (
        _condition(
            "Active", True, "ScalerActive", "Scaling is performed because triggers are active"
        )
        if active
        else _condition(
            "Active",
            False,
            "ScalerNotActive",
            "Scaling is not performed because triggers are not active",
        )
    )
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": name, "namespace": "models"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": endpoint},
            "minReplicaCount": 1,
            "maxReplicaCount": 4,
            "pollingInterval": 30,
            "triggers": [
                {
                    "type": "prometheus",
                    "name": "waiting",
                    "metricType": "AverageValue",
                    "metadata": {
                        "serverAddress": "https://aps-workspaces.us-west-2.amazonaws.com/workspaces/ws-1",
                        "query": f'sum(vllm:num_requests_waiting{{endpoint="{endpoint}"}})',
                        "threshold": "5",
                    },
                }
            ],
        },
        "status": {
            "scaleTargetKind": "apps/v1.Deployment",
            "originalReplicaCount": 1,
            "externalMetricNames": [METRIC],
            "hpaName": f"keda-hpa-{name}",
            "conditions": [
                ready_c,
                active_c,
                _condition("Fallback", False, "NoFallbackFound", "No fallbacks are defined"),
                _condition("Paused", False, "ScaledObjectUnpaused", "ScaledObject is unpaused"),
            ],
        },
    }


def keda_hpa(
    endpoint: str = "vllm-kvcache",
    current: str = "2500m",
    desired: int = 3,
    replicas: int = 2,
    scaling_active: bool = True,
) -> dict[str, Any]:
    so = f"{endpoint}-scaled-object"
    metric = {"name": METRIC, "selector": {"matchLabels": {"scaledobject.keda.sh/name": so}}}
    active = (
        {
            "type": "ScalingActive",
            "status": "True",
            "reason": "ValidMetricFound",
            "message": "the HPA was able to successfully calculate a replica count from "
            "external metric s0-prometheus",
            "lastTransitionTime": SINCE,
        }
        if scaling_active
        else {
            "type": "ScalingActive",
            "status": "False",
            "reason": "FailedGetExternalMetric",
            "message": "the HPA was unable to compute the replica count",
            "lastTransitionTime": SINCE,
        }
    )
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": f"keda-hpa-{so}", "namespace": "models"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": endpoint},
            "minReplicas": 1,
            "maxReplicas": 4,
            "metrics": [
                {
                    "type": "External",
                    "external": {
                        "metric": metric,
                        "target": {"type": "AverageValue", "averageValue": "5"},
                    },
                }
            ],
        },
        "status": {
            "currentReplicas": replicas,
            "desiredReplicas": desired,
            "currentMetrics": [
                {
                    "type": "External",
                    "external": {"metric": metric, "current": {"averageValue": current}},
                }
            ],
            "conditions": [
                {
                    "type": "AbleToScale",
                    "status": "True",
                    "reason": "ReadyForNewScale",
                    "message": "recommended size matches current size",
                    "lastTransitionTime": SINCE,
                },
                active,
            ],
        },
    }
