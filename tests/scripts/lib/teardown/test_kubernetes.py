"""Teardown's Kubernetes objects: only the configured endpoints and Curvine PVCs this environment
owns (labels and owner mark), the waits for their load balancers and volumes, and what a
Kubernetes failure says.

Doubles: moto and FakeKube, as in ``World`` (tests/support/teardown_world.py); where a test
needs more it says so."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from scripts.lib.clients import Clients
from scripts.lib.errors import OperationError
from scripts.lib.teardown.execute import execute_teardown
from scripts.lib.teardown.kubernetes import (
    LB_CLUSTER_TAG,
    cluster_load_balancers,
    curvine_volumes_left,
    eks_cluster_exists,
)
from scripts.lib.teardown.model import Item
from scripts.lib.teardown.plan import plan_teardown
from tests.doubles.fake_kube import FakeKube
from tests.support.config import QUICK_INSTALL_CLUSTER, make_cfg
from tests.support.endpoint_objects import IECS
from tests.support.logs import assert_lines_say
from tests.support.preflight_existing import GROUPS
from tests.support.teardown_world import (
    ENV,
    FAST,
    OWNED,
    PREFIX,
    REGION,
    World,
    env_cfg,
    stubbed_client,
)


@pytest.mark.parametrize("labels", [{}, {"app.kubernetes.io/managed-by": "cdk8s"}])
def test_a_configured_endpoint_without_our_labels_stays(
    world: World, labels: dict[str, str]
) -> None:
    """No labels, or another cdk8s app's: both of ours are needed."""
    world.kube.objects[f"{IECS}/vllm-kvcache"]["metadata"]["labels"] = labels
    plan = plan_teardown(world.clients, world.cfg)
    assert "models/vllm-kvcache" not in {i.id for i in plan.kubernetes}
    # Which object, the labels it lacks, that it stays, and how to delete it if it is ours.
    assert_lines_say(
        plan.notes,
        [
            "InferenceEndpointConfig models/vllm-kvcache",
            "app.kubernetes.io/managed-by=cdk8s",
            "app.kubernetes.io/part-of=hyperpod-kvcache",
            "left in place",
            "kubectl",
        ],
    )


PROD_MARK = {"hyperpod-kvcache/owner": "hyperpod-kvcache-prod"}
PVC = "/api/v1/namespaces/models/persistentvolumeclaims/curvine-pvc"


def existing_cfg(world: World) -> Any:
    """This environment on an existing cluster (world's EKS cluster), which prod shares."""
    name = world.cfg.eks.cluster_name
    return make_cfg(
        environment=ENV,
        hyperpod=GROUPS,
        existing_cluster={
            **QUICK_INSTALL_CLUSTER,
            "eks_cluster_name": name,
            "hyperpod_cluster_name": name,
        },
        kvcache={"endpoints": [{"name": "vllm-kvcache", "namespace": "models", "replicas": 1}]},
    )


def mark(world: World, path: str, annotations: dict[str, str]) -> None:
    world.kube.objects[path]["metadata"]["annotations"] = dict(annotations)


@pytest.mark.parametrize("existing", [True, False], ids=["existing-cluster", "created-cluster"])
def test_teardown_leaves_the_same_named_objects_another_environment_marked(
    world: World, existing: bool
) -> None:
    """prod's endpoint and Curvine PVC carry the same names and labels as ours, in the namespace
    this environment configures: its teardown leaves both and says why."""
    cfg = existing_cfg(world) if existing else world.cfg
    for path in (f"{IECS}/vllm-kvcache", PVC):
        mark(world, path, PROD_MARK)
    # The world's load balancer stands for our endpoint's; teardown waits for every load
    # balancer of the cluster to go, which is not what this test is about.
    world.plain("elbv2").delete_load_balancer(LoadBalancerArn=world.lb)
    plan = plan_teardown(world.clients, cfg)
    assert plan.kubernetes == []
    prod = "hyperpod-kvcache/owner=hyperpod-kvcache-prod"
    assert_lines_say(
        plan.notes,
        ["InferenceEndpointConfig models/vllm-kvcache", prod, "left in place", "kubectl"],
        ["PersistentVolumeClaim models/curvine-pvc", prod, "left in place"],
    )
    execute_teardown(world.clients, cfg, lambda _: None, FAST, show=False)
    assert world.kube.writes("DELETE") == []
    assert world.kube.get(f"{IECS}/vllm-kvcache") and world.kube.get(PVC)


