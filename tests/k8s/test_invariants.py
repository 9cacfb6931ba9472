"""The product's promises, checked on the rendered objects of dev, test and prod.

Each test is named for a promise and recomputes what it expects from the config or from another
rendered object, never from the module that renders it, so a change in one place that is not
made in the other fails here. tests/k8s/test_rehearsal_objects.py holds the rest of them (RWX
claims, NVMe host path, retained master claims, ebs-sc encryption, privilege, TOML ports); the
list of which test catches which example mutation is in docs/testing.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pytest

from infra.config import AppConfig
from k8s.csi import NODE
from k8s.curvine import master_addrs
from k8s.foundation import CURVINE_SC
from k8s.names import EVICTOR, PART_OF
from tests.support.objects import Obj, containers_of, fail_with, obj_id, pod_templates, selector_of

FS_URL_PREFIX = "fs://"


def _selects(selector: dict[str, str], template: Obj) -> bool:
    have = template.get("metadata", {}).get("labels", {})
    return bool(selector) and all(have.get(k) == v for k, v in selector.items())


def _pods(objs: list[Obj], ns: str, selector: dict[str, str]) -> list[Obj]:
    return [
        t
        for o, t in pod_templates(objs)
        if o["metadata"].get("namespace") == ns and _selects(selector, t)
    ]


def _container_ports(templates: list[Obj]) -> list[Obj]:
    return [p for t in templates for c in containers_of(t) for p in c.get("ports", [])]


def _env(values: list[Obj]) -> dict[str, Any]:
    return {e["name"]: e.get("value") for e in values}


# --- ports: one number everywhere it appears ------------------------------------------------------


def test_each_service_port_is_the_container_port_of_the_same_name(objs: list[Obj]) -> None:
    """A Service port named like a container port (rpc, journal, ...) carries that port's number,
    and sends to it: a journal port that says 8995 would route Raft traffic to the RPC server."""
    problems = []
    for svc in (o for o in objs if o["kind"] == "Service"):
        pods = _pods(objs, svc["metadata"]["namespace"], svc["spec"].get("selector", {}))
        by_name = {p["name"]: p["containerPort"] for p in _container_ports(pods) if "name" in p}
        for sp in svc["spec"]["ports"]:
            want = by_name.get(sp.get("name", ""))
            target = sp.get("targetPort", sp["port"])
            if want is None:
                continue
            if sp["port"] != want or target not in (want, sp["name"]):
                problems.append(
                    f"{obj_id(svc)}: port {sp['name']} = {sp['port']} -> {target}, "
                    f"but the container's port {sp['name']} is {want}"
                )
    fail_with(problems)


def test_every_metrics_service_scrapes_a_port_its_pods_listen_on(objs: list[Obj]) -> None:
    """The scrape annotation, the Service port and a container port are one number."""
    problems = []
    for svc in (o for o in objs if o["kind"] == "Service"):
        annotations = svc["metadata"].get("annotations", {})
        if "prometheus.io/port" not in annotations:
            continue
        scrape = int(annotations["prometheus.io/port"])
        listening = {
            p["containerPort"]
            for p in _container_ports(
                _pods(objs, svc["metadata"]["namespace"], svc["spec"]["selector"])
            )
        }
        ports = {sp["port"] for sp in svc["spec"]["ports"]}
        if scrape not in ports or scrape not in listening:
            problems.append(
                f"{obj_id(svc)}: scrapes {scrape}; Service ports {sorted(ports)}, "
                f"its Pods listen on {sorted(listening)}"
            )
    fail_with(problems)


def test_every_probe_checks_a_port_its_container_declares(objs: list[Obj]) -> None:
    problems = []
    for o, t in pod_templates(objs):
        for c in containers_of(t):
            declared = {p["containerPort"] for p in c.get("ports", [])}
            declared |= {p["name"] for p in c.get("ports", []) if "name" in p}
            for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
                probe = c.get(kind, {})
                for action in ("tcpSocket", "httpGet", "grpc"):
                    if action in probe and probe[action]["port"] not in declared:
                        port = probe[action]["port"]
                        problems.append(
                            f"{obj_id(o)}/{c['name']}: {kind} checks {port}, not a declared port"
                        )
    fail_with(problems)


def test_network_policies_open_the_ports_their_pods_listen_on(objs: list[Obj]) -> None:
    problems = []
    for np in (o for o in objs if o["kind"] == "NetworkPolicy"):
        selector = np["spec"]["podSelector"].get("matchLabels", {})
        if not selector:
            continue
        listening = {
            p["containerPort"]
            for p in _container_ports(_pods(objs, np["metadata"]["namespace"], selector))
        }
        for rule in np["spec"].get("ingress", []):
            for p in rule.get("ports", []):
                if p["port"] not in listening:
                    problems.append(
                        f"{obj_id(np)}: opens {p['port']}, its Pods listen on {sorted(listening)}"
                    )
    fail_with(problems)


def _endpoints(objs: list[Obj]) -> Iterator[Obj]:
    yield from (o for o in objs if o["kind"] == "InferenceEndpointConfig")


def _arg(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args else None


def test_vllm_listens_on_the_endpoints_invocation_and_metrics_port(
    objs: list[Obj], config: AppConfig
) -> None:
    """The operator routes to modelInvocationPort and scrapes modelMetrics.port; vLLM serves
    both on its --port. The config's container_port is the one source of the number."""
    endpoints = list(_endpoints(objs))
    assert len(endpoints) == len(config.kvcache.endpoints)
    wanted = {e.name: e.container_port for e in config.kvcache.endpoints}
    for iec in endpoints:
        worker = iec["spec"]["worker"]
        port = wanted[iec["metadata"]["name"]]
        assert _arg(worker["args"], "--port") == str(port), obj_id(iec)
        assert worker["modelInvocationPort"]["containerPort"] == port, obj_id(iec)
        assert iec["spec"]["metrics"]["modelMetrics"]["port"] == port, obj_id(iec)


