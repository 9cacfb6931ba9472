"""The node readiness gate as synthesized, in both modes (shared ``dev``/``existing`` synths)."""

from __future__ import annotations

import json
from typing import Any

from infra.cdk.deps import NEEDS_METADATA
from infra.custom_resources.node_gate.construct import RESOURCE_TYPE
from tests.support.synth import Synth

CLUSTER_LOGICAL_ID = "HyperPodCluster11759092"


def gate(result: Synth) -> tuple[str, dict[str, Any]]:
    resources = result.resources("nodes", RESOURCE_TYPE)
    assert len(resources) == 1, f"expected one {RESOURCE_TYPE}, found {sorted(resources)}"
    return next(iter(resources.items()))


def gate_policy(result: Synth) -> list[dict[str, Any]]:
    """The cluster-scoped policy: in the nodes stack, beside the custom resource."""
    resources = result.template_json("nodes")["Resources"]
    policies = [
        v["Properties"]["PolicyDocument"]["Statement"]
        for k, v in resources.items()
        if v["Type"] == "AWS::IAM::Policy" and k.startswith("NodesReadyGateClusterAccess")
    ]
    assert len(policies) == 1
    return policies[0]


def test_gate_provider_is_built_beside_the_cluster(dev: Synth, existing: Synth) -> None:
    """The Provider (functions, roles, state machine) is in the HyperPod stack and references
    no cluster; the nodes stack holds only the custom resource, its policy and CoreDNS."""
    for result in (dev, existing):
        types = {v["Type"] for v in result.template_json("nodes")["Resources"].values()}
        assert types <= {RESOURCE_TYPE, "AWS::IAM::Policy", "AWS::EKS::Addon"}, types
        hyperpod = result.template_json("hyperpod")["Resources"]
        gate_parts = {k: v for k, v in hyperpod.items() if k.startswith("NodesReadyGate")}
        assert {v["Type"] for v in gate_parts.values()} >= {
            "AWS::Lambda::Function",
            "AWS::IAM::Role",
            "AWS::StepFunctions::StateMachine",
        }
        text = json.dumps(gate_parts)
        assert CLUSTER_LOGICAL_ID not in text
        cfg = result.config.existing_cluster
        assert cfg is None or cfg.hyperpod_cluster_arn not in text
    (policy,) = [
        v
        for k, v in dev.template_json("nodes")["Resources"].items()
        if k.startswith("NodesReadyGateClusterAccess")
    ]
    # Attached to the handler role of the HyperPod stack.
    assert "Fn::ImportValue" in json.dumps(policy["Properties"]["Roles"])


def test_created_cluster_gate_follows_the_cluster_and_is_bounded(dev: Synth) -> None:
    logical_id, resource = gate(dev)
    # Built by a construct of the nodes stack, its Default child: the logical ID is its path.
    assert dev.stacks.nodes.nodes_ready.resource.node.path.endswith("-nodes/NodesReadyGate/Default")
    # The cluster is in the HyperPod stack: the wait is recorded for the deploy-time model.
    assert CLUSTER_LOGICAL_ID in {n["logicalId"] for n in resource["Metadata"][NEEDS_METADATA]}
    props = resource["Properties"]
    assert props["ClusterName"] == dev.config.hyperpod.cluster_name
    assert "Fn::ImportValue" in props["ClusterArn"]
    assert props["Fingerprint"]
    # Well under CloudFormation's one-hour limit; the handler's own deadline fires first.
    assert int(props["ServiceTimeout"]) <= 3000
    functions = dev.resources("hyperpod", "AWS::Lambda::Function")
    deadlines = [
        int(f["Properties"]["Environment"]["Variables"]["NODE_GATE_DEADLINE_SECONDS"])
        for f in functions.values()
        if "NODE_GATE_DEADLINE_SECONDS" in str(f)
    ]
    assert deadlines and all(d < int(props["ServiceTimeout"]) - 5 * 60 for d in deadlines)
    # Not "NodesReadyA319CD07" (the gate before its Provider moved to the HyperPod stack): a
    # custom resource's ServiceToken cannot change, so the move is a replacement. Kept since.
    assert logical_id == "NodesReadyGate"


def test_gate_role_reads_only_this_cluster(dev: Synth) -> None:
    statements = {s.get("Sid"): s for s in gate_policy(dev)}
    read = statements["ReadClusterNodes"]
    assert sorted(read["Action"]) == ["sagemaker:DescribeCluster", "sagemaker:ListClusterNodes"]
    assert "Fn::ImportValue" in read["Resource"]


def test_existing_cluster_gate_reads_the_configured_cluster(existing: Synth) -> None:
    _, resource = gate(existing)
    existing_cfg = existing.config.existing_cluster
    assert existing_cfg is not None
    props = resource["Properties"]
    assert props["ClusterName"] == existing_cfg.hyperpod_cluster_name
    read = {s.get("Sid"): s for s in gate_policy(existing)}["ReadClusterNodes"]
    assert read["Resource"] == existing_cfg.hyperpod_cluster_arn


def test_dependencies_chart_does_not_wait(dev: Synth) -> None:
    charts = dev.resources("hyperpod", "Custom::AWSCDK-EKS-HelmChart")
    assert charts and all("Wait" not in c["Properties"] for c in charts.values())
