"""Ownership-aware apply (infra/handlers/owned_manifest) against a cluster that has an owner.

Double: a local fake Kubernetes API server (tests/handlers/ownership_fake_kube.py, built on
tests/doubles/fake_kube.py) driven by the official ``kubernetes`` client, so the handler's real
URLs, verbs, content types and error statuses are exercised. The fake stores objects and does not
run admission or controllers (a deleted Namespace does not delete its contents).

``index.api_client`` is replaced by a recorder handing out a client for the fake where a test needs
to see which cluster ``on_event`` connects to (the real connection is covered by
test_owned_manifest_connect.py); an error with no Kubernetes Status body (a proxy's answer, a
reason-less status line) is raised from ``call_api``, because the fake always answers with one.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from kubernetes.client.exceptions import ApiException

from infra.handlers.owned_manifest import connect, index
from infra.handlers.owned_manifest.kinds import Ref, UnknownKind
from infra.handlers.owned_manifest.ownership import (
    OWNER_ANNOTATION,
    Check,
    Cluster,
    OwnershipError,
    apply,
    delete,
    stamped,
)
from infra.handlers.owned_manifest.volumes import VolumeWait
from tests.handlers.ownership_fake_kube import PVS, ApplyFakeKube, Provisioner, Received

OWNER = "hyperpod-kvcache-dev"
NS = "/api/v1/namespaces"
SC = "/apis/storage.k8s.io/v1/storageclasses"
CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def ns(name: str, owner: str | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if owner:
        meta["annotations"] = {OWNER_ANNOTATION: owner}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def sc(name: str, provisioner: str = "ebs.csi.aws.com", **params: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "parameters": params,
    }


def cm(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


@pytest.fixture
def kube() -> Iterator[ApplyFakeKube]:
    with ApplyFakeKube() as fake:
        yield fake


@pytest.fixture
def cluster(kube: ApplyFakeKube) -> Cluster:
    return Cluster(kube.api_client())


def owners_cluster(kube: ApplyFakeKube) -> dict[str, Any]:
    """What the cluster's owner had before us: namespaces, ebs-sc and Kyverno. Returns a copy."""
    kube.put(NS, ns("inference", team="ml"))
    kube.put(NS, ns("kyverno", team="platform"))
    kube.put(SC, sc("ebs-sc", type="gp2"))
    kube.put(CRD, {"apiVersion": "apiextensions.k8s.io/v1",
                   "kind": "CustomResourceDefinition",
                   "metadata": {"name": "clusterpolicies.kyverno.io"}})  # fmt: skip
    return json.loads(json.dumps(kube.objects))


def test_absent_objects_are_created_with_our_mark(kube: ApplyFakeKube, cluster: Cluster) -> None:
    done = apply(cluster, OWNER, [ns("curvine"), cm("c", "curvine", a="1")])
    assert done == ["created Namespace curvine", "created ConfigMap curvine/c"]
    for path in (f"{NS}/curvine", f"{NS}/curvine/configmaps/c"):
        assert kube.objects[path]["metadata"]["annotations"] == {OWNER_ANNOTATION: OWNER}
    assert kube.writes() == [
        ("PATCH", f"{NS}/curvine", "application/apply-patch+yaml"),
        ("PATCH", f"{NS}/curvine/configmaps/c", "application/apply-patch+yaml"),
    ]


