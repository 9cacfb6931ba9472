"""The stack layout as synthesized (shared ``dev`` synth): who waits for whom, and the
deploy-time model's figures for it (tools/deploy_time/model.py with durations.yaml)."""

from __future__ import annotations

import json

from infra.constructs.kubernetes_layer import L2_PROVIDERS
from infra.environment.layout import deletion_waves, dependencies, stack_name
from k8s.app import L2_VOLUME
from tests.support.synth import TIERED, Synth, logical_id, needs_of
from tools.deploy_time.model import Durations, as_deployed, floor, load_assembly

# Reached with this layout (dev: deploy 57.0 against a floor of 51.2 min, 1.113; destroy 39.2
# against 32.7, 1.200): stacks holding stateful resources (network, eks, hyperpod) stay as they
# are, so their hand-offs cost a stack overhead each; what is left and why is in
# docs/architecture.md (Deploy time).
MAX_DEPLOY_RATIO = 1.12
MAX_DESTROY_RATIO = 1.21


def manifest_dependencies(result: Synth) -> dict[str, set[str]]:
    manifest = json.loads((result.outdir / "manifest.json").read_text())
    prefix = result.config.stack_prefix + "-"
    stacks = {
        name.removeprefix(prefix): {d.removeprefix(prefix) for d in a.get("dependencies", [])}
        for name, a in manifest["artifacts"].items()
        if a["type"] == "aws:cloudformation:stack"
    }
    return {name: deps & set(stacks) for name, deps in stacks.items()}  # not asset manifests


