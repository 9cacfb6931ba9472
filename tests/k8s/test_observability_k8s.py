"""Scrape targets against the rendered objects; queries against the metric catalog; the
collector RBAC and the model container env."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from infra.config import AppConfig
from infra.facts.versions import SUPPORTED_KUBERNETES
from infra.metrics.alerts import all_exprs
from infra.metrics.catalog import METRICS, metric_names
from infra.metrics.dashboards import grafana_dashboard
from k8s.l2_pod import MULTIPROC_DIR, observability_env
from k8s.names import labels, vllm_job
from k8s.observability import (
    CURVINE_JOBS,
    METRICS_PORT_NAME,
    observability_objects,
    scrape_config,
    scrape_config_yaml,
    scrape_targets,
)
from tests.doubles.prometheus import checked, scraped
from tests.support.config import env_config
from tests.support.promtool import config_verdict, needs_promtool


def _services(rendered: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in rendered
        if o["kind"] == "Service"
    }


def _curvine_targets(config: AppConfig) -> dict[str, tuple[str, str, int]]:
    return {j: t for j, t in scrape_targets(config).items() if j.startswith("curvine")}


def test_curvine_targets_are_rendered_services_and_ports(
    dev_config: AppConfig, rendered: list[dict[str, Any]]
) -> None:
    services = _services(rendered)
    curvine = _curvine_targets(dev_config)
    assert set(curvine) == {"curvine-master", "curvine-worker", "curvine-fuse"}
    jobs = {j["job_name"]: j for j in scrape_config(dev_config)["scrape_configs"]}
    for job, (ns, name, port) in curvine.items():
        (svc_port,) = [
            p for p in services[(ns, name)]["spec"]["ports"] if p["name"] == METRICS_PORT_NAME
        ]
        assert svc_port["port"] == port, job
        keep = jobs[job]["relabel_configs"][0]
        assert keep["action"] == "keep" and keep["regex"] == f"{name};{METRICS_PORT_NAME}"
        assert jobs[job]["kubernetes_sd_configs"][0]["namespaces"]["names"] == [ns]


def test_curvine_metrics_services_select_pods_listening_on_the_port(
    dev_config: AppConfig, rendered: list[dict[str, Any]]
) -> None:
    services = _services(rendered)
    for job, (ns, name, _port) in _curvine_targets(dev_config).items():
        svc = services[(ns, name)]
        selector = svc["spec"]["selector"]
        workloads = [
            o
            for o in rendered
            if o["kind"] in ("StatefulSet", "DaemonSet", "Deployment")
            and o["metadata"].get("namespace") == ns
        ]
        templates = [o["spec"]["template"] for o in workloads]
        templates = [t for t in templates if selector.items() <= t["metadata"]["labels"].items()]
        assert templates, f"{job}: Service {name} selects no Pods"
        ports = {
            p.get("containerPort")
            for t in templates
            for c in t["spec"]["containers"]
            for p in c.get("ports", [])
        }
        (target,) = [p["targetPort"] for p in svc["spec"]["ports"] if p["name"] == "metrics"]
        assert target in ports, job


def test_vllm_targets_are_the_endpoints_metrics_ports(
    dev_config: AppConfig, rendered: list[dict[str, Any]]
) -> None:
    endpoints = [o for o in rendered if o["kind"] == "InferenceEndpointConfig"]
    assert endpoints
    targets = scrape_targets(dev_config)
    for o in endpoints:
        ns, name = o["metadata"]["namespace"], o["metadata"]["name"]
        metrics = o["spec"]["metrics"]["modelMetrics"]
        assert targets[f"vllm-{ns}-{name}"] == (ns, name, metrics["port"])


def test_scrape_interval_respects_amp_minimum(dev_config: AppConfig) -> None:
    assert int(scrape_config(dev_config)["global"]["scrape_interval"].rstrip("s")) >= 30


def test_every_query_uses_only_catalogued_metrics(dev_config: AppConfig) -> None:
    exprs = all_exprs(dev_config)
    assert len(exprs) > 15
    for expr in exprs:
        names = metric_names(expr)
        assert names, expr
        assert names <= set(METRICS), (names - set(METRICS), expr)


def test_dashboard_targets_are_the_panel_queries(dev_config: AppConfig) -> None:
    dash = grafana_dashboard(dev_config)
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert set(exprs) <= set(all_exprs(dev_config))
    rows = [p["title"] for p in dash["panels"] if p["type"] == "row"]
    assert len(rows) == len(dev_config.kvcache.endpoints) + 1


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        (
            'sum(rate(vllm:prefix_cache_hits_total{endpoint="a"}[5m]))',
            {"vllm:prefix_cache_hits_total"},
        ),
        ("histogram_quantile(0.95, sum by (le) (rate(x_bucket[5m]))) > 1.5e3", {"x_bucket"}),
        ('up{job="w"} == 0 and on(node) fs_used offset 5m', {"up", "fs_used"}),
        ("vector(1)", set()),
    ],
)
def test_metric_names_parser(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_the_collector_user_gets_read_only_discovery_and_metrics_and_nothing_else(
    dev_config: AppConfig,
) -> None:
    """docs/observability.md: map the scraper's role to aps-collector-user in aws-auth."""
    role, binding = observability_objects(dev_config)
    # Labelled as this project's, like every rendered object (teardown selects on them).
    assert role["metadata"] == {
        "name": "aps-collector-role",
        "labels": labels("aps-collector-role", "observability"),
    }
    assert binding["metadata"] == {
        "name": "aps-collector-user-role-binding",
        "labels": labels("aps-collector-role", "observability"),
    }
    version = SUPPORTED_KUBERNETES[dev_config.eks.kubernetes_version].schema_version
    for obj in (role, binding):
        kubernetes_validate.validate(obj, version, strict=True)
    read = ["get", "list", "watch"]
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods", "services", "endpoints"], "verbs": read},
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": read},
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
    ]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "User", "name": "aps-collector-user", "apiGroup": "rbac.authorization.k8s.io"}
    ]


