"""How the Curvine objects fit together, checked on the rendered YAML of every environment that
deploys Curvine and of a three-master cluster (every shipped environment runs one master, and a
Raft peer list, its separators and its ids only show with several): masters find and start with
each other, every server reads the config it is given, the master volumes, the workers, the
probes, placement and the metrics Services' scrape annotations.

Names and ports come from k8s.curvine; a value that is itself the design ("Parallel",
"ReadWriteOnce", a probe's timings) is written out. Where the API server defaults a field, the
field is read with that default: leaving out a value equal to the default changes nothing.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest
import yaml

from infra.config import AppConfig, parse_config
from k8s.app import build_charts, manifests
from k8s.common import master_storage_class
from k8s.curvine import CONFIG_MAP, JOURNAL_PORT, MASTER, MASTER_WL, RPC_PORT, WORKER
from k8s.foundation import CURVINE_SC
from k8s.observability import CURVINE_JOBS, scrape_config, scrape_targets
from scripts.lib.teardown.kubernetes import labelled
from tests.support.config import SOURCE, env_config, with_overrides
from tests.support.objects import containers_of, obj_id, pod_templates

Obj = dict[str, Any]
Cluster = tuple[AppConfig, list[Obj]]

CURVINE_ENVS = ("dev", "test", "prod")
THREE_MASTERS = "three-masters"
# Distinct sizes and a named class: a claim that took the other's size or the default class shows.
THREE_MASTERS_OVERRIDES: dict[str, Any] = {
    "kvcache.curvine.master.replicas": 3,
    "kvcache.curvine.master.metadata_size_gib": 60,
    "kvcache.curvine.master.journal_size_gib": 80,
    "kvcache.curvine.master.storage_class": "gp3-curvine",
}
ROLES = {"StatefulSet": "master", "DaemonSet": "worker"}
PROBES = ("startupProbe", "readinessProbe", "livenessProbe")
PROBE_ACTIONS = ("tcpSocket", "httpGet", "exec", "grpc")
# What the API server fills in for a probe field left out (core/v1 defaults).
PROBE_DEFAULTS = {"periodSeconds": 10, "failureThreshold": 3, "timeoutSeconds": 1}


@pytest.fixture(scope="module")
def three_masters() -> Cluster:
    config = parse_config(with_overrides(THREE_MASTERS_OVERRIDES), SOURCE, "dev")
    # Through YAML, as the renderer writes it (as conftest does for the FSx variant).
    charts = manifests(build_charts(config)).values()
    objs = [o for objs in charts for o in yaml.safe_load_all(yaml.safe_dump_all(objs)) if o]
    return config, objs


@pytest.fixture(params=(*CURVINE_ENVS, THREE_MASTERS))
def cluster(
    request: pytest.FixtureRequest, rendered_envs: dict[str, list[Obj]], three_masters: Cluster
) -> Cluster:
    """Each environment that deploys Curvine, and the three-master cluster: (config, objects)."""
    if request.param == THREE_MASTERS:
        return three_masters
    return env_config(request.param), rendered_envs[request.param]


def _one(objs: list[Obj], kind: str, name: str) -> Obj:
    (found,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def _servers(objs: list[Obj]) -> list[Obj]:
    """The master StatefulSet and the worker DaemonSet."""
    return [_one(objs, "StatefulSet", MASTER), _one(objs, "DaemonSet", WORKER)]


def _container(workload: Obj) -> Obj:
    (c,) = workload["spec"]["template"]["spec"]["containers"]
    return c


def _env(c: Obj) -> dict[str, Obj]:
    return {e["name"]: e for e in c.get("env", [])}


def _port(c: Obj, name: str) -> int:
    (number,) = [p["containerPort"] for p in c.get("ports", []) if p.get("name") == name]
    return number


def _master_hosts(objs: list[Obj]) -> list[str]:
    """Pod DNS names of the masters: <StatefulSet>-<ordinal>.<serviceName>.<namespace>."""
    sts = _one(objs, "StatefulSet", MASTER)
    name, ns = sts["metadata"]["name"], sts["metadata"]["namespace"]
    svc = sts["spec"]["serviceName"]
    return [f"{name}-{i}.{svc}.{ns}.svc.cluster.local" for i in range(sts["spec"]["replicas"])]


def _toml(objs: list[Obj]) -> dict[str, Any]:
    return tomllib.loads(_one(objs, "ConfigMap", CONFIG_MAP)["data"]["curvine-cluster.toml"])


# --- masters find each other and start together -------------------------------------------------


def test_masters_find_each_other_through_the_headless_service(cluster: Cluster) -> None:
    """Raft peers dial each other by Pod DNS name before any is Ready: the StatefulSet's governing
    Service publishes not-ready addresses, selects the master Pods and carries the rpc and journal
    ports (that it is headless: test_rehearsal_objects)."""
    config, objs = cluster
    sts = _one(objs, "StatefulSet", MASTER)
    svc = _one(objs, "Service", sts["spec"]["serviceName"])
    assert sts["spec"]["replicas"] == config.kvcache.curvine.master.replicas
    assert svc["metadata"]["namespace"] == sts["metadata"]["namespace"]
    assert svc["spec"]["publishNotReadyAddresses"] is True
    assert svc["spec"]["selector"] == sts["spec"]["selector"]["matchLabels"]
    ports = {
        p.get("name"): (p["port"], p.get("targetPort", p["port"])) for p in svc["spec"]["ports"]
    }
    assert ports == {"rpc": (RPC_PORT, RPC_PORT), "journal": (JOURNAL_PORT, JOURNAL_PORT)}


def test_each_master_calls_itself_by_its_pod_dns_name(cluster: Cluster) -> None:
    """CURVINE_MASTER_HOSTNAME is the name its peers list it under. The kubelet expands $(POD_NAME)
    only from a variable defined before it: POD_NAME, from the Pod's metadata.name, comes first."""
    _, objs = cluster
    sts = _one(objs, "StatefulSet", MASTER)
    env = _container(sts)["env"]
    names = [e["name"] for e in env]
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in env
    assert names.index("POD_NAME") < names.index("CURVINE_MASTER_HOSTNAME")
    hostname = _env(_container(sts))["CURVINE_MASTER_HOSTNAME"]["value"]
    name = sts["metadata"]["name"]
    expanded = [
        hostname.replace("$(POD_NAME)", f"{name}-{i}") for i in range(sts["spec"]["replicas"])
    ]
    assert expanded == _master_hosts(objs)


