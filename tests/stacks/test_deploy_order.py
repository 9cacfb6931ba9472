"""Deploy and teardown order, read from the synthesized cloud assembly.

The dependencies come from the assembly's manifest.json, whatever composes the stacks, and the
teardown order from teardown's public ``stack_names``, so both tests survive a new stack layout.
"""

from __future__ import annotations

import json

import pytest

from scripts.lib.environment import stack_names
from tests.support.synth import Synth

MODES = ("dev", "existing")


def stack_graph(result: Synth) -> dict[str, set[str]]:
    """Stack -> the stacks it depends on (assets artifacts left out)."""
    manifest = json.loads((result.outdir / "manifest.json").read_text())
    stacks = {
        name for name, a in manifest["artifacts"].items() if a["type"] == "aws:cloudformation:stack"
    }
    return {
        name: set(manifest["artifacts"][name].get("dependencies", [])) & stacks for name in stacks
    }


def depends_on(graph: dict[str, set[str]], stack: str, target: str) -> bool:
    todo, seen = [stack], set()
    while todo:
        for dep in graph[todo.pop()] - seen:
            if dep == target:
                return True
            seen.add(dep)
            todo.append(dep)
    return False


@pytest.fixture(params=MODES)
def result(request: pytest.FixtureRequest) -> Synth:
    synthesized: Synth = request.getfixturevalue(request.param)
    return synthesized


def test_teardown_deletes_every_stack_after_the_stacks_that_depend_on_it(result: Synth) -> None:
    """Reverse of the deploy's dependencies: CloudFormation refuses to delete a stack whose
    exports another stack still imports."""
    graph = stack_graph(result)
    order = stack_names(result.config)
    missing = set(graph) - set(order)
    assert not missing, f"teardown never deletes {sorted(missing)}"
    position = {name: i for i, name in enumerate(order)}
    wrong = [
        f"{dependent} depends on {dep} but is deleted after it"
        for dependent, deps in graph.items()
        for dep in deps
        if position[dependent] > position[dep]
    ]
    assert not wrong, "\n".join(wrong)


def test_endpoints_deploy_after_the_operator_and_its_csi_drivers(result: Synth) -> None:
    """The InferenceEndpointConfig CRD, the CSI drivers and cert-manager come from the add-ons
    (or, without managed add-ons, from the HyperPod stack): the stack that applies the endpoints
    depends on the stack that installs the inference operator."""
    prefix = result.config.stack_prefix
    graph = stack_graph(result)
    holder = [s for s in graph if _has_endpoints(result, s)]
    assert holder, "no stack applies an InferenceEndpointConfig"
    operator = f"{prefix}-addons" if result.stacks.addons is not None else f"{prefix}-hyperpod"
    for stack in holder:
        assert depends_on(graph, stack, operator), f"{stack} does not depend on {operator}"


def _has_endpoints(result: Synth, stack: str) -> bool:
    """Whether the stack applies an InferenceEndpointConfig (its ``Manifest``; an ownership
    check's ``Preflight`` only reads it)."""
    template = json.loads((result.outdir / f"{stack}.template.json").read_text())
    return any(
        "InferenceEndpointConfig" in json.dumps(r.get("Properties", {}).get("Manifest", ""))
        for r in template.get("Resources", {}).values()
    )