def test_model_env_and_rbac_follow_the_switch(dev_config: AppConfig) -> None:
    assert observability_env(dev_config) == [
        {"name": "PROMETHEUS_MULTIPROC_DIR", "value": MULTIPROC_DIR}
    ]
    objs = observability_objects(dev_config)
    assert [o["kind"] for o in objs] == ["ClusterRole", "ClusterRoleBinding"]
    verbs = {v for r in objs[0]["rules"] for v in r["verbs"]}
    assert verbs <= {"get", "list", "watch"}
    off = dev_config.model_copy(
        update={"observability": dev_config.observability.model_copy(update={"enabled": False})}
    )
    assert observability_env(off) == [] and observability_objects(off) == []


# --- what the collector would scrape, through Prometheus's relabelling
# (tests/doubles/prometheus.py)


POD_IP = "10.1.7.23"


def _pod_targets(
    ns: str,
    endpoint: str,
    node: str,
    ports: list[int],
    phase: str = "Running",
    suffix: str = "x2x7k",
    ip: str = POD_IP,
) -> list[dict[str, str]]:
    """What Prometheus's ``role: pod`` discovery yields for a Pod of ``endpoint``'s Deployment:
    one target per declared container port, addressed ``<Pod IP>:<port>`` (``[<IP>]:<port>``
    for IPv6), with the Pod's labels as ``__meta_kubernetes_pod_label_*``. The Pod's name is
    what Kubernetes generates: ``<ReplicaSet name>-`` cut to 58 characters, then 5 random ones
    (apiserver's names.SimpleNameGenerator)."""
    template_hash = "5d8f7c9b4"
    pod = f"{endpoint}-{template_hash}-"[:58] + suffix
    host = f"[{ip}]" if ":" in ip else ip
    return [
        {
            "__address__": f"{host}:{port}",
            "__meta_kubernetes_namespace": ns,
            "__meta_kubernetes_pod_name": pod,
            "__meta_kubernetes_pod_ip": ip,
            "__meta_kubernetes_pod_label_app": endpoint,
            "__meta_kubernetes_pod_label_pod_template_hash": template_hash,
            "__meta_kubernetes_pod_node_name": node,
            "__meta_kubernetes_pod_phase": phase,
            "__meta_kubernetes_pod_container_port_number": str(port),
        }
        for port in ports
    ]