def test_the_toml_lists_every_master_as_journal_peer_and_client_address(cluster: Cluster) -> None:
    """A master finds its Raft id by its own hostname in journal_addrs, and clients try each of
    master_addrs: both are exactly the replicas' Pod DNS names. Ids are 1..n in ordinal order: Raft
    has no id 0, and a restarted master must come back under the id its journal recorded."""
    _, objs = cluster
    hosts = _master_hosts(objs)
    toml = _toml(objs)
    assert toml["journal"]["journal_addrs"] == [
        {"id": i + 1, "hostname": h, "port": JOURNAL_PORT} for i, h in enumerate(hosts)
    ]
    assert toml["client"]["master_addrs"] == [{"hostname": h, "port": RPC_PORT} for h in hosts]


def test_fuse_mounts_dial_every_master(cluster: Cluster) -> None:
    """The CSI driver hands the StorageClass's master-addrs to curvine-fuse: host:port of every
    master, comma-separated, so a mount survives the loss of any one master."""
    _, objs = cluster
    sc = _one(objs, "StorageClass", CURVINE_SC)
    assert sc["parameters"]["master-addrs"].split(",") == [
        f"{h}:{RPC_PORT}" for h in _master_hosts(objs)
    ]


def test_masters_start_together(cluster: Cluster) -> None:
    """A master listens only once a Raft quorum has formed; OrderedReady would hold master-1 back
    until master-0 is Ready, which needs master-1: all masters start at once."""
    _, objs = cluster
    assert _one(objs, "StatefulSet", MASTER)["spec"]["podManagementPolicy"] == "Parallel"


# --- every server reads its config; resources and volumes ---------------------------------------


