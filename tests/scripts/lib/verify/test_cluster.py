"""The cluster's rows of ``verify``: Curvine Pods failing their probes are named with the kubelet's
message, and on FSx the claim checked is the one named after the deployed file system.

Doubles: botocore's Stubber for SageMaker DescribeCluster and the EKS add-ons, FakeKube for the
cluster, two local OpenAI-compatible servers (FakeVllm) for the cross-Pod test
(tests/support/verify.py)."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.stub import Stubber

from infra.config import AppConfig
from infra.environment.fsx import kvcache_stack_name
from scripts.lib.verify.run import run_verify
from tests.doubles.fake_kube import FakeKube
from tests.support.config import make_cfg
from tests.support.endpoint_objects import RECORDED_ENDPOINT, recorded_endpoint
from tests.support.logs import assert_lines_say, line_saying
from tests.support.verify import (
    CFG,
    CURVINE_PODS,
    REF,
    MapTransport,
    _clients,
    _curvine_pod,
    _seed_cluster,
    _stubbed_aws,
)

CURVINE_EVENTS = "/api/v1/namespaces/curvine/events"


def test_curvine_pods_failing_their_probes_are_named_with_the_kubelets_message(
    kube: FakeKube,
) -> None:
    """A worker whose readiness probe fails (the server does not accept connections) fails the
    row: it names the Pod, its restarts and the kubelet's probe message, and the command that
    shows more; a Ready Pod's restarts are reported without failing it."""
    _seed_cluster(kube)
    kube.put(CURVINE_PODS, _curvine_pod("curvine-worker-b", ready=False, restarts=3))
    kube.put(CURVINE_PODS, _curvine_pod("curvine-master-0", restarts=1))
    kube.put(
        CURVINE_EVENTS,
        {
            "metadata": {"name": "curvine-worker-b.1", "namespace": "curvine"},
            "involvedObject": {"kind": "Pod", "name": "curvine-worker-b", "namespace": "curvine"},
            "reason": "Unhealthy",
            "type": "Warning",
            "message": "Readiness probe failed: bash: connect: Connection refused",
        },
    )
    checks, _ = run_verify(_clients(kube, _stubbed_aws()), CFG, REF, None)
    row = {c.stage: c for c in checks}["Curvine probes"]
    assert row.status == "fail"
    line_saying(row.detail.split("; "), "curvine-worker-b", "not Ready", "3x", "Error")
    assert "Readiness probe failed: bash: connect: Connection refused" in row.detail
    assert "(2/3 Ready)" in row.detail and "curvine-master-0" not in row.detail
    assert row.fix.startswith("kubectl -n curvine describe pod curvine-worker-b")
    kube.put(CURVINE_PODS, _curvine_pod("curvine-worker-b"))
    checks, _ = run_verify(_clients(kube, _stubbed_aws()), CFG, REF, None)
    row = {c.stage: c for c in checks}["Curvine probes"]
    assert row.status == "pass"
    assert_lines_say(
        row.detail.split("; "), ["3 Pods Ready"], ["curvine-master-0", "restarted", "1x", "Error"]
    )


def test_the_curvine_probes_row_is_skipped_without_curvine(kube: FakeKube) -> None:
    _seed_cluster(kube)
    endpoint = {**RECORDED_ENDPOINT, "l2_backend": "none"}
    no_curvine = make_cfg(kvcache={"endpoints": [endpoint]})
    checks, _ = run_verify(
        _clients(kube, _stubbed_aws()), no_curvine, recorded_endpoint(no_curvine), None
    )
    row = {c.stage: c for c in checks}["Curvine probes"]
    assert row.status == "skip" and "no endpoint's l2_backend is curvine" in row.detail


FSX_ID = "fs-0123456789abcdef0"


def _fsx_cfg() -> AppConfig:
    return make_cfg(
        kvcache={
            "endpoints": [RECORDED_ENDPOINT],
            "l2_backend": "fsx_lustre",
            "l2_backend_switch_confirmed": True,
        }
    )


def _cloudformation(cfg: AppConfig, deployed: bool) -> Any:
    """DescribeStacks of the kvcache stack through botocore's Stubber, like the calls above."""
    cfn = boto3.client("cloudformation", region_name="us-west-2")
    stub = Stubber(cfn)
    name = kvcache_stack_name(cfg)
    if deployed:
        outputs = [
            {"OutputKey": "L2FileSystemId", "OutputValue": FSX_ID},
            {
                "OutputKey": "L2FileSystemDnsName",
                "OutputValue": f"{FSX_ID}.fsx.us-west-2.amazonaws.com",
            },
            {"OutputKey": "L2FileSystemMountName", "OutputValue": "abcdefgh"},
        ]
        stack = {
            "StackName": name,
            "CreationTime": "2025-01-01T00:00:00Z",
            "StackStatus": "CREATE_COMPLETE",
            "Outputs": outputs,
        }
        stub.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": name})
    else:
        stub.add_client_error(
            "describe_stacks", "ValidationError", f"Stack with id {name} does not exist"
        )
    stub.activate()
    return cfn


def test_on_fsx_the_claim_checked_is_the_one_named_after_the_deployed_file_system(
    kube: FakeKube,
) -> None:
    """A replaced file system gets a new claim: verify reads which from the kvcache stack's
    outputs. The seeded Pods still mount curvine-pvc, so the Pods row names the FSx claim."""
    cfg = _fsx_cfg()
    _seed_cluster(kube)
    kube.put(
        "/api/v1/namespaces/models/persistentvolumeclaims",
        {
            "metadata": {"name": f"fsx-l2-{FSX_ID}", "namespace": "models"},
            "spec": {"storageClassName": "", "accessModes": ["ReadWriteMany"]},
            "status": {"phase": "Bound"},
        },
    )
    aws = {**_stubbed_aws(), "cloudformation": _cloudformation(cfg, deployed=True)}
    checks, _ = run_verify(_clients(kube, aws), cfg, REF, None)
    by_stage = {c.stage: c for c in checks}
    assert by_stage[f"PVC models/fsx-l2-{FSX_ID}"].status == "pass"
    pods = by_stage["Pods carry L2 settings"]
    assert pods.status == "fail" and f"fsx-l2-{FSX_ID}" in pods.detail


def test_on_fsx_before_a_deploy_the_claim_row_says_why_and_l2_rows_skip(kube: FakeKube) -> None:
    cfg = _fsx_cfg()
    _seed_cluster(kube)
    aws = {**_stubbed_aws(), "cloudformation": _cloudformation(cfg, deployed=False)}
    checks, cross = run_verify(_clients(kube, aws), cfg, REF, MapTransport({}))
    by_stage = {c.stage: c for c in checks}
    claim = by_stage["PVC models"]
    assert claim.status == "fail" and "the stack does not exist" in claim.detail
    assert "make deploy ENV=dev" in claim.detail
    assert by_stage["Pods carry L2 settings"].status == "skip" and cross is None