def test_an_object_that_is_not_ours_is_refused_before_any_change(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    before = owners_cluster(kube)
    with pytest.raises(OwnershipError) as err:
        apply(
            cluster, OWNER, [ns("curvine"), ns("inference")],
            hints={"Namespace/inference": "set kvcache.endpoints.0.namespace to a namespace "
                   "that does not exist"},
        )  # fmt: skip
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("Namespace inference exists and is not ours")
    assert "kvcache.endpoints.0.namespace" in message and "Nothing was changed" in message
    assert kube.writes() == [] and kube.objects == before


def test_preflight_refuses_objects_of_later_applies(kube: ApplyFakeKube, cluster: Cluster) -> None:
    before = owners_cluster(kube)
    with pytest.raises(OwnershipError, match=r"^StorageClass ebs-sc exists and is not ours"):
        apply(cluster, OWNER, [ns("curvine")], preflight=[Ref.of(sc("ebs-sc"))])
    assert kube.writes() == [] and kube.objects == before


def test_another_environments_mark_is_not_ours(kube: ApplyFakeKube, cluster: Cluster) -> None:
    kube.put(NS, ns("curvine", owner="hyperpod-kvcache-prod"))
    with pytest.raises(OwnershipError, match="marked hyperpod-kvcache/owner=hyperpod-kvcache-prod"):
        apply(cluster, OWNER, [ns("curvine")])
    assert kube.writes() == []


def test_ours_is_updated_and_what_the_manifest_dropped_is_pruned(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    apply(cluster, OWNER, [cm("a", "default", v="1"), cm("b", "default")])
    kube.put(f"{NS}/default/configmaps", cm("theirs", "default"))
    done = apply(
        cluster, OWNER, [cm("a", "default", v="2")],
        previous=[cm("a", "default", v="1"), cm("b", "default"), cm("theirs", "default")],
    )  # fmt: skip
    assert done == [
        "updated ConfigMap default/a",
        "left ConfigMap default/theirs: not ours (hyperpod-kvcache/owner=absent)",
        "deleted ConfigMap default/b",
    ]
    assert kube.objects[f"{NS}/default/configmaps/a"]["data"] == {"v": "2"}
    assert f"{NS}/default/configmaps/theirs" in kube.objects
    writes = [(m, p) for m, p, _ in kube.writes()]
    assert writes[2:] == [
        ("PATCH", f"{NS}/default/configmaps/a"),
        ("DELETE", f"{NS}/default/configmaps/b"),
    ]


def test_server_side_apply_names_our_field_manager_and_forces(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    seen: list[str] = []
    original = cluster.api.call_api

    def spy(path: str, method: str, **kw: Any) -> Any:
        seen.append(f"{method} {path} {kw.get('query_params')}")
        return original(path, method, **kw)

    cluster.api.call_api = spy  # type: ignore[method-assign]
    kube.put(NS, ns("curvine", owner=OWNER))
    apply(cluster, OWNER, [ns("curvine")])
    assert f"PATCH {NS}/curvine [('fieldManager', 'hyperpod-kvcache'), ('force', 'true')]" in seen


DEPLOYMENTS = "/apis/apps/v1/namespaces/curvine/deployments"


def deployment(
    *, env: dict[str, str], volumes: list[str], ports: list[int], labels: dict[str, str]
) -> dict[str, Any]:
    """A Deployment as a chart renders it: env vars, volumes and their mounts, ports, labels."""
    container = {
        "name": "master", "image": "curvine:1",
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "ports": [{"containerPort": p, "protocol": "TCP"} for p in ports],
        "volumeMounts": [{"name": v, "mountPath": f"/{v}"} for v in volumes],
    }  # fmt: skip
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "curvine", "namespace": "curvine", "labels": labels},
        "spec": {
            "selector": {"matchLabels": {"app": "curvine"}},
            "template": {
                "metadata": {"labels": {"app": "curvine"}},
                "spec": {
                    "containers": [container],
                    "volumes": [{"name": v, "emptyDir": {}} for v in volumes],
                },
            },
        },
    }


V1 = deployment(env={"A": "1", "B": "2"}, volumes=["data", "cache"], ports=[8995, 9000],
                labels={"tier": "l2", "legacy": "yes"})  # fmt: skip
V2 = deployment(env={"A": "1"}, volumes=["data"], ports=[8995], labels={"tier": "l2"})


def _create_then_update(cluster: Cluster, old: dict[str, Any], new: dict[str, Any]) -> None:
    pid = index.on_event(event("Create", [old]), None, cluster=cluster)["PhysicalResourceId"]
    index.on_event(
        event("Update", [new], PhysicalResourceId=pid,
              OldResourceProperties=event("Create", [old])["ResourceProperties"]),
        None, cluster=cluster,
    )  # fmt: skip


def test_what_a_new_version_drops_is_gone_from_the_cluster(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    """An env var, a volume (and its mount), a port and a label the chart no longer renders
    leave the object on the cluster, not only the chart."""
    _create_then_update(cluster, V1, V2)
    live = kube.objects[f"{DEPLOYMENTS}/curvine"]
    (container,) = live["spec"]["template"]["spec"]["containers"]
    assert container["env"] == [{"name": "A", "value": "1"}]
    assert [m["name"] for m in container["volumeMounts"]] == ["data"]
    assert [v["name"] for v in live["spec"]["template"]["spec"]["volumes"]] == ["data"]
    assert container["ports"] == [{"containerPort": 8995, "protocol": "TCP"}]
    assert live["metadata"]["labels"] == {"tier": "l2"}


def test_only_our_field_manager_owns_what_we_created(kube: ApplyFakeKube, cluster: Cluster) -> None:
    """Every write, the create included, is a forced server-side apply by hyperpod-kvcache:
    no other manager (a POST's Update entry) co-owns a field of ours."""
    index.on_event(event("Create", [V1]), None, cluster=cluster)
    path = f"{DEPLOYMENTS}/curvine"
    assert list(kube.managers(path)) == [("hyperpod-kvcache", "Apply")]
    assert [(r.method, r.header("Content-Type")) for r in kube.received if r.method != "GET"] == [
        ("PATCH", ["application/apply-patch+yaml"])
    ]


def test_fields_another_manager_set_on_our_object_stay(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    """A label someone added with ``kubectl label`` (a merge patch) and an env var someone else
    also applies (their own server-side apply) are theirs too: our next version leaves out both
    and both stay."""
    index.on_event(event("Create", [V1]), None, cluster=cluster)
    path = f"{DEPLOYMENTS}/curvine"
    ops = kube.api_client()
    ops.call_api(
        path, "PATCH", query_params=[("fieldManager", "kubectl-label")],
        header_params={"Content-Type": "application/merge-patch+json"},
        body={"metadata": {"labels": {"team": "ml"}}}, response_types_map={200: "object"},
    )  # fmt: skip
    theirs = deployment(env={"B": "2"}, volumes=[], ports=[], labels={})
    del theirs["spec"]["selector"], theirs["spec"]["template"]["metadata"]
    ops.call_api(
        path, "PATCH", query_params=[("fieldManager", "ops"), ("force", "true")],
        header_params={"Content-Type": "application/apply-patch+yaml"}, body=theirs,
        response_types_map={200: "object"},
    )  # fmt: skip
    _create_then_update(cluster, V1, V2)
    live = kube.objects[path]
    assert live["metadata"]["labels"] == {"tier": "l2", "team": "ml"}
    (container,) = live["spec"]["template"]["spec"]["containers"]
    assert container["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    assert [v["name"] for v in live["spec"]["template"]["spec"]["volumes"]] == ["data"]


def test_an_object_created_between_our_read_and_our_create_is_left_as_it_is(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    """Someone creates the namespace after the ownership check read it absent: the create does
    not take it over (no mark, no field of ours), and what this apply created is removed."""
    theirs = ns("lmcache", team="ml")
    read = cluster.get

    def get_then_theirs_appears(ref: Ref) -> dict[str, Any] | None:
        found = read(ref)
        if ref.name == "lmcache" and found is None and f"{NS}/lmcache" not in kube.objects:
            kube.put(NS, theirs)
        return found

    cluster.get = get_then_theirs_appears  # type: ignore[method-assign]
    with pytest.raises(OwnershipError) as err:
        apply(cluster, OWNER, [ns("curvine"), ns("lmcache")],
              hints={"Namespace/lmcache": "pick another namespace"})  # fmt: skip
    assert str(err.value) == (
        "Namespace lmcache was created by someone else while this deploy ran (no "
        "hyperpod-kvcache/owner mark) and is not ours: pick another namespace; removed what this "
        "apply had created (Namespace curvine). It was left as it is."
    )
    assert kube.objects == {f"{NS}/lmcache": theirs}


def sent(kube: ApplyFakeKube, method: str) -> list[Received]:
    return [r for r in kube.received if r.method == method]


def test_every_request_asks_for_json_and_each_write_names_its_body_type(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    """The API server answers 406 to an Accept it cannot serve and 415 to a body type it cannot
    decode; a second Content-Type line leaves the type of an apply to whichever line it reads."""
    kube.put(NS, ns("curvine", owner=OWNER))
    apply(cluster, OWNER, [ns("curvine"), cm("c", "curvine")])
    delete(cluster, OWNER, [cm("c", "curvine")])
    assert [r.header("Accept") for r in kube.received] == [["application/json"]] * 6
    assert [(r.method, r.path, r.header("Content-Type")) for r in kube.received
            if r.method != "GET"] == [
        ("PATCH", f"{NS}/curvine", ["application/apply-patch+yaml"]),
        ("PATCH", f"{NS}/curvine/configmaps/c", ["application/apply-patch+yaml"]),
        ("DELETE", f"{NS}/curvine/configmaps/c", ["application/json"]),
    ]  # fmt: skip


def test_delete_asks_for_background_propagation(kube: ApplyFakeKube, cluster: Cluster) -> None:
    """Without a propagationPolicy the server uses each kind's default, which for a batch/v1 Job
    is to orphan its Pods; Background has the garbage collector remove dependents too."""
    apply(cluster, OWNER, [ns("curvine"), cm("c", "curvine")])
    delete(cluster, OWNER, [ns("curvine"), cm("c", "curvine")])
    background = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
    assert [(r.path, r.body) for r in sent(kube, "DELETE")] == [
        (f"{NS}/curvine/configmaps/c", background),
        (f"{NS}/curvine", background),
    ]
    assert kube.objects == {}


def test_every_request_gives_up_after_30_seconds(
    kube: ApplyFakeKube, cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stalled API server fails the call, and the deploy with a message, well inside the
    function's 5 minutes, instead of hanging it until Lambda kills it without one."""
    pool = cluster.api.rest_client.pool_manager
    original = pool.request
    timeouts: list[tuple[str, float | None]] = []

    def request(method: str, url: str, **kw: Any) -> Any:
        timeouts.append((method, kw["timeout"].total if kw.get("timeout") else None))
        return original(method, url, **kw)

    monkeypatch.setattr(pool, "request", request)
    kube.put(NS, ns("curvine", owner=OWNER))
    apply(cluster, OWNER, [ns("curvine"), cm("c", "curvine")])
    delete(cluster, OWNER, [cm("c", "curvine")])
    assert timeouts == [("GET", 30), ("GET", 30), ("PATCH", 30), ("PATCH", 30), ("GET", 30),
                        ("DELETE", 30)]  # fmt: skip


def test_our_mark_joins_the_objects_own_annotations(kube: ApplyFakeKube, cluster: Cluster) -> None:
    """A server-side apply removes what this manager set before and left out, so the update must
    carry the object's annotations as well as ours."""
    obj = cm("c", "default")
    obj["metadata"]["annotations"] = {"team": "ml"}
    mine = {"team": "ml", OWNER_ANNOTATION: OWNER}
    apply(cluster, OWNER, [obj])
    apply(cluster, OWNER, [obj])
    assert [r.body["metadata"]["annotations"] for r in sent(kube, "PATCH")] == [mine, mine]
    assert kube.objects[f"{NS}/default/configmaps/c"]["metadata"]["annotations"] == mine
    assert obj["metadata"]["annotations"] == {"team": "ml"}


def test_a_namespaced_object_without_a_namespace_goes_to_default(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    """As kubectl does: a ConfigMap with no namespace is the default namespace's."""
    bare = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert apply(cluster, OWNER, [bare]) == ["created ConfigMap default/c"]
    assert [r.path for r in sent(kube, "PATCH")] == [f"{NS}/default/configmaps/c"]
    assert f"{NS}/default/configmaps/c" in kube.objects


def test_a_kind_without_a_known_plural_is_refused_naming_the_fix() -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    with pytest.raises(UnknownKind) as err:
        Ref.of(widget)
    assert str(err.value) == (
        "kind Widget is not in infra/handlers/owned_manifest/kinds.py: add its plural and scope "
        "there"
    )


def test_a_failed_create_removes_what_this_apply_created(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    kube.fail[("PATCH", f"{NS}/curvine/configmaps/c")] = 422
    with pytest.raises(OwnershipError) as err:
        apply(cluster, OWNER, [ns("curvine"), cm("c", "curvine")])
    assert str(err.value).startswith("create ConfigMap curvine/c failed: HTTP 422")
    assert "removed what this apply had created (Namespace curvine)" in str(err.value)
    assert f"{NS}/curvine" not in kube.objects


def test_present_checks_reuse_an_existing_storage_class_and_kyverno(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    before = owners_cluster(kube)
    ebs = Check.of({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "name": "ebs-sc",
                    "match": {"provisioner": "ebs.csi.aws.com"}, "fix": "F"})  # fmt: skip
    kyverno = Check.of({"apiVersion": "apiextensions.k8s.io/v1",
                        "kind": "CustomResourceDefinition",
                        "name": "clusterpolicies.kyverno.io", "fix": "F"})  # fmt: skip
    apply(cluster, OWNER, [ns("curvine")], present=[ebs, kyverno])
    assert {k: v for k, v in kube.objects.items() if k in before} == before
    kube.objects[f"{SC}/ebs-sc"]["provisioner"] = "kubernetes.io/aws-ebs"
    with pytest.raises(OwnershipError) as err:
        apply(cluster, OWNER, [ns("curvine")], present=[ebs])
    assert str(err.value) == (
        "StorageClass ebs-sc has provisioner 'kubernetes.io/aws-ebs', not 'ebs.csi.aws.com': F. "
        "Nothing was changed."
    )
    with pytest.raises(OwnershipError, match=r"^StorageClass gp3 does not exist: F"):
        apply(cluster, OWNER, [], present=[Check.of({**{
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "name": "gp3",
            "fix": "F"}})])  # fmt: skip


def test_absent_check_refuses_an_installed_kyverno(kube: ApplyFakeKube, cluster: Cluster) -> None:
    owners_cluster(kube)
    crd = Check.of({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "name": "clusterpolicies.kyverno.io",
                    "fix": "set kvcache.kyverno.install to false"})  # fmt: skip
    with pytest.raises(OwnershipError, match=r"clusterpolicies\.kyverno\.io exists: set kvcache"):
        apply(cluster, OWNER, [ns("curvine")], absent=[crd])
    assert kube.writes() == []


def test_absent_check_passes_when_the_object_is_missing_or_ours(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    """Only someone else's Kyverno is in the way; ours (a Create replacing an earlier one that
    installed it) is not."""
    crd = Check.of({**KYVERNO_CRD, "fix": "F"})
    assert apply(cluster, OWNER, [ns("curvine")], absent=[crd]) == ["created Namespace curvine"]
    kube.put(CRD, {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": "clusterpolicies.kyverno.io",
                                "annotations": {OWNER_ANNOTATION: OWNER}}})  # fmt: skip
    assert apply(cluster, OWNER, [ns("curvine")], absent=[crd]) == ["updated Namespace curvine"]


@pytest.mark.parametrize(
    ("theirs", "more"),
    [(["inference", "kyverno"], " (and 1 more object(s) not ours)"),
     (["inference", "kyverno", "ml"], " (and 2 more object(s) not ours)")],
)  # fmt: skip
def test_a_refusal_counts_the_other_objects_that_are_not_ours(
    kube: ApplyFakeKube, cluster: Cluster, theirs: list[str], more: str
) -> None:
    for name in theirs:
        kube.put(NS, ns(name))
    with pytest.raises(OwnershipError) as err:
        apply(cluster, OWNER, [ns("curvine"), *(ns(name) for name in theirs)])
    assert str(err.value) == (
        "Namespace inference exists and is not ours (has no hyperpod-kvcache/owner mark): rename "
        f"ours in config or remove theirs{more}. Nothing was changed."
    )
    assert kube.writes() == []


def test_delete_removes_only_ours_and_gone_is_done(kube: ApplyFakeKube, cluster: Cluster) -> None:
    before = owners_cluster(kube)
    apply(cluster, OWNER, [ns("curvine"), cm("c", "curvine")])
    done = delete(cluster, OWNER, [ns("inference"), ns("curvine"), cm("c", "curvine"),
                                   cm("gone", "curvine")])  # fmt: skip
    assert done == [
        "ConfigMap curvine/gone is gone already",
        "deleted ConfigMap curvine/c",
        "deleted Namespace curvine",
        "left Namespace inference: not ours (hyperpod-kvcache/owner=absent)",
    ]
    assert kube.objects == before


PROD = "hyperpod-kvcache-prod"
PVCS = f"{NS}/inference/persistentvolumeclaims"
POLICIES = "/apis/kyverno.io/v1/clusterpolicies"


def pvc(name: str, namespace: str) -> dict[str, Any]:
    spec = {"accessModes": ["ReadWriteMany"], "storageClassName": "curvine-sc"}
    meta = {"name": name, "namespace": namespace}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def policy(name: str) -> dict[str, Any]:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": name},
            "spec": {"rules": []}}  # fmt: skip


def prods(kube: ApplyFakeKube) -> list[dict[str, Any]]:
    """prod's Namespace, L2 claim and L2 policy on the cluster dev shares with it: the same
    names as dev's, marked by prod. Returns dev's manifest of the same objects."""
    mine = [ns("inference"), pvc("curvine-pvc", "inference"), policy("kvcache-l2")]
    for collection, obj in zip((NS, PVCS, POLICIES), mine, strict=True):
        kube.put(collection, stamped(obj, PROD))
    return mine


def left_by_prod(ref: str) -> str:
    return f"left {ref}: not ours (hyperpod-kvcache/owner={PROD})"


def test_delete_leaves_the_same_named_objects_another_environment_marked(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    mine = prods(kube)
    before = json.loads(json.dumps(kube.objects))
    assert delete(cluster, OWNER, mine) == [
        left_by_prod("ClusterPolicy kvcache-l2"),
        left_by_prod("PersistentVolumeClaim inference/curvine-pvc"),
        left_by_prod("Namespace inference"),
    ]
    assert kube.writes() == [] and kube.objects == before


def test_a_prune_leaves_the_same_named_objects_another_environment_marked(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    """An update whose new manifest drops objects that, on the cluster, are prod's."""
    mine = prods(kube)
    before = json.loads(json.dumps(kube.objects))
    done = apply(cluster, OWNER, [cm("c", "default")], previous=[*mine, cm("c", "default")])
    assert done[1:] == [
        left_by_prod("ClusterPolicy kvcache-l2"),
        left_by_prod("PersistentVolumeClaim inference/curvine-pvc"),
        left_by_prod("Namespace inference"),
    ]
    assert {k: v for k, v in kube.objects.items() if k in before} == before
    assert [m for m, _, _ in kube.writes()] == ["PATCH"]  # the ConfigMap alone


def test_the_rollback_of_a_refused_update_leaves_the_other_environments_object(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    """dev's update adds a namespace prod has: refused. CloudFormation's rollback is an update
    back to the old manifest, whose prune would drop that namespace: it is prod's, and stays."""
    prods(kube)
    before = json.loads(json.dumps(kube.objects))
    old = event("Create", [ns("curvine")])
    index.on_event(old, None, cluster=cluster)
    failed = event("Update", [ns("curvine"), ns("inference")], PhysicalResourceId="p",
                   OldResourceProperties=old["ResourceProperties"])  # fmt: skip
    with pytest.raises(OwnershipError, match=r"^Namespace inference exists and is not ours"):
        index.on_event(failed, None, cluster=cluster)
    rollback = event("Update", [ns("curvine")], PhysicalResourceId="p",
                     OldResourceProperties=failed["ResourceProperties"])  # fmt: skip
    index.on_event(rollback, None, cluster=cluster)
    assert {k: v for k, v in kube.objects.items() if k in before} == before
    assert not [w for w in kube.writes() if w[1] in before]


class FakeTime:
    """The volume wait's clock: sleeping moves it on, nothing really sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def wait(self, seconds: float = 180.0) -> VolumeWait:
        return VolumeWait(seconds=seconds, interval=5.0, clock=lambda: self.now, sleep=self.sleep)


VOLUME = f"{PVS}/pvc-inference-curvine-pvc"


def test_delete_returns_once_the_claims_volume_is_deleted(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    """The claim goes first on delete so that its provisioner can still delete the volume: the
    delete is over when the volume is gone, not when the claim was asked to go."""
    provisioner = Provisioner(kube, after_reads=1)
    layer = [ns("inference"), pvc("curvine-pvc", "inference")]
    apply(cluster, OWNER, layer)
    assert kube.objects[VOLUME]["spec"]["claimRef"]["name"] == "curvine-pvc"
    done = delete(cluster, OWNER, layer)
    assert provisioner.volumes() == {}
    assert done[-1] == (
        "PersistentVolume pvc-inference-curvine-pvc of claim inference/curvine-pvc was deleted "
        "by its provisioner (0s)"
    )


def test_the_volume_wait_polls_until_the_provisioner_deletes_it(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    provisioner = Provisioner(kube, after_reads=4)
    clock = FakeTime()
    apply(cluster, OWNER, [pvc("curvine-pvc", "inference")])
    done = delete(cluster, OWNER, [pvc("curvine-pvc", "inference")], clock.wait())
    assert provisioner.volumes() == {} and clock.slept == [5.0] * 3
    assert done[-1].endswith("was deleted by its provisioner (15s)")


def test_a_volume_whose_provisioner_is_gone_is_logged_and_left_after_the_wait(
    kube: ApplyFakeKube, cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """The CSI controller went first (a stack that deleted side by side): the delete does not
    fail or hang, it says which volume is left and where to look."""
    caplog.set_level(logging.INFO, logger=index.__name__)
    provisioner = Provisioner(kube, running=lambda kube: False)
    clock = FakeTime()
    layer = [pvc("curvine-pvc", "inference")]
    index.on_event(event("Create", layer), None, cluster=cluster)
    e = event("Delete", layer, PhysicalResourceId="p")
    assert index.on_event(e, None, cluster=cluster, wait=clock.wait(60)) == {
        "PhysicalResourceId": "p"
    }
    assert list(provisioner.volumes()) == [VOLUME] and sum(clock.slept) == 60
    assert logged(caplog)[-1] == (
        logging.INFO,
        "PersistentVolume pvc-inference-curvine-pvc of claim inference/curvine-pvc is still "
        "there after 60s: its provisioner has not deleted it; check `kubectl get pv "
        "pvc-inference-curvine-pvc` and the CSI controller's log (left in place)",
    )


def test_a_retained_volume_is_not_waited_for(kube: ApplyFakeKube, cluster: Cluster) -> None:
    """A static volume with reclaim policy Retain (the warm cache kept on purpose) stays by
    design; a claim left to another environment has nothing of ours to wait for either."""
    static = {"apiVersion": "v1", "kind": "PersistentVolume",
              "metadata": {"name": "curvine-l2-static"},
              "spec": {"persistentVolumeReclaimPolicy": "Retain",
                       "claimRef": {"namespace": "inference", "name": "curvine-pvc"}}}  # fmt: skip
    kube.put(PVS, static)
    bound = pvc("curvine-pvc", "inference")
    bound["spec"]["volumeName"] = "curvine-l2-static"
    apply(cluster, OWNER, [bound])
    clock = FakeTime()
    assert delete(cluster, OWNER, [bound], clock.wait()) == [
        "deleted PersistentVolumeClaim inference/curvine-pvc"
    ]
    assert clock.slept == [] and f"{PVS}/curvine-l2-static" in kube.objects


def test_delete_does_not_fail_when_the_api_refuses(kube: ApplyFakeKube, cluster: Cluster) -> None:
    apply(cluster, OWNER, [ns("curvine")])
    kube.fail[("DELETE", f"{NS}/curvine")] = 403
    assert delete(cluster, OWNER, [ns("curvine")]) == [
        "could not delete Namespace curvine: HTTP 403 injected failure; left in place"
    ]


def event(kind: str, objects: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    props = {"ClusterName": "team-eks", "Owner": OWNER, "Manifest": json.dumps(objects)}
    return {"RequestType": kind, "LogicalResourceId": "K8s00namespaces",
            "ResourceProperties": props, **extra}  # fmt: skip


def test_on_event_lifecycle(kube: ApplyFakeKube, cluster: Cluster) -> None:
    before = owners_cluster(kube)
    created = index.on_event(event("Create", [ns("curvine")]), None, cluster=cluster)
    pid = created["PhysicalResourceId"]
    assert pid == f"owned-manifest:{OWNER}:K8s00namespaces"
    updated = index.on_event(
        event("Update", [ns("curvine", x="1")], PhysicalResourceId=pid,
              OldResourceProperties=event("Create", [ns("curvine")])["ResourceProperties"]),
        None, cluster=cluster,
    )  # fmt: skip
    assert updated == {"PhysicalResourceId": pid}
    assert kube.objects[f"{NS}/curvine"]["metadata"]["labels"] == {"x": "1"}
    deleted = index.on_event(
        event("Delete", [ns("curvine"), ns("inference")], PhysicalResourceId=pid),
        None, cluster=cluster,
    )  # fmt: skip
    assert deleted == {"PhysicalResourceId": pid}
    assert kube.objects == before


def test_delete_of_a_gone_or_unreachable_cluster_succeeds(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=index.__name__)

    def gone(session: Any, name: str) -> Any:
        raise connect.ClusterGone(name)

    monkeypatch.setattr(index, "api_client", gone)
    e = event("Delete", [ns("curvine")], PhysicalResourceId="p")
    assert index.on_event(e, None) == {"PhysicalResourceId": "p"}

    def unreachable(session: Any, name: str) -> Any:
        raise ConnectionError("no route to host")

    monkeypatch.setattr(index, "api_client", unreachable)
    assert index.on_event(e, None) == {"PhysicalResourceId": "p"}
    assert logged(caplog) == [
        (logging.INFO, "EKS cluster team-eks is gone: nothing to delete"),
        (logging.WARNING,
         "cannot reach EKS cluster team-eks (no route to host): objects left in place"),
    ]  # fmt: skip


def test_token_is_a_presigned_get_caller_identity_for_the_cluster() -> None:
    session = boto3.session.Session(
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret", region_name="us-west-2"
    )
    token = connect.token(session, "team-eks", "us-west-2")
    assert token.startswith("k8s-aws-v1.") and "=" not in token
    raw = token.removeprefix("k8s-aws-v1.")
    url = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode()
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    assert parts.netloc == "sts.us-west-2.amazonaws.com"
    assert query["Action"] == ["GetCallerIdentity"]
    assert "x-k8s-aws-id" in query["X-Amz-SignedHeaders"][0].split(";")
    assert query["X-Amz-Expires"] == [str(connect.TOKEN_SECONDS)]


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == index.__name__]


def connect_to(kube: ApplyFakeKube, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, str]]:
    """Replace the EKS connection by one to ``kube``; returns the (session, name) it was asked."""
    calls: list[tuple[Any, str]] = []

    def api_client(session: Any, name: str) -> Any:
        calls.append((session, name))
        return kube.api_client()

    monkeypatch.setattr(index, "api_client", api_client)
    return calls


def test_on_event_connects_to_the_cluster_named_in_the_properties(
    kube: ApplyFakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = connect_to(kube, monkeypatch)
    index.on_event(event("Create", [ns("curvine")]), None)
    assert kube.objects[f"{NS}/curvine"]["metadata"]["annotations"] == {OWNER_ANNOTATION: OWNER}
    index.on_event(event("Delete", [ns("curvine")], PhysicalResourceId="p"), None)
    assert f"{NS}/curvine" not in kube.objects
    assert [name for _, name in calls] == ["team-eks", "team-eks"]
    assert all(isinstance(session, boto3.session.Session) for session, _ in calls)


@pytest.mark.parametrize("owner", [None, ""])
def test_create_without_an_owner_is_refused(
    kube: ApplyFakeKube, cluster: Cluster, owner: str | None
) -> None:
    e = event("Create", [ns("curvine")])
    if owner is None:
        del e["ResourceProperties"]["Owner"]
    else:
        e["ResourceProperties"]["Owner"] = owner
    with pytest.raises(OwnershipError) as err:
        index.on_event(e, None, cluster=cluster)
    assert str(err.value) == "Owner is empty: the construct must pass the owner value"
    assert kube.requests == []


def test_update_keeps_the_physical_id_and_prunes_what_the_old_manifest_had(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    old = event("Create", [ns("a"), ns("b")])
    index.on_event(old, None, cluster=cluster)
    done = index.on_event(
        event("Update", [ns("a")], PhysicalResourceId="id-cloudformation-has",
              OldResourceProperties=old["ResourceProperties"]),
        None, cluster=cluster,
    )  # fmt: skip
    assert done == {"PhysicalResourceId": "id-cloudformation-has"}
    assert f"{NS}/a" in kube.objects and f"{NS}/b" not in kube.objects


def test_update_does_not_prune_by_a_manifest_another_owner_applied(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    kube.put(NS, ns("shared", owner=OWNER))  # ours, through another resource
    old = {**event("Create", [ns("shared")])["ResourceProperties"], "Owner": "hyperpod-kvcache-old"}
    index.on_event(
        event("Update", [ns("a")], PhysicalResourceId="p", OldResourceProperties=old),
        None, cluster=cluster,
    )  # fmt: skip
    assert f"{NS}/shared" in kube.objects and f"{NS}/a" in kube.objects


KYVERNO_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "name": "clusterpolicies.kyverno.io",
    "fix": "set kvcache.kyverno.install to false",
}
EBS_SC = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "ebs-sc"}}


@pytest.mark.parametrize(
    ("prop", "value", "manifest", "message"),
    [
        ("Preflight", [EBS_SC],
         [ns("curvine")],
         "StorageClass ebs-sc exists and is not ours (has no hyperpod-kvcache/owner mark): "
         "rename ours in config or remove theirs. Nothing was changed."),
        ("Present",
         [{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "name": "gp3",
           "fix": "create gp3 first"}],
         [ns("curvine")],
         "StorageClass gp3 does not exist: create gp3 first. Nothing was changed."),
        ("Absent", [KYVERNO_CRD], [ns("curvine")],
         "CustomResourceDefinition clusterpolicies.kyverno.io exists: "
         "set kvcache.kyverno.install to false. Nothing was changed."),
        ("Hints", {"Namespace/inference": "pick another namespace"},
         [ns("curvine"), ns("inference")],
         "Namespace inference exists and is not ours (has no hyperpod-kvcache/owner mark): "
         "pick another namespace. Nothing was changed."),
    ],
)  # fmt: skip
def test_create_refuses_with_the_message_cloudformation_shows(
    kube: ApplyFakeKube,
    cluster: Cluster,
    prop: str,
    value: Any,
    manifest: list[dict[str, Any]],
    message: str,
) -> None:
    before = owners_cluster(kube)
    e = event("Create", manifest)
    e["ResourceProperties"][prop] = json.dumps(value)
    with pytest.raises(OwnershipError) as err:
        index.on_event(e, None, cluster=cluster)
    assert str(err.value) == message
    assert kube.writes() == [] and kube.objects == before


def test_absent_checks_apply_to_create_only(kube: ApplyFakeKube, cluster: Cluster) -> None:
    owners_cluster(kube)  # Kyverno is installed, as after a Create that installed it
    e = event("Update", [ns("curvine")], PhysicalResourceId="p", OldResourceProperties={})
    e["ResourceProperties"]["Absent"] = json.dumps([KYVERNO_CRD])
    assert index.on_event(e, None, cluster=cluster) == {"PhysicalResourceId": "p"}
    assert f"{NS}/curvine" in kube.objects


def test_what_create_and_delete_did_is_logged(
    kube: ApplyFakeKube, cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=index.__name__)
    owners_cluster(kube)
    index.on_event(event("Create", [ns("curvine")]), None, cluster=cluster)
    index.on_event(
        event("Delete", [ns("inference"), ns("curvine")], PhysicalResourceId="p"),
        None, cluster=cluster,
    )  # fmt: skip
    assert logged(caplog) == [
        (logging.INFO, "created Namespace curvine"),
        (logging.INFO, "deleted Namespace curvine"),
        (logging.INFO, "left Namespace inference: not ours (hyperpod-kvcache/owner=absent)"),
    ]


def test_present_check_looks_in_the_namespace_it_names(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    kube.put(f"{NS}/kube-system/configmaps", cm("aws-auth", "kube-system"))
    aws_auth = Check.of({"apiVersion": "v1", "kind": "ConfigMap", "name": "aws-auth",
                         "namespace": "kube-system", "fix": "F"})  # fmt: skip
    assert apply(cluster, OWNER, [ns("curvine")], present=[aws_auth]) == [
        "created Namespace curvine"
    ]


def test_a_failed_first_create_has_nothing_to_undo(kube: ApplyFakeKube, cluster: Cluster) -> None:
    kube.fail[("PATCH", f"{NS}/curvine")] = 422
    with pytest.raises(OwnershipError) as err:
        apply(cluster, OWNER, [ns("curvine")])
    assert str(err.value) == (
        "create Namespace curvine failed: HTTP 422 injected failure. Fix the object in the chart "
        "or the cluster, then deploy again."
    )


def test_undo_names_every_object_it_removed(kube: ApplyFakeKube, cluster: Cluster) -> None:
    kube.fail[("PATCH", f"{NS}/curvine/configmaps/c")] = 422
    kube.put(NS, ns("curvine", owner=OWNER))
    with pytest.raises(OwnershipError) as err:
        apply(cluster, OWNER, [ns("curvine"), ns("lmcache"), ns("redis"), cm("c", "curvine")])
    assert "; removed what this apply had created (Namespace lmcache, Namespace redis). " in str(
        err.value
    )
    assert sorted(kube.objects) == [f"{NS}/curvine"]


def refuse_deletes(cluster: Cluster, error: ApiException) -> None:
    original = cluster.api.call_api

    def call_api(path: str, method: str, **kw: Any) -> Any:
        if method == "DELETE":
            raise error
        return original(path, method, **kw)

    cluster.api.call_api = call_api  # type: ignore[method-assign]


def api_error(status: int, reason: str | None, body: str | None) -> ApiException:
    error = ApiException(status=status, reason=reason)
    error.body = body
    return error


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (api_error(502, "Bad Gateway", "<html>upstream gone</html>"), "HTTP 502 Bad Gateway"),
        (api_error(400, "Bad Request", json.dumps({"message": "denied:\nno"})),
         "HTTP 400 denied: no"),
        (api_error(500, None, None), "HTTP 500 "),
    ],
)  # fmt: skip
def test_a_refused_delete_says_why_on_one_line(
    kube: ApplyFakeKube, cluster: Cluster, error: ApiException, said: str
) -> None:
    kube.put(NS, ns("curvine", owner=OWNER))
    refuse_deletes(cluster, error)
    assert delete(cluster, OWNER, [ns("curvine")]) == [
        f"could not delete Namespace curvine: {said}; left in place"
    ]


def test_an_object_deleted_meanwhile_is_gone_already(kube: ApplyFakeKube, cluster: Cluster) -> None:
    kube.put(NS, ns("curvine", owner=OWNER))
    kube.fail[("DELETE", f"{NS}/curvine")] = 404  # found by GET, gone by DELETE
    assert delete(cluster, OWNER, [ns("curvine")]) == ["Namespace curvine is gone already"]


def test_undo_says_which_created_objects_it_could_not_remove(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    kube.fail[("PATCH", f"{NS}/curvine/configmaps/c")] = 422
    kube.fail[("DELETE", f"{NS}/lmcache")] = 403
    with pytest.raises(OwnershipError) as err:
        apply(cluster, OWNER, [ns("curvine"), ns("lmcache"), cm("c", "curvine")])
    assert str(err.value) == (
        "create ConfigMap curvine/c failed: HTTP 422 injected failure; removed what this apply "
        "had created (Namespace curvine); could not remove what it created: Namespace lmcache "
        "(HTTP 403 injected failure). Fix the object in the chart or the cluster, then deploy "
        "again."
    )
    assert sorted(kube.objects) == [f"{NS}/lmcache"]


def test_undo_lists_what_it_could_not_remove_in_creation_order(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    kube.fail[("PATCH", f"{NS}/curvine/configmaps/c")] = 422
    kube.fail[("DELETE", f"{NS}/lmcache")] = 403
    kube.fail[("DELETE", f"{NS}/redis")] = 403
    kube.put(NS, ns("curvine", owner=OWNER))
    with pytest.raises(OwnershipError) as err:
        apply(cluster, OWNER, [ns("curvine"), ns("lmcache"), ns("redis"), cm("c", "curvine")])
    assert str(err.value) == (
        "create ConfigMap curvine/c failed: HTTP 422 injected failure; could not remove what it "
        "created: Namespace lmcache (HTTP 403 injected failure), Namespace redis (HTTP 403 "
        "injected failure). Fix the object in the chart or the cluster, then deploy again."
    )
    assert sorted(kube.objects) == [f"{NS}/curvine", f"{NS}/lmcache", f"{NS}/redis"]