def test_every_curvine_server_reads_the_config_it_is_given(cluster: Cluster) -> None:
    """Started as ``<role> start``, a server reads the file CURVINE_CONF_FILE names: a key of the
    ConfigMap, mounted read-only (only the chart changes the config)."""
    _, objs = cluster
    cm = _one(objs, "ConfigMap", CONFIG_MAP)
    for wl in _servers(objs):
        c, role = _container(wl), ROLES[wl["kind"]]
        assert c["name"] == role and c["args"] == [role, "start"], wl["metadata"]["name"]
        conf_dir, key = _env(c)["CURVINE_CONF_FILE"]["value"].rsplit("/", 1)
        (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == conf_dir]
        assert mount.get("readOnly") is True, mount
        (volume,) = [
            v for v in wl["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]
        ]
        assert volume == {"name": mount["name"], "configMap": {"name": CONFIG_MAP}}
        assert cm["metadata"]["namespace"] == wl["metadata"]["namespace"]
        assert key in cm["data"] and tomllib.loads(cm["data"][key])


def test_curvine_servers_get_the_configs_resources(cluster: Cluster) -> None:
    """Masters and workers get the config's CPU and memory as requests and limits alike
    (Guaranteed QoS: the last to be evicted or OOM-killed on a busy node)."""
    config, objs = cluster
    cv = config.kvcache.curvine
    sizes = {
        "master": (cv.master.cpu_millicores, cv.master.memory_mib),
        "worker": (cv.worker.cpu_millicores, cv.worker.memory_mib),
    }
    for wl in _servers(objs):
        cpu, memory = sizes[ROLES[wl["kind"]]]
        want = {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}
        assert _container(wl)["resources"] == {"requests": want, "limits": want}


def test_master_volumes_are_single_node_claims_of_the_configured_size_and_class(
    cluster: Cluster,
) -> None:
    """Each master owns its metadata and journal volumes (EBS attaches to one node), sized and
    classed by the config. The volumes outlive the StatefulSet (retained): they carry the labels
    teardown recognises as this project's."""
    config, objs = cluster
    m = config.kvcache.curvine.master
    sts = _one(objs, "StatefulSet", MASTER)
    claims = {c["metadata"]["name"]: c for c in sts["spec"]["volumeClaimTemplates"]}
    sizes = {"meta": m.metadata_size_gib, "journal": m.journal_size_gib}
    assert claims.keys() == sizes.keys()
    for name, size in sizes.items():
        assert claims[name]["spec"] == {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": master_storage_class(config),
            "resources": {"requests": {"storage": f"{size}Gi"}},
        }, name
        assert labelled(claims[name]["metadata"]), claims[name]["metadata"]


# --- workers ------------------------------------------------------------------------------------


def test_workers_announce_their_pod_ip(cluster: Cluster) -> None:
    """A DaemonSet Pod has no stable DNS name: a worker registers with the masters under its Pod
    IP, which every client Pod can reach."""
    _, objs = cluster
    env = _env(_container(_one(objs, "DaemonSet", WORKER)))
    assert env["CURVINE_WORKER_HOSTNAME"] == {
        "name": "CURVINE_WORKER_HOSTNAME",
        "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
    }


def test_workers_create_their_nvme_directory(cluster: Cluster) -> None:
    """A fresh node's NVMe has no curvine-data directory: the kubelet creates it
    (DirectoryOrCreate) rather than leave a missing path to the container runtime."""
    _, objs = cluster
    spec = _one(objs, "DaemonSet", WORKER)["spec"]["template"]["spec"]
    (host_path,) = [v["hostPath"] for v in spec["volumes"] if "hostPath" in v]
    assert host_path["type"] == "DirectoryOrCreate"


def test_workers_roll_one_node_at_a_time(cluster: Cluster) -> None:
    """Each worker holds its node's share of the L2 pool: an update takes down one at a time,
    never starting a second worker on the same NVMe (maxSurge 0). Read with the defaults."""
    _, objs = cluster
    strategy = _one(objs, "DaemonSet", WORKER)["spec"].get("updateStrategy", {})
    rolling = strategy.get("rollingUpdate", {})
    assert strategy.get("type", "RollingUpdate") == "RollingUpdate"
    assert (rolling.get("maxUnavailable", 1), rolling.get("maxSurge", 0)) == (1, 0)


def test_workers_tolerate_every_taint(cluster: Cluster) -> None:
    """GPU nodes may carry taints that keep other Pods off (nvidia.com/gpu and the like): a
    toleration with no key and operator Exists tolerates every taint, so a worker runs on each
    node its selector picks."""
    _, objs = cluster
    spec = _one(objs, "DaemonSet", WORKER)["spec"]["template"]["spec"]
    assert spec["tolerations"] == [{"operator": "Exists"}]


# --- probes -------------------------------------------------------------------------------------


def _timing(probe: Obj) -> tuple[int, int, int]:
    """(periodSeconds, failureThreshold, timeoutSeconds) as the API server stores them."""
    return (
        probe.get("periodSeconds", PROBE_DEFAULTS["periodSeconds"]),
        probe.get("failureThreshold", PROBE_DEFAULTS["failureThreshold"]),
        probe.get("timeoutSeconds", PROBE_DEFAULTS["timeoutSeconds"]),
    )


def _seconds(probe: Obj) -> int:
    """How long the probe fails before it acts: period x failures."""
    period, failures, _ = _timing(probe)
    return period * failures


def test_every_curvine_server_is_probed_on_its_rpc_port(cluster: Cluster) -> None:
    """Started, ready and alive all mean the RPC server accepts connections: each probe is a TCP
    connect, from inside the container, to the loopback address on the port named rpc, and
    nothing else (the API server refuses a probe with no action). The server listens there
    because it binds every address."""
    _, objs = cluster
    for wl in _servers(objs):
        c = _container(wl)
        rpc = _port(c, "rpc")
        command = ["bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{rpc}"]
        for kind in PROBES:
            actions = {k: v for k, v in c.get(kind, {}).items() if k in PROBE_ACTIONS}
            assert actions == {"exec": {"command": command}}, (c["name"], kind)
        assert _env(c)["ORPC_BIND_HOSTNAME"]["value"] == "0.0.0.0", c["name"]


def test_probe_budgets_let_a_master_replay_its_journal_and_drop_a_dead_server(
    cluster: Cluster,
) -> None:
    """Startup allows a master 10 minutes to replay its journal before it listens; once up, a
    server that stops answering leaves its Services within 30 s, and is restarted only after 2
    minutes of silence, not at its first slow answer."""
    _, objs = cluster
    for wl in _servers(objs):
        c = _container(wl)
        budget = {kind: _seconds(c[kind]) for kind in PROBES}
        assert budget["startupProbe"] >= 10 * 60, (c["name"], budget)
        assert budget["readinessProbe"] <= 30, (c["name"], budget)
        assert budget["livenessProbe"] >= 2 * 60, (c["name"], budget)


def test_probe_timings_are_the_designed_ones(cluster: Cluster) -> None:
    """The exact (period s, failures, timeout s) of each probe: startup 10 s x 60 (10 minutes),
    readiness 10 s x 3, liveness 20 s x 6, every check given 5 s to connect."""
    _, objs = cluster
    want = {"startupProbe": (10, 60, 5), "readinessProbe": (10, 3, 5), "livenessProbe": (20, 6, 5)}
    for wl in _servers(objs):
        c = _container(wl)
        assert {kind: _timing(c[kind]) for kind in PROBES} == want, c["name"]


# --- placement ----------------------------------------------------------------------------------


def test_masters_spread_across_hosts(cluster: Cluster) -> None:
    """Losing one node must not cost the Raft quorum: the scheduler prefers a node without
    another master. Preferred, not required: dev's system group has a single node."""
    _, objs = cluster
    sts = _one(objs, "StatefulSet", MASTER)
    assert sts["spec"]["template"]["spec"]["affinity"] == {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": MASTER_WL.match_labels},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    }


def test_masters_get_a_minute_to_stop(cluster: Cluster) -> None:
    """60 s between SIGTERM and SIGKILL, as rendered (the chart gives no reason for it over the
    30 s default: changing it is a decision, not a refactoring)."""
    _, objs = cluster
    spec = _one(objs, "StatefulSet", MASTER)["spec"]["template"]["spec"]
    assert spec["terminationGracePeriodSeconds"] == 60


# --- metrics ------------------------------------------------------------------------------------


def test_every_metrics_service_names_the_port_and_path_its_pods_serve(cluster: Cluster) -> None:
    """Annotation-based scrapers read port and path from the Service: the metrics port of its Pods
    and the path the collector's own job scrapes."""
    config, objs = cluster
    paths = {j["job_name"]: j["metrics_path"] for j in scrape_config(config)["scrape_configs"]}
    for job, service in CURVINE_JOBS.items():
        number = scrape_targets(config)[job][2]
        svc = _one(objs, "Service", service)
        (metrics,) = [p for p in svc["spec"]["ports"] if p["port"] == number]
        assert svc["metadata"]["annotations"] == {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": str(metrics["port"]),
            "prometheus.io/path": paths[job],
        }, service


# --- what the API server accepts, in every environment -----------------------------------------

PULL_POLICIES = {"Always", "IfNotPresent", "Never"}
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
# IANA_SVC_NAME: 1-15 lower-case letters, digits and non-adjacent inner '-', at least one letter.
IANA_SVC_NAME = re.compile(r"(?=.*[a-z])(?!.*--)[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?")


def _all_containers(objs: list[Obj]) -> list[tuple[str, Obj]]:
    return [(obj_id(o), c) for o, t in pod_templates(objs) for c in containers_of(t)]


def test_every_container_has_a_pull_policy_the_api_server_accepts(objs: list[Obj]) -> None:
    """The API server refuses any imagePullPolicy but Always, IfNotPresent and Never (and fills in
    one of them when it is left out)."""
    bad = [
        f"{where}/{c['name']}: {c['imagePullPolicy']!r}"
        for where, c in _all_containers(objs)
        if c.get("imagePullPolicy", "IfNotPresent") not in PULL_POLICIES
    ]
    assert not bad, bad


def test_every_container_and_port_name_is_one_the_api_server_accepts(objs: list[Obj]) -> None:
    """Container names are DNS-1123 labels and port names IANA service names (lower case, at
    most 15 characters), unique in their container: the API server refuses anything else."""
    bad = []
    for where, c in _all_containers(objs):
        names = [p["name"] for p in c.get("ports", []) if "name" in p]
        if not DNS_LABEL.fullmatch(c["name"]):
            bad.append(f"{where}: container name {c['name']!r}")
        bad += [
            f"{where}/{c['name']}: port name {n!r}" for n in names if not IANA_SVC_NAME.fullmatch(n)
        ]
        if len(set(names)) != len(names):
            bad.append(f"{where}/{c['name']}: repeated port names {names}")
    assert not bad, bad