def _endpoint_job(config: AppConfig) -> tuple[str, str, int, dict[str, Any]]:
    """(namespace, name, serving port, scrape job) of the config's one endpoint."""
    (endpoint,) = config.kvcache.endpoints
    ns, name, port = endpoint.namespace, endpoint.name, endpoint.container_port
    jobs = {j["job_name"]: j for j in scrape_config(config)["scrape_configs"]}
    return ns, name, port, jobs[vllm_job(ns, name)]


def _with_ports(config: AppConfig, serving: int, metrics: int) -> AppConfig:
    (endpoint,) = config.kvcache.endpoints
    moved = endpoint.model_copy(update={"container_port": serving, "metrics_port": metrics})
    return config.model_copy(
        update={"kvcache": config.kvcache.model_copy(update={"endpoints": [moved]})}
    )


def test_an_endpoint_job_scrapes_its_running_pods_on_the_metrics_port_only(
    dev_config: AppConfig,
) -> None:
    """Pods are selected by the operator's ``app=<endpoint>`` label: a sibling endpoint whose
    name starts with this one's, a Pod elsewhere, a Pod not running and another port are not
    this job's targets."""
    ns, name, port, job = _endpoint_job(dev_config)
    targets = [
        *_pod_targets(ns, name, "gpu-1", [port, 9999]),
        *_pod_targets(ns, name, "gpu-2", [port], phase="Pending", suffix="q8z2m"),
        *_pod_targets(ns, f"{name}-big", "gpu-2", [port], suffix="b4n6p"),
        *_pod_targets(ns, f"{name}-5d8f7c9b4", "gpu-2", [port], suffix="m2k9d"),
        *_pod_targets("elsewhere", name, "gpu-2", [port], suffix="h7k2w"),
    ]
    assert scraped(job, "pod", targets) == [
        {
            "__address__": f"{POD_IP}:{port}",
            "instance": f"{POD_IP}:{port}",
            "__metrics_path__": "/metrics",  # where vLLM serves its metrics
            "namespace": ns,
            "pod": f"{name}-5d8f7c9b4-x2x7k",
            "node": "gpu-1",
            "endpoint": name,
        }
    ]


@pytest.mark.parametrize("declared", ["serving port only", "serving and metrics ports"])
@pytest.mark.parametrize("ip", [POD_IP, "fd00:ec2::17"])
def test_an_endpoint_with_its_own_metrics_port_is_scraped_there_once_per_pod(
    dev_config: AppConfig, declared: str, ip: str
) -> None:
    """vLLM serving on 8080 with /metrics configured on 9090: each running Pod is scraped once,
    at ``<Pod IP>:9090``, whether the operator's Pod declares only the serving port or both
    (discovery then yields a target per port). Never at 8080, and never not at all."""
    config = _with_ports(dev_config, serving=8080, metrics=9090)
    ns, name, _port, job = _endpoint_job(config)
    ports = [8080] if declared == "serving port only" else [8080, 9090]
    targets = _pod_targets(ns, name, "gpu-1", ports, ip=ip)
    host = f"[{ip}]" if ":" in ip else ip
    assert [(t["__address__"], t["instance"], t["pod"]) for t in scraped(job, "pod", targets)] == [
        (f"{host}:9090", f"{host}:9090", f"{name}-5d8f7c9b4-x2x7k")
    ]


def test_an_endpoint_with_a_long_name_is_still_scraped(dev_config: AppConfig) -> None:
    """A 60-character endpoint name (the config allows 63) leaves no room in the Pod's name for
    the ReplicaSet hash: the Pod is still this endpoint's target."""
    (endpoint,) = dev_config.kvcache.endpoints
    long_name = ("a" * 59) + "b"
    config = dev_config.model_copy(
        update={
            "kvcache": dev_config.kvcache.model_copy(
                update={"endpoints": [endpoint.model_copy(update={"name": long_name})]}
            )
        }
    )
    ns, name, port, job = _endpoint_job(config)
    (target,) = _pod_targets(ns, name, "gpu-1", [port])
    assert "5d8f7c9b4" not in target["__meta_kubernetes_pod_name"]
    assert [t["endpoint"] for t in scraped(job, "pod", [target])] == [long_name]


