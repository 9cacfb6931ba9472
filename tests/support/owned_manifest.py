"""Objects, events and a clock shared by the owned-manifest handler's tests."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.custom_resources.owned_manifest.handler import index
from infra.custom_resources.owned_manifest.handler.ownership import OWNER_ANNOTATION
from infra.custom_resources.owned_manifest.handler.volumes import VolumeWait
from tests.doubles.ownership_fake_kube import ApplyFakeKube

OWNER = "hyperpod-kvcache-dev"
NS = "/api/v1/namespaces"
SC = "/apis/storage.k8s.io/v1/storageclasses"
CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
KYVERNO_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "name": "clusterpolicies.kyverno.io",
    "fix": "set kvcache.kyverno.install to false",
}


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


def owners_cluster(kube: ApplyFakeKube) -> dict[str, Any]:
    """What the cluster's owner had before us: namespaces, ebs-sc and Kyverno. Returns a copy."""
    kube.put(NS, ns("inference", team="ml"))
    kube.put(NS, ns("kyverno", team="platform"))
    kube.put(SC, sc("ebs-sc", type="gp2"))
    kube.put(
        CRD,
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "clusterpolicies.kyverno.io"},
        },
    )
    return json.loads(json.dumps(kube.objects))


def pvc(name: str, namespace: str) -> dict[str, Any]:
    spec = {"accessModes": ["ReadWriteMany"], "storageClassName": "curvine-sc"}
    meta = {"name": name, "namespace": namespace}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


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


def event(kind: str, objects: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """A request as CloudFormation sends it, with every property the construct sets."""
    props = {
        "ClusterName": "team-eks",
        "Owner": OWNER,
        "Manifest": json.dumps(objects),
        "Preflight": "[]",
        "Present": "[]",
        "Absent": "[]",
        "Hints": "{}",
    }
    return {
        "RequestType": kind,
        "LogicalResourceId": "K8s00namespaces",
        "ResourceProperties": props,
        **extra,
    }


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == index.__name__]
