"""Delete waits for the L2 claim's volume (infra/custom_resources/owned_manifest/handler/volumes.py)
until its provisioner removed it, and gives up with one line.

Double: a local fake Kubernetes API server (tests/doubles/ownership_fake_kube.py, built on
tests/doubles/fake_kube.py) driven by the official ``kubernetes`` client, so the handler's real
URLs, verbs, content types and error statuses are exercised. The fake stores objects and does not
run admission or controllers (a deleted Namespace does not delete its contents).
"""

from __future__ import annotations

import logging

import pytest

from infra.custom_resources.owned_manifest.handler import index
from infra.custom_resources.owned_manifest.handler.cluster import Cluster
from infra.custom_resources.owned_manifest.handler.ownership import (
    apply,
    delete,
)
from tests.doubles.ownership_fake_kube import PVS, ApplyFakeKube, Provisioner
from tests.support.logs import assert_lines_say
from tests.support.owned_manifest import OWNER, FakeTime, event, logged, ns, pvc

PV_NAME = "pvc-inference-curvine-pvc"
VOLUME = f"{PVS}/{PV_NAME}"


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
    # The line names the volume and its claim, how long it waited, and where to look.
    level, line = logged(caplog)[-1]
    assert level == logging.INFO
    assert_lines_say(
        [line],
        [PV_NAME, "inference/curvine-pvc", "60s", f"kubectl get pv {PV_NAME}", "left in place"],
    )


def test_a_retained_volume_is_not_waited_for(kube: ApplyFakeKube, cluster: Cluster) -> None:
    """A static volume with reclaim policy Retain (the warm cache kept on purpose) stays by
    design; a claim left to another environment has nothing of ours to wait for either."""
    static = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "curvine-l2-static"},
        "spec": {
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": "inference", "name": "curvine-pvc"},
        },
    }
    kube.put(PVS, static)
    bound = pvc("curvine-pvc", "inference")
    bound["spec"]["volumeName"] = "curvine-l2-static"
    apply(cluster, OWNER, [bound])
    clock = FakeTime()
    assert delete(cluster, OWNER, [bound], clock.wait()) == [
        "deleted PersistentVolumeClaim inference/curvine-pvc"
    ]
    assert clock.slept == [] and f"{PVS}/curvine-l2-static" in kube.objects