def test_on_an_existing_cluster_teardown_deletes_only_what_carries_our_mark(world: World) -> None:
    """There every object the stack created carries our mark: an unmarked one with our labels
    (applied by hand from dist/, or by the cluster's owner) is not this environment's."""
    cfg = existing_cfg(world)
    mark(world, f"{IECS}/vllm-kvcache", {"hyperpod-kvcache/owner": PREFIX})
    plan = plan_teardown(world.clients, cfg)
    assert [i.id for i in plan.kubernetes] == ["models/vllm-kvcache"]
    assert_lines_say(
        plan.notes,
        ["PersistentVolumeClaim models/curvine-pvc", "hyperpod-kvcache/owner", "left in place"],
    )
    execute_teardown(world.clients, cfg, lambda _: None, FAST, show=False)
    assert world.kube.get(f"{IECS}/vllm-kvcache") is None and world.kube.get(PVC)


PVS = "/api/v1/persistentvolumes"


def curvine_volume(world: World, *, claim_gone: bool = False, after_reads: int = 3) -> str:
    """The volume the Curvine CSI driver provisioned for models/curvine-pvc. Its provisioner
    deletes it ``after_reads`` listings of volumes after the claim goes, while the kvcache stack
    (which holds the driver and Curvine) is there; after that, never. ``claim_gone``: a re-run,
    the claim deleted already and the volume Released."""
    claim = world.kube.objects[PVC]
    claim["metadata"]["uid"], claim["spec"]["volumeName"] = "uid-1", "pvc-uid-1"
    world.kube.put(
        PVS,
        {
            "metadata": {
                "name": "pvc-uid-1",
                "finalizers": ["external-provisioner.volume.kubernetes.io/finalizer"],
            },
            "spec": {
                "storageClassName": "curvine-sc",
                "persistentVolumeReclaimPolicy": "Delete",
                "claimRef": {"namespace": "models", "name": "curvine-pvc", "uid": "uid-1"},
            },
        },
    )
    countdown: list[int] = []
    if claim_gone:
        del world.kube.objects[PVC]
        countdown.append(after_reads)

    def provisioner(fake: FakeKube, method: str, path: str) -> None:
        if method == "DELETE" and path == PVC:
            countdown.append(after_reads)
        elif method == "GET" and path == PVS and countdown:
            countdown[0] -= 1
            running = f"DeleteStack:{PREFIX}-kvcache" not in world.timeline
            if countdown[0] <= 0 and running and f"{PVS}/pvc-uid-1" in fake.objects:
                del fake.objects[f"{PVS}/pvc-uid-1"]
                world.timeline.append("released:pvc-uid-1")

    world.kube.after_write.append(provisioner)
    world.kube.after_read.append(provisioner)
    return "pvc-uid-1"


@pytest.mark.parametrize("claim_gone", [False, True], ids=["first-run", "re-run"])
def test_the_stacks_go_only_once_the_csi_driver_deleted_the_curvine_volumes(
    world: World, claim_gone: bool
) -> None:
    """The kvcache stack takes the CSI driver and Curvine: a volume they have not deleted by
    then keeps its finalizer (and Curvine's directory) for good."""
    volume = curvine_volume(world, claim_gone=claim_gone)
    execute_teardown(world.clients, world.cfg, lambda _: None, FAST, show=False)
    t = world.timeline
    first_stack = next(i for i, step in enumerate(t) if step.startswith("DeleteStack:"))
    assert t.index(f"released:{volume}") < first_stack
    assert world.kube.get(f"{PVS}/{volume}") is None


