"""Deploy rehearsal over the objects we render: what the API server, the controllers and the
kubelet would refuse or silently leave broken, checked on the real rendered YAML of dev, test and
prod, and of dev with the FSx for Lustre L2 (no double). Each failure names the object and the
rule it breaks."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import botocore.session
import pytest
import yaml

from infra.cdk.unresolved import unresolved_tokens
from k8s.common import INSTANCE_GROUP_LABEL
from k8s.l2_volume import FSX_DRIVER
from tests.support.objects import (
    Obj,
    containers_of,
    fail_with,
    named_objects,
    obj_id,
    pod_templates,
    selector_of,
)

CURVINE_ENVS = ("dev", "test", "prod")
# fsx, tiers: tests/support/config.py FSX_VARIANT, TIERS_VARIANT
ENVS = (*CURVINE_ENVS, "fsx", "tiers")

# Objects our Pods reference that something other than these charts provides, and what does.
PROVIDED_ELSEWHERE: dict[tuple[str, str], str] = {
    ("PriorityClass", "system-node-critical"): "Kubernetes built-in PriorityClass",
    ("PriorityClass", "system-cluster-critical"): "Kubernetes built-in PriorityClass",
    ("ServiceAccount", "default"): "Kubernetes: created in every namespace by the controller",
    ("Namespace", "default"): "Kubernetes built-in namespace",
    ("Namespace", "kube-system"): "Kubernetes built-in namespace",
}


@pytest.fixture(params=ENVS)
def objs(request: pytest.FixtureRequest, rendered_envs: dict[str, list[Obj]]) -> list[Obj]:
    return rendered_envs[request.param]


@pytest.fixture(params=CURVINE_ENVS)
def curvine_objs(request: pytest.FixtureRequest, rendered_envs: dict[str, list[Obj]]) -> list[Obj]:
    """Environments that deploy Curvine (its own invariants)."""
    return rendered_envs[request.param]


# --- selectors and Services -------------------------------------------------------------------


def selector_problems(objs: list[Obj]) -> list[str]:
    problems = []
    for o, t in pod_templates(objs):
        sel = selector_of(o)
        if sel is None:
            if o["kind"] != "CronJob":
                problems.append(f"{obj_id(o)}: has no selector")
            continue
        if sel.get("matchExpressions"):
            problems.append(f"{obj_id(o)}: matchExpressions are not checked here; use matchLabels")
        want = sel.get("matchLabels", {})
        have = t.get("metadata", {}).get("labels", {})
        if not want or any(have.get(k) != v for k, v in want.items()):
            problems.append(
                f"{obj_id(o)}: selector {want} does not match template labels {have} "
                "(the API server refuses a workload whose selector does not select its template)"
            )
    return problems


def test_every_workload_selector_matches_its_template(objs: list[Obj]) -> None:
    fail_with(selector_problems(objs))


def service_problems(objs: list[Obj]) -> list[str]:
    problems = []
    for svc in (o for o in objs if o["kind"] == "Service"):
        ns = svc["metadata"].get("namespace")
        sel = svc["spec"].get("selector", {})
        if not sel:
            problems.append(f"{obj_id(svc)}: has no selector, so it selects no Pod")
            continue
        selected = [
            t
            for o, t in pod_templates(objs)
            if o["metadata"].get("namespace") == ns
            and all(t.get("metadata", {}).get("labels", {}).get(k) == v for k, v in sel.items())
        ]
        if not selected:
            problems.append(f"{obj_id(svc)}: selector {sel} selects no Pod template in {ns}")
            continue
        ports = [p for t in selected for c in containers_of(t) for p in c.get("ports", [])]
        for sp in svc["spec"]["ports"]:
            target = sp.get("targetPort", sp["port"])
            key = "name" if isinstance(target, str) else "containerPort"
            if not any(p.get(key) == target for p in ports):
                problems.append(
                    f"{obj_id(svc)}: targetPort {target!r} is not a container port of the Pods "
                    "it selects"
                )
    return problems


def test_every_service_selects_a_pod_and_its_target_ports(objs: list[Obj]) -> None:
    fail_with(service_problems(objs))


def test_statefulset_service_name_is_a_headless_service(objs: list[Obj]) -> None:
    services = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in objs
        if o["kind"] == "Service"
    }
    problems = []
    for sts in (o for o in objs if o["kind"] == "StatefulSet"):
        key = (sts["metadata"]["namespace"], sts["spec"].get("serviceName", ""))
        svc = services.get(key)
        if svc is None or svc["spec"].get("clusterIP") != "None":
            problems.append(
                f"{obj_id(sts)}: serviceName {key[1]!r} does not name a headless Service "
                "(Pod DNS names would not resolve)"
            )
    fail_with(problems)


# --- references -------------------------------------------------------------------------------


def _exists(objs: list[Obj], kind: str, ns: str, name: str) -> bool:
    return (ns, name) in named_objects(objs, kind) or (kind, name) in PROVIDED_ELSEWHERE


def reference_problems(objs: list[Obj]) -> list[str]:
    problems: list[str] = []

    def need(o: Obj, kind: str, ns: str, name: str, via: str) -> None:
        if not _exists(objs, kind, ns, name):
            where = f"{ns}/" if ns else ""
            problems.append(
                f"{obj_id(o)}: {via} references {kind} {where}{name}, which is neither rendered "
                "nor on PROVIDED_ELSEWHERE"
            )

    for o in objs:
        ns = o["metadata"].get("namespace")
        if ns:
            need(o, "Namespace", "", ns, "metadata.namespace")
    for o, t in pod_templates(objs):
        ns = o["metadata"]["namespace"]
        spec = t["spec"]
        need(o, "ServiceAccount", ns, spec.get("serviceAccountName", "default"), "the Pod")
        if "priorityClassName" in spec:
            need(o, "PriorityClass", "", spec["priorityClassName"], "priorityClassName")
        claims = {c["metadata"]["name"] for c in o["spec"].get("volumeClaimTemplates", [])}
        volumes = {v["name"] for v in spec.get("volumes", [])} | claims
        for v in spec.get("volumes", []):
            if "configMap" in v:
                need(o, "ConfigMap", ns, v["configMap"]["name"], f"volume {v['name']}")
            if "secret" in v:
                need(o, "Secret", ns, v["secret"]["secretName"], f"volume {v['name']}")
            if "persistentVolumeClaim" in v:
                claim = v["persistentVolumeClaim"]["claimName"]
                need(o, "PersistentVolumeClaim", ns, claim, f"volume {v['name']}")
        for c in containers_of(t):
            for m in c.get("volumeMounts", []):
                if m["name"] not in volumes:
                    problems.append(
                        f"{obj_id(o)}: container {c['name']} mounts volume {m['name']}, "
                        "which is neither a volume nor a volumeClaimTemplate"
                    )
            for e in c.get("env", []):
                src = e.get("valueFrom", {})
                if "configMapKeyRef" in src:
                    need(o, "ConfigMap", ns, src["configMapKeyRef"]["name"], f"env {e['name']}")
                if "secretKeyRef" in src:
                    need(o, "Secret", ns, src["secretKeyRef"]["name"], f"env {e['name']}")
            for ef in c.get("envFrom", []):
                if "configMapRef" in ef:
                    need(o, "ConfigMap", ns, ef["configMapRef"]["name"], "envFrom")
                if "secretRef" in ef:
                    need(o, "Secret", ns, ef["secretRef"]["name"], "envFrom")
        for claim_tpl in o["spec"].get("volumeClaimTemplates", []):
            sc = claim_tpl["spec"].get("storageClassName")
            if sc:
                via = f"volumeClaimTemplate {claim_tpl['metadata']['name']}"
                need(o, "StorageClass", "", sc, via)
    for o in objs:
        if o["kind"] in ("PersistentVolumeClaim", "PersistentVolume"):
            sc = o["spec"].get("storageClassName")
            if sc:
                need(o, "StorageClass", "", sc, "storageClassName")
        if o["kind"] == "PersistentVolumeClaim" and o["spec"].get("volumeName"):
            need(o, "PersistentVolume", "", o["spec"]["volumeName"], "volumeName")
        if o["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            ref = o["roleRef"]
            role_ns = "" if ref["kind"] == "ClusterRole" else o["metadata"]["namespace"]
            need(o, ref["kind"], role_ns, ref["name"], "roleRef")
            for s in o.get("subjects", []):
                if s["kind"] == "ServiceAccount":
                    need(o, "ServiceAccount", s["namespace"], s["name"], "subjects")
        if o["kind"] == "StorageClass" and o["provisioner"] == "curvine":
            need(o, "CSIDriver", "", "curvine", "provisioner")
    return problems


def test_every_reference_resolves(objs: list[Obj]) -> None:
    fail_with(reference_problems(objs))


# --- invariants -----------------------------------------------------------------------------------


def _one(objs: list[Obj], kind: str, name: str) -> Obj:
    found = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert found, f"no {kind} {name} rendered"
    return found[0]


def _toml(objs: list[Obj]) -> dict[str, Any]:
    cm = _one(objs, "ConfigMap", "curvine-cluster-config")
    return tomllib.loads(cm["data"]["curvine-cluster.toml"])


def test_l2_claims_are_read_write_many(objs: list[Obj]) -> None:
    """The claims the L2 policy mounts (curvine-pvc-<GiB>gi; with FSx named after the file
    system)."""
    (policy,) = [o for o in objs if o["kind"] == "ClusterPolicy"]
    mounted = {
        v["persistentVolumeClaim"]["claimName"]
        for r in policy["spec"]["rules"]
        for loop in r["mutate"]["foreach"]
        for v in loop["patchStrategicMerge"]["spec"]["volumes"]
        if "persistentVolumeClaim" in v
    }
    claims = [
        o for o in objs if o["kind"] == "PersistentVolumeClaim" and o["metadata"]["name"] in mounted
    ]
    assert mounted and claims
    for c in claims:
        assert c["spec"]["accessModes"] == ["ReadWriteMany"], f"{obj_id(c)}: must be ReadWriteMany"


def test_worker_data_is_the_nvme_host_path_where_the_toml_points(curvine_objs: list[Obj]) -> None:
    ds = _one(curvine_objs, "DaemonSet", "curvine-worker")
    spec = ds["spec"]["template"]["spec"]
    (vol,) = [v for v in spec["volumes"] if "hostPath" in v]
    assert vol["hostPath"]["path"] == "/opt/dlami/nvme/curvine-data", obj_id(ds)
    (mount,) = [m for m in spec["containers"][0]["volumeMounts"] if m["name"] == vol["name"]]
    (data_dir,) = _toml(curvine_objs)["worker"]["data_dir"]
    assert data_dir.split("]", 1)[1] == mount["mountPath"], (
        f"{obj_id(ds)}: data_dir {data_dir} is not where the NVMe is mounted ({mount['mountPath']})"
    )


def test_master_claims_are_retained(curvine_objs: list[Obj]) -> None:
    sts = _one(curvine_objs, "StatefulSet", "curvine-master")
    policy = sts["spec"]["persistentVolumeClaimRetentionPolicy"]
    assert policy == {"whenDeleted": "Retain", "whenScaled": "Retain"}, obj_id(sts)


def test_ebs_storage_class_encrypts(objs: list[Obj]) -> None:
    assert _one(objs, "StorageClass", "ebs-sc")["parameters"]["encrypted"] == "true"


def test_only_the_csi_node_plugin_is_privileged(curvine_objs: list[Obj]) -> None:
    privileged = {
        f"{obj_id(o)}/{c['name']}"
        for o, t in pod_templates(curvine_objs)
        for c in containers_of(t)
        if c.get("securityContext", {}).get("privileged")
    }
    assert privileged == {"DaemonSet curvine/curvine-csi-node/csi-plugin"}


def test_each_port_agrees_across_container_service_and_toml(curvine_objs: list[Obj]) -> None:
    toml = _toml(curvine_objs)
    expected = {  # (workload, container port name) -> the TOML's number
        ("curvine-master", "rpc"): toml["master"]["rpc_port"],
        ("curvine-master", "journal"): toml["journal"]["rpc_port"],
        ("curvine-master", "web"): toml["master"]["web_port"],
        ("curvine-worker", "rpc"): toml["worker"]["rpc_port"],
        ("curvine-worker", "web"): toml["worker"]["web_port"],
        ("curvine-csi-node", "fuse-metrics"): toml["fuse"]["web_port"],
    }
    for peer in toml["journal"]["journal_addrs"]:
        assert peer["port"] == toml["journal"]["rpc_port"]
    for client in toml["client"]["master_addrs"]:
        assert client["port"] == toml["master"]["rpc_port"]
    ports = {
        (o["metadata"]["name"], p["name"]): p["containerPort"]
        for o, t in pod_templates(curvine_objs)
        for c in containers_of(t)
        for p in c.get("ports", [])
    }
    problems = [
        f"{w} port {n}: container {ports.get((w, n))} != TOML {v}"
        for (w, n), v in expected.items()
        if ports.get((w, n)) != v
    ]
    for svc in (
        o
        for o in curvine_objs
        if o["kind"] == "Service" and o["metadata"]["namespace"] == "curvine"
    ):
        for sp in svc["spec"]["ports"]:
            if sp.get("targetPort", sp["port"]) != sp["port"]:
                problems.append(
                    f"{obj_id(svc)}: port {sp['port']} != targetPort {sp['targetPort']}"
                )
            if sp["port"] not in set(expected.values()):
                problems.append(f"{obj_id(svc)}: port {sp['port']} is not a port of the TOML")
    fail_with(problems)


# --- placement and hardening ----------------------------------------------------------------------

GPU = {"curvine-worker", "curvine-csi-node", "curvine-l2-evictor", "fsx-l2-evictor"}
SYSTEM = {"curvine-master", "curvine-csi-controller"}
NEEDS_API = {"curvine-csi-controller", "curvine-csi-node"}


def test_gpu_and_system_workloads_select_their_instance_group(
    objs: list[Obj], rendered_envs: dict[str, list[Obj]]
) -> None:
    for o, t in pod_templates(objs):
        name = o["metadata"]["name"]
        group = t["spec"].get("nodeSelector", {}).get(INSTANCE_GROUP_LABEL)
        if name in GPU:
            assert group == "gpu", f"{obj_id(o)}: must run on the GPU instance group"
        if name in SYSTEM:
            assert group == "system", f"{obj_id(o)}: must stay off the GPU nodes (system group)"
    assert {o["metadata"]["name"] for o, _ in pod_templates(objs)} <= GPU | SYSTEM


def test_unprivileged_containers_are_hardened(objs: list[Obj]) -> None:
    problems = []
    for o, t in pod_templates(objs):
        for c in containers_of(t):
            sc = c.get("securityContext", {})
            if sc.get("privileged"):
                continue
            wants = {
                "allowPrivilegeEscalation": sc.get("allowPrivilegeEscalation") is False,
                "capabilities.drop ALL": sc.get("capabilities", {}).get("drop") == ["ALL"],
                "no added capability": not sc.get("capabilities", {}).get("add"),
                "seccomp RuntimeDefault": sc.get("seccompProfile", {}).get("type")
                == "RuntimeDefault",
                "readOnlyRootFilesystem": sc.get("readOnlyRootFilesystem") is True,
            }
            problems += [f"{obj_id(o)}/{c['name']}: lacks {k}" for k, ok in wants.items() if not ok]
        token = t["spec"].get("automountServiceAccountToken")
        if o["metadata"]["name"] not in NEEDS_API and token is not False:
            problems.append(f"{obj_id(o)}: does not call the API but mounts a token")
    fail_with(problems)


# --- every value resolved ----------------------------------------------------------------------

FSX_MODEL = botocore.session.get_session().get_service_model("fsx")


def _pattern(shape: str) -> re.Pattern[str]:
    return re.compile(FSX_MODEL.shape_for(shape).metadata["pattern"])


@pytest.mark.parametrize("env", ENVS)
def test_every_fsx_volume_names_a_file_system_the_driver_can_mount(
    env: str, rendered_envs: dict[str, list[Obj]]
) -> None:
    """The FSx CSI driver mounts ``<dnsname>@tcp:/<mountname>`` of file system ``volumeHandle``;
    a placeholder or an unresolved CDK token there leaves every endpoint Pod in
    ContainerCreating. The patterns are the FSx API's own (botocore's service model)."""
    problems = []
    for pv in (o for o in rendered_envs[env] if o["kind"] == "PersistentVolume"):
        csi = pv["spec"].get("csi", {})
        if csi.get("driver") != FSX_DRIVER:
            continue
        attrs = csi.get("volumeAttributes", {})
        named = {
            "FileSystemId": csi.get("volumeHandle", ""),
            "DNSName": attrs.get("dnsname", ""),
            "LustreFileSystemMountName": attrs.get("mountname", ""),
        }
        for shape, value in named.items():
            if not _pattern(shape).fullmatch(value):
                problems.append(
                    f"PersistentVolume {pv['metadata']['name']}: {value!r} is no FSx {shape}"
                )
        if not attrs.get("dnsname", "").startswith(f"{csi.get('volumeHandle')}."):
            problems.append(
                f"PersistentVolume {pv['metadata']['name']}: dnsname is not the "
                "volumeHandle's file system"
            )
    assert not problems, "\n".join(problems)
    if env == "fsx":
        assert any(o["kind"] == "PersistentVolume" for o in rendered_envs[env])


@pytest.mark.parametrize("env", ENVS)
def test_no_rendered_value_is_an_unresolved_cdk_token(
    env: str, rendered_envs: dict[str, list[Obj]]
) -> None:
    """What kubectl would apply literally (tests/k8s/test_no_cdk_tokens.py has the writers)."""
    assert unresolved_tokens(yaml.safe_dump_all(rendered_envs[env])) == []
