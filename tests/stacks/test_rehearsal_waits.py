"""Deploy rehearsal: nothing installed before the nodes waits for Pods; what needs nodes waits
for the node readiness gate; on delete, the L2 claims go before what deletes their volumes.

Walks the synthesized templates' dependency graph (``DependsOn`` plus every ``Ref``/``Fn::GetAtt``
/``Fn::Sub`` reference) and, across stacks, the stack dependencies of the cloud assembly
manifest. aws_eks_v2 renders ``HelmChart(wait=True)`` as ``"Wait": true`` and omits the property
when false; ``atomic`` implies ``--wait`` in Helm, so ``"Atomic": true`` counts as waiting too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from aws_cdk import CfnElement

from infra.custom_resources.node_gate.construct import RESOURCE_TYPE as GATE_TYPE
from tests.support.synth import Synth

HELM = "Custom::AWSCDK-EKS-HelmChart"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
OWNED = "Custom::HyperPodOwnedManifest"
# What the logical ids of the kvcache stack's charts (``K8s-<chart>``) contain.
L2_VOLUME = "K8s40l2volume"
# What deletes an L2 claim's volume: its StorageClass, Curvine (the directory behind it), the
# NetworkPolicies that admit the CSI controller's RPC to the masters, and the CSI controller
# (the provisioner that deletes the volume and drops its finalizer).
L2_PROVIDERS = ("K8s10storage", "K8s20curvine", "K8s25curvinenetworkpolicy", "K8s30curvinecsi")
SAGEMAKER_CLUSTER = "AWS::SageMaker::Cluster"


def references(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "Ref" and isinstance(inner, str):
                yield inner
            elif key == "Fn::GetAtt":
                yield inner[0] if isinstance(inner, list) else str(inner).split(".")[0]
            elif key == "Fn::Sub":
                text = inner[0] if isinstance(inner, list) else inner
                yield from (m.split(".")[0] for m in re.findall(r"\$\{([^}!]+)\}", text))
                if isinstance(inner, list):
                    yield from references(inner[1])
            else:
                yield from references(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from references(inner)


def direct_dependencies(resources: dict[str, Any], logical_id: str) -> set[str]:
    resource = resources[logical_id]
    depends = resource.get("DependsOn", [])
    found = {depends} if isinstance(depends, str) else set(depends)
    found |= set(references(resource.get("Properties", {})))
    return {d for d in found if d in resources}


def transitive(resources: dict[str, Any], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for dep in direct_dependencies(resources, todo.pop()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def waits_for_pods(resource: dict[str, Any]) -> bool:
    props = resource.get("Properties", {})
    return resource["Type"] == HELM and (
        str(props.get("Wait")).lower() == "true" or str(props.get("Atomic")).lower() == "true"
    )


def no_wait_before_nodes(template: dict[str, Any]) -> list[str]:
    """Violations: a waiting Helm chart among the dependencies of the cluster or the gate."""
    resources = template["Resources"]
    roots = [k for k, v in resources.items() if v["Type"] in (SAGEMAKER_CLUSTER, GATE_TYPE)]
    violations = []
    for root in roots:
        for dep in sorted(transitive(resources, root)):
            if waits_for_pods(resources[dep]):
                violations.append(
                    f"{dep} ({HELM}, release {resources[dep]['Properties'].get('Release')!r}) "
                    f"waits for Pods but {root} ({resources[root]['Type']}) depends on it: "
                    "rule: nothing installed before the nodes may wait for Pods (wait=False)"
                )
    return violations


def stack_dependencies(result: Synth) -> dict[str, set[str]]:
    manifest = json.loads((result.outdir / "manifest.json").read_text())
    return {
        name: set(artifact.get("dependencies", []))
        for name, artifact in manifest["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    }


def stack_depends_on(result: Synth, stack: str, target: str) -> bool:
    graph = stack_dependencies(result)
    seen: set[str] = set()
    todo = [stack]
    while todo:
        for dep in graph.get(todo.pop(), set()):
            if dep == target:
                return True
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return False


def needs_nodes(result: Synth) -> list[tuple[str, str]]:
    """(stack suffix, logical id) of everything that needs nodes to become healthy."""
    found = [("nodes", k) for k in result.resources("nodes", "AWS::EKS::Addon")]
    if result.stacks.addons is not None:
        found += [("addons", k) for k in result.resources("addons", "AWS::EKS::Addon")]
    found += [("kvcache", k) for k in result.resources("kvcache", HELM)]
    found += [
        ("kvcache", k)
        for k, v in result.resources("kvcache", MANIFEST).items()
        if "curvine" in json.dumps(v["Properties"].get("Manifest", "")).lower()
    ]
    return found


def missing_gate(result: Synth) -> list[str]:
    gates = list(result.resources("nodes", GATE_TYPE))
    if len(gates) != 1:
        return [f"expected one {GATE_TYPE} in the nodes stack, found {gates}"]
    gate = gates[0]
    prefix = result.config.stack_prefix
    violations = []
    for suffix, logical_id in needs_nodes(result):
        if suffix == "nodes":
            ok = gate in transitive(result.template_json("nodes")["Resources"], logical_id)
        else:
            ok = stack_depends_on(result, f"{prefix}-{suffix}", f"{prefix}-nodes")
            # The stack dependency must come from the gate, not only from composition order.
            ok = ok and gate_dependency_recorded(result, suffix, logical_id)
        if not ok:
            violations.append(
                f"{prefix}-{suffix}/{logical_id} needs nodes but does not depend on the node "
                f"readiness gate {gate}: rule: everything that needs nodes waits for nodes_ready"
            )
    return violations


def gate_dependency_recorded(result: Synth, suffix: str, logical_id: str) -> bool:
    """The construct-level dependency on the gate, which CDK turns into the stack dependency.

    The manifest alone cannot tell it from a stack order set elsewhere (composition), which a
    restructuring of the stacks may drop. Checked on the resource or any construct above it.
    """
    stack = result.stacks.by_suffix[suffix]
    gate = result.stacks.nodes.nodes_ready.resource
    for construct in stack.node.find_all():
        if isinstance(construct, CfnElement) and stack.resolve(construct.logical_id) == logical_id:
            scopes = construct.node.scopes
            return any(gate in scope.node.dependencies for scope in scopes)
    return False


@pytest.mark.parametrize("mode", ["dev", "existing"])
def test_nothing_the_cluster_or_gate_depends_on_waits_for_pods(
    mode: str, request: pytest.FixtureRequest
) -> None:
    result: Synth = request.getfixturevalue(mode)
    violations = [
        *no_wait_before_nodes(result.template_json("hyperpod")),
        *no_wait_before_nodes(result.template_json("nodes")),
    ]
    assert not violations, "\n".join(violations)


@pytest.mark.parametrize("mode", ["dev", "existing"])
def test_everything_that_needs_nodes_depends_on_the_gate(
    mode: str, request: pytest.FixtureRequest
) -> None:
    result: Synth = request.getfixturevalue(mode)
    assert needs_nodes(result), "nothing found that needs nodes: the walk is broken"
    violations = missing_gate(result)
    assert not violations, "\n".join(violations)


def test_the_wait_rule_can_fail() -> None:
    # A chart the cluster depends on with Wait true, as aws_eks_v2 renders wait=True.
    template = {
        "Resources": {
            "Chart": {"Type": HELM, "Properties": {"Release": "deps", "Wait": True}},
            "Role": {"Type": "AWS::IAM::Role", "DependsOn": "Chart"},
            "Cluster": {
                "Type": SAGEMAKER_CLUSTER,
                "Properties": {"Role": {"Fn::GetAtt": ["Role", "Arn"]}},
            },
        }
    }
    assert no_wait_before_nodes(template) == [
        "Chart (Custom::AWSCDK-EKS-HelmChart, release 'deps') waits for Pods but Cluster "
        "(AWS::SageMaker::Cluster) depends on it: rule: nothing installed before the nodes may "
        "wait for Pods (wait=False)"
    ]


def _one(resources: dict[str, Any], prefix: str) -> str | None:
    # ``K8s-<chart>`` sits under OwnedManifests on an existing cluster.
    found = [k for k, v in resources.items() if prefix in k and v["Type"] in (MANIFEST, OWNED)]
    assert len(found) <= 1, found
    return found[0] if found else None


def claims_not_deleted_first(template: dict[str, Any]) -> list[str]:
    """Violations: a chart that deletes the L2 claims' volumes that CloudFormation may delete
    before (or beside) the L2 volume chart. It deletes a resource only after every resource
    that depends on it, and resources with no dependency path between them side by side: so
    the L2 volume chart must depend (transitively) on each of them."""
    resources = template["Resources"]
    l2 = _one(resources, L2_VOLUME)
    if l2 is None:
        return []
    waits_for = transitive(resources, l2)
    return [
        f"{provider} ({resources[provider]['Type']}) may be deleted before or beside {l2}: "
        "rule: the L2 claims (and their volumes) go while what deletes the volumes still runs"
        for provider in filter(None, (_one(resources, p) for p in L2_PROVIDERS))
        if provider not in waits_for
    ]


@pytest.mark.parametrize("mode", ["dev", "existing"])
def test_on_delete_the_l2_claims_go_before_the_csi_driver_and_curvine(
    mode: str, request: pytest.FixtureRequest
) -> None:
    result: Synth = request.getfixturevalue(mode)
    resources = result.template_json("kvcache")["Resources"]
    assert _one(resources, L2_VOLUME) and _one(resources, "K8s30curvinecsi"), "walk is broken"
    violations = claims_not_deleted_first(result.template_json("kvcache"))
    assert not violations, "\n".join(violations)


def test_the_deletion_order_rule_can_fail() -> None:
    """Side by side (both on the namespaces only), as the charts were applied before."""
    template = {
        "Resources": {
            "K8s00namespacesAB": {"Type": OWNED},
            "K8s30curvinecsiCD": {"Type": OWNED, "DependsOn": ["K8s00namespacesAB"]},
            "K8s40l2volumeEF": {"Type": OWNED, "DependsOn": ["K8s00namespacesAB"]},
        }
    }
    assert claims_not_deleted_first(template) == [
        "K8s30curvinecsiCD (Custom::HyperPodOwnedManifest) may be deleted before or beside "
        "K8s40l2volumeEF: rule: the L2 claims (and their volumes) go while what deletes the "
        "volumes still runs"
    ]