def closure(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    def reach(name: str) -> set[str]:
        out = set(graph[name])
        for dep in graph[name]:
            out |= reach(dep)
        return out

    return {name: reach(name) for name in graph}


def test_endpoints_wait_for_operator_tiered_storage_and_l2_objects(dev: Synth) -> None:
    (endpoint,) = dev.resources("endpoints", "Custom::AWSCDK-EKS-KubernetesResource").values()
    operator = next(
        k
        for k, v in dev.resources("addons", "AWS::EKS::Addon").items()
        if v["Properties"]["AddonName"] == "amazon-sagemaker-hyperpod-inference"
    )
    (tiered,) = dev.resources("tiered-storage", TIERED)
    kvcache = dev.stacks.kvcache.manifests
    l2 = {logical_id(kvcache[n]) for n in ("40-l2-volume", "50-l2-policy")}
    assert {operator, tiered, *l2} <= needs_of(endpoint)
    assert "InferenceEndpointConfig" in json.dumps(endpoint["Properties"]["Manifest"])


def test_nothing_but_the_endpoints_waits_for_tiered_storage(dev: Synth) -> None:
    stacks = manifest_dependencies(dev)
    assert [s for s, deps in stacks.items() if "tiered-storage" in deps] == ["endpoints"]
    (tiered,) = dev.resources("tiered-storage", TIERED)
    for path in dev.outdir.glob("*.template.json"):
        for resource_id, body in json.loads(path.read_text())["Resources"].items():
            if tiered in needs_of(body):
                assert path.name.endswith("-endpoints.template.json"), (path.name, resource_id)


def test_stack_dependencies_are_the_layout_table(dev: Synth) -> None:
    stacks = manifest_dependencies(dev)
    # References may add a direct edge (the cluster is in eks) but never a wait the table lacks.
    table = {s: set(d) for s, d in dependencies(stacks).items()}
    assert closure(stacks) == closure(table)
    # Add-ons and the Kubernetes layer need the nodes, not Tiered Storage or each other; the
    # add-ons also the metrics workspace (KEDA's role may query it only).
    nodes = {"network", "eks", "egress", "hyperpod", "nodes"}
    assert closure(stacks)["kvcache"] == nodes
    assert closure(stacks)["addons"] == nodes | {"observability"}
    assert "observability" in closure(stacks)["endpoints"]
    # The control plane and the NAT gateways are built side by side.
    assert closure(stacks)["eks"] == closure(stacks)["egress"] == {"network"}


def test_every_stack_is_deployed_under_the_name_the_layout_gives_it(dev: Synth) -> None:
    """CloudFormation's stack names, as the assembly gives them to the CLI (``stackName``, or
    the artifact id when it is absent), are the names teardown, preflight and the output readers
    look up."""
    manifest = json.loads((dev.outdir / "manifest.json").read_text())
    deployed = {
        a["properties"].get("stackName", name)
        for name, a in manifest["artifacts"].items()
        if a["type"] == "aws:cloudformation:stack"
    }
    expected = {stack_name(dev.config, s) for s in manifest_dependencies(dev)}
    assert deployed == expected


def test_eks_cluster_does_not_wait_for_nat(dev: Synth) -> None:
    """Nothing of the EKS stack needs egress at deploy time: no NAT gateway, EIP or default
    route among the resources the model makes it wait for, and no manifest or chart (the kubectl
    handler runs in the private subnets) in the stack."""
    assembly = load_assembly(dev.outdir)
    eks = dev.stacks.eks
    assert eks is not None
    name = eks.artifact_id

    def waits(key: tuple[str, str]) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for need in assembly.resources[key].needs:
            if need in assembly.resources and need not in out:
                out |= {need} | waits(need)
        return out

    for key in [k for k in assembly.resources if k[0] == name]:
        types = {assembly.resources[w].type for w in waits(key)}
        assert not types & {"AWS::EC2::NatGateway", "AWS::EC2::EIP", "AWS::EC2::Route"}, key
        assert not assembly.resources[key].type.startswith("Custom::AWSCDK-EKS-"), key
    assert dev.stacks.egress is not None
    assert dev.stacks.egress not in eks.dependencies
    # The HyperPod cluster and the chart (run by the kubectl handler) wait for the routes.
    (cluster,) = dev.resources("hyperpod", "AWS::SageMaker::Cluster").values()
    (chart,) = dev.resources("hyperpod", "Custom::AWSCDK-EKS-HelmChart").values()
    routes = set(dev.resources("egress", "AWS::EC2::Route"))
    assert routes <= needs_of(cluster) and routes <= needs_of(chart)


def test_manifests_wait_only_where_apply_or_delete_needs_it(dev: Synth) -> None:
    """Namespaces first, Kyverno before its policy, and the L2 volume after what deletes its
    volumes (so that it goes first on delete: tests/stacks/test_rehearsal_waits.py)."""

    resources = dev.template_json("kvcache")["Resources"]
    ids = {name: logical_id(m) for name, m in dev.stacks.kvcache.manifests.items()}
    kyverno = logical_id(dev.stacks.kvcache.kyverno)
    local = set(resources)
    for name, own in ids.items():
        depends = set(resources[own].get("DependsOn", [])) & local
        expected = set() if name == "00-namespaces" else {ids["00-namespaces"]}
        if name == "50-l2-policy":
            expected.add(kyverno)
        if name == L2_VOLUME:
            expected |= {ids[p] for p in L2_PROVIDERS}
        assert depends == expected, name


def test_deploy_model_ratio(dev: Synth) -> None:
    assembly, durations = load_assembly(dev.outdir), Durations.load()
    for phase, limit in (("create", MAX_DEPLOY_RATIO), ("delete", MAX_DESTROY_RATIO)):
        deployed, best = as_deployed(assembly, durations, phase), floor(assembly, durations, phase)
        assert deployed.minutes / best.minutes <= limit, (phase, deployed.minutes, best.minutes)


def test_eks_cluster_and_nat_gateways_are_built_side_by_side(dev: Synth) -> None:
    """As deployed, the control plane starts before the NAT gateways are done, and the HyperPod
    cluster after both."""
    assembly = load_assembly(dev.outdir)
    spans = {s.key: s for s in as_deployed(assembly, Durations.load()).spans}
    (cluster,) = dev.resources("eks", "AWS::EKS::Cluster")
    eks_stack, egress = dev.stacks.eks, dev.stacks.egress
    assert eks_stack is not None and egress is not None
    eks = spans[(eks_stack.artifact_id, cluster)]
    nats = [
        s
        for k, s in spans.items()
        if k[0] == egress.artifact_id and s.type == "AWS::EC2::NatGateway"
    ]
    assert nats and eks.start < min(n.end for n in nats)
    (hyperpod,) = dev.resources("hyperpod", "AWS::SageMaker::Cluster")
    assert spans[(dev.stacks.hyperpod.artifact_id, hyperpod)].start >= max(n.end for n in nats)


def test_node_gate_provider_is_ready_before_the_hyperpod_cluster_is(dev: Synth) -> None:
    """As deployed, the gate's Provider is built while the cluster is created: the nodes stack
    starts with the cluster-scoped policy, and the gate polls right after it."""
    assembly = load_assembly(dev.outdir)
    spans = as_deployed(assembly, Durations.load()).spans
    hyperpod = dev.stacks.hyperpod.artifact_id
    (cluster,) = dev.resources("hyperpod", "AWS::SageMaker::Cluster")
    cluster_end = next(s.end for s in spans if s.key == (hyperpod, cluster))
    provider = [s for s in spans if s.key[0] == hyperpod and s.key[1].startswith("NodesReadyGate")]
    assert provider and max(s.end for s in provider) < cluster_end
    nodes = dev.stacks.nodes.artifact_id
    assert {s.type for s in spans if s.key[0] == nodes} == {
        "AWS::IAM::Policy",
        "Custom::HyperPodNodesReady",
        "AWS::EKS::Addon",
    }


def test_deletion_waves_delete_dependents_first() -> None:
    waves = deletion_waves(
        [
            "network",
            "eks",
            "egress",
            "hyperpod",
            "nodes",
            "tiered-storage",
            "addons",
            "kvcache",
            "endpoints",
            "observability",
        ]
    )
    assert waves == [
        ["endpoints"],
        ["tiered-storage", "addons", "kvcache"],
        ["nodes", "observability"],
        ["hyperpod"],
        ["eks", "egress"],
        ["network"],
    ]
    # An existing VPC: no egress stack, the HyperPod stack waits for network and eks.
    assert dependencies(["network", "eks", "hyperpod"])["hyperpod"] == ("eks", "network")
    # Existing cluster, nothing managed: dropped stacks pass their dependencies through.
    assert dependencies(["hyperpod", "nodes", "tiered-storage", "kvcache", "endpoints"]) == {
        "hyperpod": (),
        "nodes": ("hyperpod",),
        "tiered-storage": ("hyperpod",),
        "kvcache": ("hyperpod", "nodes"),
        "endpoints": ("hyperpod", "kvcache", "nodes", "tiered-storage"),
    }