# --- L2: one claim, one URL, one hash seed --------------------------------------------------------


def _l2_patches(objs: list[Obj]) -> Iterator[tuple[str, Obj, Obj]]:
    """(namespace, container patch, Pod spec patch) of each endpoint's L2 rule."""
    for policy in (o for o in objs if o["kind"] == "ClusterPolicy"):
        for rule in policy["spec"]["rules"]:
            (match,) = rule["match"]["any"]
            for ns in match["resources"]["namespaces"]:
                for each in rule["mutate"]["foreach"]:
                    spec = each["patchStrategicMerge"]["spec"]
                    (container,) = spec["containers"]
                    yield ns, container, spec


def test_every_endpoint_pod_mounts_the_rwx_l2_claim_at_the_path_in_its_url(
    objs: list[Obj], config: AppConfig
) -> None:
    patches = list(_l2_patches(objs))
    l2_namespaces = {e.namespace for e in config.kvcache.mounted_l2_endpoints}
    assert {ns for ns, _, _ in patches} == l2_namespaces
    claims = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in objs
        if o["kind"] == "PersistentVolumeClaim"
    }
    claim_names = set()
    for ns, container, spec in patches:
        url = urlparse(_env(container["env"])["LMCACHE_REMOTE_URL"])
        assert url.scheme == "fs", url
        volumes = {v["name"]: v for v in spec["volumes"]}
        (mount,) = [
            m for m in container["volumeMounts"] if "persistentVolumeClaim" in volumes[m["name"]]
        ]
        assert mount["mountPath"].rstrip("/") == url.path.rstrip("/"), (ns, mount, url)
        claim = volumes[mount["name"]]["persistentVolumeClaim"]["claimName"]
        claim_names.add(claim)
        pvc = claims.get((ns, claim))
        assert pvc is not None, f"{ns}/{claim}: mounted by the policy but not rendered"
        assert pvc["spec"]["accessModes"] == ["ReadWriteMany"], obj_id(pvc)
    assert len(claim_names) == 1, f"endpoints mount different L2 claims: {claim_names}"