def test_a_curvine_volume_never_deleted_stops_teardown_before_the_stacks(world: World) -> None:
    volume = curvine_volume(world, after_reads=10**6)
    quick = dataclasses.replace(FAST, pvc_s=0.3)
    with pytest.raises(OperationError) as failed:
        execute_teardown(world.clients, world.cfg, lambda _: None, quick, show=False)
    assert str(failed.value) == (
        "timed out after 0s waiting for the Curvine CSI driver to delete the volumes of the "
        f"deleted PVCs (last state: {volume})"
    )
    assert not any(step.startswith("DeleteStack:") for step in world.timeline)


def test_a_volume_whose_claim_is_there_or_that_is_retained_is_not_waited_for(
    world: World,
) -> None:
    """A claim recreated under the same name (another uid) has released the old volume; one
    with reclaim policy Retain, or of another namespace or StorageClass, is not the driver's
    to delete now."""
    curvine_volume(world)
    claim = {"namespace": "models", "name": "curvine-pvc", "uid": "uid-1"}
    for name, spec in (
        ("retained", {"persistentVolumeReclaimPolicy": "Retain"}),
        ("elsewhere", {"claimRef": {**claim, "namespace": "team-b", "uid": "x"}}),
        ("other-class", {"storageClassName": "gp3", "claimRef": {**claim, "uid": "x"}}),
        ("old", {"claimRef": {**claim, "uid": "uid-0"}}),
    ):
        world.kube.put(
            PVS,
            {
                "metadata": {"name": name},
                "spec": {
                    "storageClassName": "curvine-sc",
                    "persistentVolumeReclaimPolicy": "Delete",
                    "claimRef": claim,
                    **spec,
                },
            },
        )
    assert curvine_volumes_left(world.clients, world.cfg) == ["old"]


def test_the_volume_of_an_l2_claim_of_any_size_is_waited_for(world: World) -> None:
    """The L2 claim is named after its size, so a claim of an earlier size (pruned when the
    pool changed) leaves a volume under another claim name; a claim that is not the L2's
    (the cluster owner's, on our StorageClass) does not."""
    for volume, claim in (("sized", "curvine-pvc-1600gi"), ("owners", "owners-cache")):
        world.kube.put(
            PVS,
            {
                "metadata": {"name": volume},
                "spec": {
                    "storageClassName": "curvine-sc",
                    "persistentVolumeReclaimPolicy": "Delete",
                    "claimRef": {"namespace": "models", "name": claim, "uid": "gone"},
                },
            },
        )
    assert curvine_volumes_left(world.clients, world.cfg) == ["sized"]


def test_load_balancers_are_matched_to_the_cluster_twenty_arns_at_a_time() -> None:
    """Stubber (exact requests): ELBv2's DescribeTags takes at most 20 ARNs, so 41 load
    balancers take three calls, each ARN in exactly one; only the cluster's are kept, once."""

    elb = stubbed_client("elbv2")
    arns = [
        f"arn:aws:elasticloadbalancing:{REGION}:111122223333:loadbalancer/net/lb{n}/{n}"
        for n in range(41)
    ]
    ours = {0, 20, 40}

    def tagged(n: int) -> dict[str, Any]:
        if n == 1:
            return {"ResourceArn": arns[n]}  # no Tags at all
        cluster = "kvcache" if n in ours else "kvcache-2"
        return {"ResourceArn": arns[n], "Tags": [{"Key": LB_CLUSTER_TAG, "Value": cluster}]}

    lbs = [{"LoadBalancerArn": arn, "LoadBalancerName": f"lb{n}"} for n, arn in enumerate(arns)]
    with Stubber(elb) as stub:
        stub.add_response("describe_load_balancers", {"LoadBalancers": lbs}, {})
        for start in (0, 20, 40):
            batch = range(start, min(start + 20, len(arns)))
            stub.add_response(
                "describe_tags",
                {"TagDescriptions": [tagged(n) for n in batch]},
                {"ResourceArns": [arns[n] for n in batch]},
            )
        found = cluster_load_balancers(Clients(REGION, aws_factory=lambda s: elb), "kvcache")
        stub.assert_no_pending_responses()
    assert found == [arns[n] for n in sorted(ours)]


