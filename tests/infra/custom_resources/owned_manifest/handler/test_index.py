"""The owned-manifest handler's entry point (index.on_event): create, update and delete as
CloudFormation sends them, the checks it runs before changing anything, and what it logs.

Double: a local fake Kubernetes API server (tests/doubles/ownership_fake_kube.py, built on
tests/doubles/fake_kube.py) driven by the official ``kubernetes`` client, so the handler's real
URLs, verbs, content types and error statuses are exercised. The fake stores objects and does not
run admission or controllers (a deleted Namespace does not delete its contents).

``index.api_client`` is replaced by a recorder handing out a client for the fake where a test needs
to see which cluster ``on_event`` connects to (the real connection is covered by
test_connect.py); an error with no Kubernetes Status body (a proxy's answer, a reason-less status
line) is raised from ``call_api``, because the fake always answers with one.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import boto3
import pytest

from infra.custom_resources.owned_manifest.handler import connect, index
from infra.custom_resources.owned_manifest.handler.cluster import Cluster
from infra.custom_resources.owned_manifest.handler.ownership import (
    OWNER_ANNOTATION,
    OwnershipError,
)
from tests.doubles.ownership_fake_kube import ApplyFakeKube
from tests.support.logs import assert_lines_say
from tests.support.owned_manifest import KYVERNO_CRD, NS, OWNER, event, logged, ns, owners_cluster


def test_on_event_lifecycle(kube: ApplyFakeKube, cluster: Cluster) -> None:
    before = owners_cluster(kube)
    created = index.on_event(event("Create", [ns("curvine")]), None, cluster=cluster)
    pid = created["PhysicalResourceId"]
    assert pid == f"owned-manifest:{OWNER}:K8s00namespaces"
    updated = index.on_event(
        event(
            "Update",
            [ns("curvine", x="1")],
            PhysicalResourceId=pid,
            OldResourceProperties=event("Create", [ns("curvine")])["ResourceProperties"],
        ),
        None,
        cluster=cluster,
    )
    assert updated == {"PhysicalResourceId": pid}
    assert kube.objects[f"{NS}/curvine"]["metadata"]["labels"] == {"x": "1"}
    deleted = index.on_event(
        event("Delete", [ns("curvine"), ns("inference")], PhysicalResourceId=pid),
        None,
        cluster=cluster,
    )
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
    # A gone cluster is news, an unreachable one a warning: both name the cluster and say the
    # objects are not deleted (the unreachable one with the reason).
    assert [level for level, _ in logged(caplog)] == [logging.INFO, logging.WARNING]
    assert_lines_say(
        [line for _, line in logged(caplog)],
        ["team-eks", "gone"],
        ["team-eks", "no route to host", "left in place"],
    )


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


def test_create_without_an_owner_is_refused(kube: ApplyFakeKube, cluster: Cluster) -> None:
    e = event("Create", [ns("curvine")])
    e["ResourceProperties"]["Owner"] = ""
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
        event(
            "Update",
            [ns("a")],
            PhysicalResourceId="id-cloudformation-has",
            OldResourceProperties=old["ResourceProperties"],
        ),
        None,
        cluster=cluster,
    )
    assert done == {"PhysicalResourceId": "id-cloudformation-has"}
    assert f"{NS}/a" in kube.objects and f"{NS}/b" not in kube.objects


def test_update_does_not_prune_by_a_manifest_another_owner_applied(
    kube: ApplyFakeKube, cluster: Cluster
) -> None:
    kube.put(NS, ns("shared", owner=OWNER))  # ours, through another resource
    old = {**event("Create", [ns("shared")])["ResourceProperties"], "Owner": "hyperpod-kvcache-old"}
    index.on_event(
        event("Update", [ns("a")], PhysicalResourceId="p", OldResourceProperties=old),
        None,
        cluster=cluster,
    )
    assert f"{NS}/shared" in kube.objects and f"{NS}/a" in kube.objects


EBS_SC = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "ebs-sc"}}


@pytest.mark.parametrize(
    ("prop", "value", "manifest", "message"),
    [
        (
            "Preflight",
            [EBS_SC],
            [ns("curvine")],
            "StorageClass ebs-sc exists and is not ours (has no hyperpod-kvcache/owner mark): "
            "rename ours in config or remove theirs. Nothing was changed.",
        ),
        (
            "Present",
            [
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "StorageClass",
                    "name": "gp3",
                    "fix": "create gp3 first",
                }
            ],
            [ns("curvine")],
            "StorageClass gp3 does not exist: create gp3 first. Nothing was changed.",
        ),
        (
            "Absent",
            [KYVERNO_CRD],
            [ns("curvine")],
            "CustomResourceDefinition clusterpolicies.kyverno.io exists: "
            "set kvcache.kyverno.install to false. Nothing was changed.",
        ),
        (
            "Hints",
            {"Namespace/inference": "pick another namespace"},
            [ns("curvine"), ns("inference")],
            "Namespace inference exists and is not ours (has no hyperpod-kvcache/owner mark): "
            "pick another namespace. Nothing was changed.",
        ),
    ],
)
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
        None,
        cluster=cluster,
    )
    # Each object by kind and name with what happened to it; one left says whose mark it lacks.
    assert {level for level, _ in logged(caplog)} == {logging.INFO}
    assert_lines_say(
        [line for _, line in logged(caplog)],
        ["created", "Namespace curvine"],
        ["deleted", "Namespace curvine"],
        ["left", "Namespace inference", "hyperpod-kvcache/owner"],
    )