def test_every_replica_gets_the_same_hash_seed_and_the_naive_serde(
    objs: list[Obj], rendered_envs: dict[str, list[Obj]]
) -> None:
    """LMCache's chunk keys hash with Python's hash seed: two replicas with different seeds
    never hit each other's L2 entries. cachegen serde is broken with remote connectors."""
    seeds = set()
    for ns, container, _ in _l2_patches(objs):
        env = _env(container["env"])
        assert env["LMCACHE_REMOTE_SERDE"] == "naive", ns
        seeds.add(env["PYTHONHASHSEED"])
    for iec in _endpoints(objs):
        env = _env(iec["spec"]["worker"]["environmentVariables"])
        assert env["LMCACHE_REMOTE_SERDE"] == "naive", obj_id(iec)
        seeds.add(env["PYTHONHASHSEED"])
    assert len(seeds) == 1 and next(iter(seeds)).isdigit(), seeds
    everywhere = {
        _env(c["env"])["PYTHONHASHSEED"]
        for env_objs in rendered_envs.values()
        for _, c, _ in _l2_patches(env_objs)
    }
    assert everywhere == seeds, "environments disagree on PYTHONHASHSEED"


# --- the evictor bounds the pool ------------------------------------------------------------------


def _curvine_only(config: AppConfig) -> None:
    if config.kvcache.l2_backend != "curvine":
        pytest.skip("FSx: the pool is the file system's capacity (tests/k8s/test_fsx_l2.py)")


def test_evictor_marks_are_the_pool_size_times_the_percentages(
    objs: list[Obj], config: AppConfig
) -> None:
    """HIGH/LOW in bytes = (capacity - reserved) per GPU node x GPU nodes x percent: what
    Curvine lets writes fill. Ten times too large and it never evicts; the pool fills and
    LMCache writes fail."""
    _curvine_only(config)
    cv = config.kvcache.curvine
    writable = cv.worker.capacity_gib - cv.worker.reserved_gib
    pool = writable * 2**30 * config.hyperpod.gpu_group.instance_count
    evictors = [
        o for o in objs if o["kind"] == "CronJob" and o["metadata"]["name"] == "curvine-l2-evictor"
    ]
    # One for the whole pool, however many namespaces' claims share it.
    (cron,) = evictors
    assert cron["metadata"]["namespace"] == cv.namespace
    (container,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    env = _env(container["env"])
    assert int(env["HIGH"]) == pool * cv.evictor.high_water_percent // 100, obj_id(cron)
    assert int(env["LOW"]) == pool * cv.evictor.low_water_percent // 100, obj_id(cron)
    assert int(env["LOW"]) < int(env["HIGH"]) < pool


def test_the_evictor_reaches_every_claims_directory(objs: list[Obj], config: AppConfig) -> None:
    """The evictor's volume is Curvine's directory that curvine-sc provisions every claim in
    (``fs-path``): each namespace's claim, and a claim of an older pool size while the Pods
    started before the resize still write to it. Its volume is retained: Curvine's DeleteVolume
    deletes the volume's whole ``curvine-path``."""
    _curvine_only(config)
    (cron,) = [o for o in objs if o["kind"] == "CronJob" and o["metadata"]["name"] == EVICTOR]
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    root = _env(container["env"])["ROOT"]
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == root]
    assert "subPath" not in mount
    (vol,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    claims = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in objs
        if o["kind"] == "PersistentVolumeClaim"
    }
    claim = claims[(cron["metadata"]["namespace"], vol["persistentVolumeClaim"]["claimName"])]
    (pv,) = [
        o
        for o in objs
        if o["kind"] == "PersistentVolume" and o["metadata"]["name"] == claim["spec"]["volumeName"]
    ]
    assert pv["spec"]["claimRef"] == {
        "namespace": claim["metadata"]["namespace"],
        "name": claim["metadata"]["name"],
    }
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    (sc,) = [o for o in objs if o["kind"] == "StorageClass" and o["metadata"]["name"] == CURVINE_SC]
    attributes = pv["spec"]["csi"]["volumeAttributes"]
    assert attributes["curvine-path"] == sc["parameters"]["fs-path"]
    # The claims' own FUSE process: the same master, fs-path and flags (the driver's mount key).
    assert {k: v for k, v in attributes.items() if k != "curvine-path"} == sc["parameters"]