def test_the_kubernetes_plan_is_exactly_our_objects_in_every_configured_namespace(
    world: World,
) -> None:
    """A configured endpoint that is not deployed does not hide the next one; our Curvine PVCs
    are found in each configured namespace; a PVC with only one of our labels, or ours on
    another StorageClass, is not ours to delete."""
    cfg = make_cfg(
        environment=ENV,
        eks={"cluster_name": world.cfg.eks.cluster_name},
        hyperpod={"cluster_name": world.cfg.hyperpod.cluster_name},
        kvcache={
            "endpoints": [
                {"name": "not-deployed", "namespace": "models", "replicas": 1},
                {"name": "vllm-kvcache", "namespace": "team-b", "replicas": 1},
            ]
        },
    )
    pvcs = "/api/v1/namespaces/team-b/persistentvolumeclaims"
    for name, labels, storage_class in (
        ("cache", OWNED, "curvine-sc"),
        ("half-ours", {"app.kubernetes.io/managed-by": "cdk8s"}, "curvine-sc"),
        ("other-class", OWNED, "gp3"),
    ):
        world.kube.put(
            pvcs,
            {
                "metadata": {"name": name, "namespace": "team-b", "labels": labels},
                "spec": {"storageClassName": storage_class},
            },
        )
    plan = plan_teardown(world.clients, cfg)
    assert plan.kubernetes == [
        Item("InferenceEndpointConfig", "team-b/vllm-kvcache"),
        Item("PersistentVolumeClaim", "models/curvine-pvc", "curvine-sc"),
        Item("PersistentVolumeClaim", "team-b/cache", "curvine-sc"),
    ]


def test_whether_the_eks_cluster_exists_is_read_from_its_error_code() -> None:
    """Stubber: ResourceNotFoundException means no cluster; any other error stops teardown."""

    eks = stubbed_client("eks")
    clients = Clients(REGION, aws_factory=lambda service: eks)
    with Stubber(eks) as stub:
        stub.add_client_error("describe_cluster", "ResourceNotFoundException", "No cluster found")
        assert eks_cluster_exists(clients, env_cfg()) is False
        stub.add_client_error("describe_cluster", "AccessDeniedException", "not authorized")
        with pytest.raises(ClientError, match="AccessDeniedException"):
            eks_cluster_exists(clients, env_cfg())


def test_a_kubernetes_api_failure_stops_teardown_saying_to_rerun(world: World) -> None:
    world.kube.fail[("DELETE", f"{IECS}/vllm-kvcache")] = 500
    with pytest.raises(OperationError) as failed:
        execute_teardown(world.clients, world.cfg, lambda _: None, FAST, show=False)
    assert str(failed.value) == "Kubernetes API: 500 Internal Server Error; re-run teardown"


def test_an_object_deleted_by_someone_else_meanwhile_is_not_a_failure(world: World) -> None:
    """Between teardown's read and its DELETE, the endpoint and the PVC go (another teardown,
    a kubectl delete): the 404 is taken as done, and the teardown goes on."""
    pvcs = "/api/v1/namespaces/models/persistentvolumeclaims"
    racing = {f"{IECS}/vllm-kvcache": f"{IECS}/vllm-kvcache", pvcs: f"{pvcs}/curvine-pvc"}

    def someone_else(fake: FakeKube, method: str, path: str) -> None:
        if gone := racing.pop(path, None):
            del fake.objects[gone]
            if gone.endswith("/vllm-kvcache"):  # its load balancer goes with it
                world.plain("elbv2").delete_load_balancer(LoadBalancerArn=world.lb)

    world.kube.after_read.append(someone_else)
    steps: list[str] = []
    execute_teardown(world.clients, world.cfg, steps.append, FAST, show=False)
    assert not racing and not [
        s for s in steps if s.startswith(("deleted Inference", "deleted PVC"))
    ]
    assert f"stack {PREFIX}-network: deleted" in steps
