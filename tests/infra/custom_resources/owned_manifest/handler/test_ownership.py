"""Ownership-aware apply and delete (infra/custom_resources/owned_manifest/handler/ownership.py)
against a cluster that has an owner.

Double: a local fake Kubernetes API server (tests/doubles/ownership_fake_kube.py, built on
tests/doubles/fake_kube.py) driven by the official ``kubernetes`` client, so the handler's real
URLs, verbs, content types and error statuses are exercised. The fake stores objects and does not
run admission or controllers (a deleted Namespace does not delete its contents).
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.custom_resources.owned_manifest.handler import index
from infra.custom_resources.owned_manifest.handler.cluster import Cluster
from infra.custom_resources.owned_manifest.handler.kinds import Ref
from infra.custom_resources.owned_manifest.handler.ownership import (
    OWNER_ANNOTATION,
    Check,
    OwnershipError,
    apply,
    delete,
)
from tests.doubles.ownership_fake_kube import ApplyFakeKube
from tests.support.owned_manifest import (
    CRD,
    KYVERNO_CRD,
    NS,
    OWNER,
    SC,
    cm,
    event,
    ns,
    owners_cluster,
    sc,
)


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
            cluster,
            OWNER,
            [ns("curvine"), ns("inference")],
            hints={
                "Namespace/inference": "set kvcache.endpoints.0.namespace to a namespace "
                "that does not exist"
            },
        )
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
        cluster,
        OWNER,
        [cm("a", "default", v="2")],
        previous=[cm("a", "default", v="1"), cm("b", "default"), cm("theirs", "default")],
    )
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
        "name": "master",
        "image": "curvine:1",
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "ports": [{"containerPort": p, "protocol": "TCP"} for p in ports],
        "volumeMounts": [{"name": v, "mountPath": f"/{v}"} for v in volumes],
    }
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


V1 = deployment(
    env={"A": "1", "B": "2"},
    volumes=["data", "cache"],
    ports=[8995, 9000],
    labels={"tier": "l2", "legacy": "yes"},
)
V2 = deployment(env={"A": "1"}, volumes=["data"], ports=[8995], labels={"tier": "l2"})


def _create_then_update(cluster: Cluster, old: dict[str, Any], new: dict[str, Any]) -> None:
    pid = index.on_event(event("Create", [old]), None, cluster=cluster)["PhysicalResourceId"]
    index.on_event(
        event(
            "Update",
            [new],
            PhysicalResourceId=pid,
            OldResourceProperties=event("Create", [old])["ResourceProperties"],
        ),
        None,
        cluster=cluster,
    )


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
        path,
        "PATCH",
        query_params=[("fieldManager", "kubectl-label")],
        header_params={"Content-Type": "application/merge-patch+json"},
        body={"metadata": {"labels": {"team": "ml"}}},
        response_types_map={200: "object"},
    )
    theirs = deployment(env={"B": "2"}, volumes=[], ports=[], labels={})
    del theirs["spec"]["selector"], theirs["spec"]["template"]["metadata"]
    ops.call_api(
        path,
        "PATCH",
        query_params=[("fieldManager", "ops"), ("force", "true")],
        header_params={"Content-Type": "application/apply-patch+yaml"},
        body=theirs,
        response_types_map={200: "object"},
    )
    _create_then_update(cluster, V1, V2)
    live = kube.objects[path]
    assert live["metadata"]["labels"] == {"tier": "l2", "team": "ml"}
    (container,) = live["spec"]["template"]["spec"]["containers"]
    assert container["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    assert [v["name"] for v in live["spec"]["template"]["spec"]["volumes"]] == ["data"]


def test_a_label_someone_set_again_to_our_value_is_still_ours_to_remove(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    """``kubectl label --overwrite legacy=yes team=ml`` (a merge patch) after our create: the API
    server gives that manager only what it changed (team), so legacy stays ours alone and our
    next version, which drops it, removes it; team, theirs, stays."""
    index.on_event(event("Create", [V1]), None, cluster=cluster)
    path = f"{DEPLOYMENTS}/curvine"
    kube.api_client().call_api(
        path,
        "PATCH",
        query_params=[("fieldManager", "kubectl-label")],
        header_params={"Content-Type": "application/merge-patch+json"},
        body={"metadata": {"labels": {"legacy": "yes", "team": "ml"}}},
        response_types_map={200: "object"},
    )
    _create_then_update(cluster, V1, V2)
    assert kube.objects[path]["metadata"]["labels"] == {"tier": "l2", "team": "ml"}


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
        apply(
            cluster,
            OWNER,
            [ns("curvine"), ns("lmcache")],
            hints={"Namespace/lmcache": "pick another namespace"},
        )
    assert str(err.value) == (
        "Namespace lmcache was created by someone else while this deploy ran (no "
        "hyperpod-kvcache/owner mark) and is not ours: pick another namespace; removed what this "
        "apply had created (Namespace curvine). It was left as it is."
    )
    assert kube.objects == {f"{NS}/lmcache": theirs}


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
    ebs = Check.of(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "name": "ebs-sc",
            "match": {"provisioner": "ebs.csi.aws.com"},
            "fix": "F",
        }
    )
    kyverno = Check.of(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "name": "clusterpolicies.kyverno.io",
            "fix": "F",
        }
    )
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
        apply(
            cluster,
            OWNER,
            [],
            present=[
                Check.of(
                    {
                        **{
                            "apiVersion": "storage.k8s.io/v1",
                            "kind": "StorageClass",
                            "name": "gp3",
                            "fix": "F",
                        }
                    }
                )
            ],
        )


def test_absent_check_refuses_an_installed_kyverno(kube: ApplyFakeKube, cluster: Cluster) -> None:
    owners_cluster(kube)
    crd = Check.of(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "name": "clusterpolicies.kyverno.io",
            "fix": "set kvcache.kyverno.install to false",
        }
    )
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
    kube.put(
        CRD,
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {
                "name": "clusterpolicies.kyverno.io",
                "annotations": {OWNER_ANNOTATION: OWNER},
            },
        },
    )
    assert apply(cluster, OWNER, [ns("curvine")], absent=[crd]) == ["updated Namespace curvine"]


@pytest.mark.parametrize(
    ("theirs", "more"),
    [
        (["inference", "kyverno"], " (and 1 more object(s) not ours)"),
        (["inference", "kyverno", "ml"], " (and 2 more object(s) not ours)"),
    ],
)
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
    done = delete(
        cluster, OWNER, [ns("inference"), ns("curvine"), cm("c", "curvine"), cm("gone", "curvine")]
    )
    assert done == [
        "ConfigMap curvine/gone is gone already",
        "deleted ConfigMap curvine/c",
        "deleted Namespace curvine",
        "left Namespace inference: not ours (hyperpod-kvcache/owner=absent)",
    ]
    assert kube.objects == before


def test_present_check_looks_in_the_namespace_it_names(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    kube.put(f"{NS}/kube-system/configmaps", cm("aws-auth", "kube-system"))
    aws_auth = Check.of(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "aws-auth",
            "namespace": "kube-system",
            "fix": "F",
        }
    )
    assert apply(cluster, OWNER, [ns("curvine")], present=[aws_auth]) == [
        "created Namespace curvine"
    ]