def test_the_l2_claim_requests_the_pool(objs: list[Obj], config: AppConfig) -> None:
    _curvine_only(config)
    cv = config.kvcache.curvine
    pool_gib = cv.worker.capacity_gib * config.hyperpod.gpu_group.instance_count
    want = cv.static_pv.size_gib if cv.static_pv.enabled else pool_gib
    endpoints = {e.namespace for e in config.kvcache.endpoints if e.l2_backend == "curvine"}
    for pvc in (o for o in objs if o["kind"] == "PersistentVolumeClaim"):
        if pvc["metadata"]["namespace"] in endpoints:
            assert pvc["spec"]["resources"]["requests"]["storage"] == f"{want}Gi", obj_id(pvc)
            assert pvc["spec"]["storageClassName"] == "curvine-sc", obj_id(pvc)
        else:  # the pool's root, for the evictor: bound by name, no provisioner
            assert pvc["spec"]["resources"]["requests"]["storage"] == f"{pool_gib}Gi", obj_id(pvc)
            assert pvc["spec"]["storageClassName"] == "", obj_id(pvc)


def test_every_object_and_pod_is_labelled_as_this_projects(objs: list[Obj]) -> None:
    """Teardown, the ownership-aware apply and the dashboards find this project's objects by the
    standard labels; every object and every Pod template carries all four."""

    problems = []
    metas = [(obj_id(o), o["metadata"]) for o in objs]
    metas += [(f"{obj_id(o)} Pod template", t["metadata"]) for o, t in pod_templates(objs)]
    for where, meta in metas:
        labels = meta.get("labels", {})
        expected = {"app.kubernetes.io/part-of": PART_OF, "app.kubernetes.io/managed-by": "cdk8s"}
        if {k: labels.get(k) for k in expected} != expected or not all(
            labels.get(f"app.kubernetes.io/{k}") for k in ("name", "component")
        ):
            problems.append(f"{where}: labels {labels}")
    fail_with(problems)


def test_every_workload_has_a_selector(objs: list[Obj]) -> None:
    """An empty selector would be refused by the API server (apps/v1) or select every Pod; that
    each selects its own Pods is test_rehearsal_objects' check."""

    problems = []
    for o, _ in pod_templates(objs):
        sel = selector_of(o)
        match = (sel or {}).get("matchLabels", {})
        if not match and o["kind"] != "CronJob":
            problems.append(f"{obj_id(o)}: selector {sel}")
    fail_with(problems)


def test_the_curvine_storage_class_passes_the_configs_fuse_settings(
    objs: list[Obj], config: AppConfig
) -> None:
    """The CSI driver hands each StorageClass parameter it does not know to curvine-fuse as a
    flag: the mount's threads and TTL are the config's, under the cache's own directory, and its
    metrics port is the one curvine-sc's FUSE process owns on a node."""

    _curvine_only(config)
    cv = config.kvcache.curvine
    (sc,) = [o for o in objs if o["kind"] == "StorageClass" and o["metadata"]["name"] == CURVINE_SC]
    assert sc["parameters"] == {
        "master-addrs": master_addrs(cv),
        "fs-path": "/l2cache",
        "path-type": "DirectoryOrCreate",
        "io-threads": str(cv.fuse.io_threads),
        "worker-threads": str(cv.fuse.worker_threads),
        "client.ttl-ms": f"{cv.ttl_hours}h",
        "client.ttl-action": "delete",
    }


def test_the_fuse_client_gets_the_configs_resources(objs: list[Obj], config: AppConfig) -> None:
    """The FUSE client in the CSI node plugin serves every L2 read and write on its node: its
    requests and limits are the config's (kvcache.curvine.fuse), not a default."""

    _curvine_only(config)
    fuse = config.kvcache.curvine.fuse
    (ds,) = [o for o in objs if o["kind"] == "DaemonSet" and o["metadata"]["name"] == NODE]
    (plugin,) = [
        c
        for c in ds["spec"]["template"]["spec"]["containers"]
        if any(p.get("name") == "fuse-metrics" for p in c.get("ports", []))
    ]
    assert plugin["resources"] == {
        "requests": {
            "cpu": f"{fuse.cpu_request_millicores}m",
            "memory": f"{fuse.memory_request_mib}Mi",
        },
        "limits": {"cpu": f"{fuse.cpu_limit_millicores}m", "memory": f"{fuse.memory_limit_mib}Mi"},
    }
