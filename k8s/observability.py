"""What the cluster side of observability needs: the managed collector's scrape configuration,
and the collector's RBAC for clusters without access entries (the model container's
multiprocess directory is in ``k8s.l2_pod``).

The scrape targets come from the same constants the charts render (Curvine's metrics Services
and ports, each endpoint's namespace and metrics port), so a test can compare them with the
rendered objects.
"""

from __future__ import annotations

import re
from typing import Any

import cdk8s
import yaml
from constructs import Construct

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from k8s.common import k8s_for, meta
from k8s.curvine import MASTER_WEB_PORT, WORKER_WEB_PORT, fuse_web_port
from k8s.names import ENDPOINT_POD_LABEL, labels, vllm_job

# The Kubernetes user the AMP docs bind for the aws-auth (ConfigMap) path.
COLLECTOR_USER = "aps-collector-user"
COLLECTOR_ROLE = "aps-collector-role"

# job name -> metrics Service rendered by k8s/curvine.py or k8s/csi.py
CURVINE_JOBS: dict[str, str] = {
    "curvine-master": "curvine-master-metrics",
    "curvine-worker": "curvine-worker-metrics",
    "curvine-fuse": "curvine-fuse-metrics",
}
METRICS_PORT_NAME = "metrics"


def _common_labels() -> list[dict[str, Any]]:
    return [
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
        {"source_labels": ["__meta_kubernetes_pod_node_name"], "target_label": "node"},
    ]


def _vllm_job(e: EndpointConfig) -> dict[str, Any]:
    # By the operator's Pod label, not the Pod name: a name is <ReplicaSet name>-<suffix> cut to
    # 63 characters, so for a long endpoint name it loses the ReplicaSet hash's "-", and a name
    # pattern also matches a sibling endpoint named <name>-<word>.
    serving_port = {
        "source_labels": [
            f"__meta_kubernetes_pod_label_{ENDPOINT_POD_LABEL}",
            "__meta_kubernetes_pod_container_port_number",
            "__meta_kubernetes_pod_phase",
        ],
        "regex": f"{re.escape(e.name)};{e.container_port};Running",
        "action": "keep",
    }
    metrics_port = {
        "source_labels": ["__address__"],
        "regex": r"(.+):\d+",
        "target_label": "__address__",
        "replacement": f"$1:{e.metrics_port}",
    }
    return {
        "job_name": vllm_job(e.namespace, e.name),
        "metrics_path": "/metrics",
        "kubernetes_sd_configs": [{"role": "pod", "namespaces": {"names": [e.namespace]}}],
        "relabel_configs": [
            # Pod discovery yields one target per declared container port. The serving port is
            # the one the operator declares on the model container, so keeping it gives one
            # target per Pod whether or not the metrics port is declared too...
            serving_port,
            # ...and that target is scraped on the metrics port (host kept: IPv4 or [IPv6]).
            metrics_port,
            *_common_labels(),
            {"target_label": "endpoint", "replacement": e.name},
        ],
    }


def _curvine_job(ns: str, job: str, service: str) -> dict[str, Any]:
    metrics_port = {
        "source_labels": ["__meta_kubernetes_service_name", "__meta_kubernetes_endpoint_port_name"],
        "regex": f"{service};{METRICS_PORT_NAME}",
        "action": "keep",
    }
    return {
        "job_name": job,
        "metrics_path": "/metrics",
        "kubernetes_sd_configs": [{"role": "endpoints", "namespaces": {"names": [ns]}}],
        "relabel_configs": [metrics_port, *_common_labels()],
    }


def scrape_config(config: AppConfig) -> dict[str, Any]:
    """The collector's Prometheus configuration (AMP accepts kubernetes_sd_configs only)."""
    obs = config.observability
    jobs = [_vllm_job(e) for e in config.kvcache.endpoints]
    if "curvine" in config.kvcache.l2_backends:
        ns = config.kvcache.curvine.namespace
        jobs += [_curvine_job(ns, job, service) for job, service in CURVINE_JOBS.items()]
    return {
        "global": {
            "scrape_interval": f"{obs.scrape_interval_seconds}s",
            "external_labels": {"environment": config.environment},
        },
        "scrape_configs": jobs,
    }


def scrape_config_yaml(config: AppConfig) -> str:
    return yaml.safe_dump(scrape_config(config), sort_keys=False)


def scrape_targets(config: AppConfig) -> dict[str, tuple[str, str, int]]:
    """job -> (namespace, Service name or endpoint name, port): what a test checks against the
    rendered objects."""
    out = {
        vllm_job(e.namespace, e.name): (e.namespace, e.name, e.metrics_port)
        for e in config.kvcache.endpoints
    }
    cv = config.kvcache.curvine
    if "curvine" in config.kvcache.l2_backends:
        ports = {
            "curvine-master": MASTER_WEB_PORT,
            "curvine-worker": WORKER_WEB_PORT,
            "curvine-fuse": fuse_web_port(cv),
        }
        out |= {job: (cv.namespace, svc, ports[job]) for job, svc in CURVINE_JOBS.items()}
    return out


class ObservabilityChart(cdk8s.Chart):
    """ClusterRole and binding for the collector's Kubernetes user.

    Only needed where the collector cannot get an access entry (a cluster in ``CONFIG_MAP``
    authentication mode, mapped through aws-auth). With ``API`` or ``API_AND_CONFIG_MAP`` AMP
    creates the access entry and its policy itself when the scraper is created. Least
    privilege: read-only discovery of what the scrape configuration uses, and /metrics.
    """

    def __init__(self, scope: Construct, id: str, *, config: AppConfig):
        super().__init__(scope, id, disable_resource_name_hashes=True)
        k8s = k8s_for(config)
        read = ["get", "list", "watch"]
        k8s.KubeClusterRole(
            self,
            "role",
            metadata=meta(k8s, COLLECTOR_ROLE, labels=labels(COLLECTOR_ROLE, "observability")),
            rules=[
                k8s.PolicyRule(
                    api_groups=[""], resources=["pods", "services", "endpoints"], verbs=read
                ),
                k8s.PolicyRule(
                    api_groups=["discovery.k8s.io"], resources=["endpointslices"], verbs=read
                ),
                k8s.PolicyRule(non_resource_ur_ls=["/metrics"], verbs=["get"]),
            ],
        )
        rbac = "rbac.authorization.k8s.io"
        k8s.KubeClusterRoleBinding(
            self,
            "binding",
            metadata=meta(
                k8s,
                f"{COLLECTOR_USER}-role-binding",
                labels=labels(COLLECTOR_ROLE, "observability"),
            ),
            role_ref=k8s.RoleRef(api_group=rbac, kind="ClusterRole", name=COLLECTOR_ROLE),
            subjects=[k8s.Subject(kind="User", name=COLLECTOR_USER, api_group=rbac)],
        )


def observability_objects(config: AppConfig) -> list[dict[str, Any]]:
    """The chart's objects as plain JSON (empty when observability is off)."""
    if not config.observability.enabled:
        return []
    chart = ObservabilityChart(cdk8s.App(), "observability", config=config)
    return [dict(o) for o in chart.to_json()]