def test_a_curvine_job_scrapes_its_services_metrics_port_only(
    dev_config: AppConfig, rendered: list[dict[str, Any]]
) -> None:
    """``role: endpoints`` yields one target per Service port and ready address."""
    jobs = {j["job_name"]: j for j in scrape_config(dev_config)["scrape_configs"]}
    ns = dev_config.kvcache.curvine.namespace
    targets = [
        {
            "__meta_kubernetes_namespace": ns,
            "__meta_kubernetes_service_name": svc["metadata"]["name"],
            "__meta_kubernetes_endpoint_port_name": port.get("name", ""),
            "__meta_kubernetes_pod_name": f"{svc['metadata']['name']}-pod",
            "__meta_kubernetes_pod_node_name": "gpu-1",
        }
        for svc in rendered
        if svc["kind"] == "Service" and svc["metadata"].get("namespace") == ns
        for port in svc["spec"]["ports"]
    ]
    for job, service in CURVINE_JOBS.items():
        assert scraped(jobs[job], "endpoints", targets) == [
            {
                "__metrics_path__": "/metrics",
                "namespace": ns,
                "pod": f"{service}-pod",
                "node": "gpu-1",
            }
        ], job


def test_the_scrape_configuration_is_one_prometheus_loads_and_labels_the_environment(
    dev_config: AppConfig,
) -> None:
    """infra/constructs/observability.py hands AMP this YAML; Prometheus parses it strictly."""
    config = checked(yaml.safe_load(scrape_config_yaml(dev_config)))
    assert config == scrape_config(dev_config)
    interval = dev_config.observability.scrape_interval_seconds
    assert config["global"] == {
        "scrape_interval": f"{interval}s",
        "external_labels": {"environment": "dev"},
    }


@needs_promtool
@pytest.mark.parametrize("env", ["dev", "test", "prod", "fsx", "tiers"])
def test_promtool_loads_the_scrape_configuration_of_every_environment(
    env: str, tmp_path: Path
) -> None:
    loads, said = config_verdict(yaml.safe_load(scrape_config_yaml(env_config(env))), tmp_path)
    assert loads, said


def _broken(change: Callable[[dict[str, Any]], None]) -> Callable[[AppConfig], dict[str, Any]]:
    def make(config: AppConfig) -> dict[str, Any]:
        out = copy.deepcopy(scrape_config(config))
        change(out)
        return out

    return make


def _job(out: dict[str, Any]) -> dict[str, Any]:
    job: dict[str, Any] = out["scrape_configs"][0]
    return job


def _relabel(out: dict[str, Any], **fields: Any) -> None:
    _job(out)["relabel_configs"][0].update(fields)


CONFIGS: dict[str, Callable[[dict[str, Any]], None]] = {
    "as rendered": lambda out: None,
    "unknown job field": lambda out: _job(out).update(scrape_every="30s"),
    "unknown relabel field": lambda out: _relabel(out, regexp="x"),
    "unknown action": lambda out: _relabel(out, action="keepif"),
    "target label not a label name": lambda out: _job(out)["relabel_configs"].append(
        {"target_label": "1st", "replacement": "x"}
    ),
    "duplicate job name": lambda out: out["scrape_configs"].append(copy.deepcopy(_job(out))),
    "bad interval": lambda out: out["global"].update(scrape_interval="30 seconds"),
    "lookahead regex": lambda out: _relabel(out, regex="(?=vllm).*"),
    "backreference regex": lambda out: _relabel(out, regex="(a)\\1"),
    "named group regex": lambda out: _relabel(out, regex="(?P<name>.+)"),
    # Prometheus loads it (Go's URL adds the slash between host and path).
    "path without slash": lambda out: _job(out).update(metrics_path="metrics"),
}


@needs_promtool
@pytest.mark.parametrize("case", sorted(CONFIGS))
def test_the_configuration_model_refuses_what_promtool_refuses(
    dev_config: AppConfig, tmp_path: Path, case: str
) -> None:
    """``checked`` stands in for Prometheus in the tests above: on the rendered configuration
    and on each broken one it must agree with promtool, and both verdicts must occur."""
    config = _broken(CONFIGS[case])(dev_config)
    loads, said = config_verdict(config, tmp_path)
    try:
        checked(copy.deepcopy(config))
        model = True
    except AssertionError:
        model = False
    except re.error:
        model = False
    assert model == loads, said
    assert loads is (case in ("as rendered", "named group regex", "path without slash"))
