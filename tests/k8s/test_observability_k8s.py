"""Scrape targets against the rendered objects; queries against the metric catalog; the
collector RBAC and the model container env."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig
from infra.dashboards import all_exprs, grafana_dashboard
from k8s.observability import (
    METRICS_PORT_NAME,
    MULTIPROC_DIR,
    observability_env,
    observability_mounts,
    observability_objects,
    observability_volumes,
    scrape_config,
    scrape_targets,
)
from scripts.metrics_catalog import METRICS, metric_names


def _services(rendered: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["metadata"]["namespace"], o["metadata"]["name"]): o
            for o in rendered if o["kind"] == "Service"}  # fmt: skip


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
        (svc_port,) = [p for p in services[(ns, name)]["spec"]["ports"]
                       if p["name"] == METRICS_PORT_NAME]  # fmt: skip
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
        workloads = [o for o in rendered if o["kind"] in ("StatefulSet", "DaemonSet", "Deployment")
                     and o["metadata"].get("namespace") == ns]  # fmt: skip
        templates = [o["spec"]["template"] for o in workloads]
        templates = [t for t in templates if selector.items() <= t["metadata"]["labels"].items()]
        assert templates, f"{job}: Service {name} selects no Pods"
        ports = {p.get("containerPort") for t in templates for c in t["spec"]["containers"]
                 for p in c.get("ports", [])}  # fmt: skip
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
        ('sum(rate(vllm:prefix_cache_hits_total{endpoint="a"}[5m]))',
         {"vllm:prefix_cache_hits_total"}),
        ("histogram_quantile(0.95, sum by (le) (rate(x_bucket[5m]))) > 1.5e3", {"x_bucket"}),
        ('up{job="w"} == 0 and on(node) fs_used offset 5m', {"up", "fs_used"}),
        ("vector(1)", set()),
    ],
)  # fmt: skip
def test_metric_names_parser(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


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
    # The directory the env names is an emptyDir mounted there: it exists and starts empty.
    (mount,) = observability_mounts(dev_config)
    (volume,) = observability_volumes(dev_config)
    assert mount == {"name": volume["name"], "mountPath": MULTIPROC_DIR}
    assert volume["emptyDir"] == {}
    assert observability_mounts(off) == [] and observability_volumes(off) == []
