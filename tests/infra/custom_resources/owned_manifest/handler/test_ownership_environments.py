"""Two environments on one cluster: objects of the same name marked by the other environment are
left alone by delete, prune and rollback.

Double: a local fake Kubernetes API server (tests/doubles/ownership_fake_kube.py, built on
tests/doubles/fake_kube.py) driven by the official ``kubernetes`` client, so the handler's real
URLs, verbs, content types and error statuses are exercised. The fake stores objects and does not
run admission or controllers (a deleted Namespace does not delete its contents).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.custom_resources.owned_manifest.handler import index
from infra.custom_resources.owned_manifest.handler.cluster import Cluster
from infra.custom_resources.owned_manifest.handler.ownership import (
    OwnershipError,
    apply,
    delete,
    stamped,
)
from tests.doubles.ownership_fake_kube import ApplyFakeKube
from tests.support.owned_manifest import NS, OWNER, cm, event, ns, pvc

PROD = "hyperpod-kvcache-prod"
PVCS = f"{NS}/inference/persistentvolumeclaims"
POLICIES = "/apis/kyverno.io/v1/clusterpolicies"


def policy(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kyverno.io/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": name},
        "spec": {"rules": []},
    }


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
    failed = event(
        "Update",
        [ns("curvine"), ns("inference")],
        PhysicalResourceId="p",
        OldResourceProperties=old["ResourceProperties"],
    )
    with pytest.raises(OwnershipError, match=r"^Namespace inference exists and is not ours"):
        index.on_event(failed, None, cluster=cluster)
    rollback = event(
        "Update",
        [ns("curvine")],
        PhysicalResourceId="p",
        OldResourceProperties=failed["ResourceProperties"],
    )
    index.on_event(rollback, None, cluster=cluster)
    assert {k: v for k, v in kube.objects.items() if k in before} == before
    assert not [w for w in kube.writes() if w[1] in before]
