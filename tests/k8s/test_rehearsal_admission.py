"""Deploy rehearsal: what Pod Security admission would refuse, in every shipped environment.

No double for the rendered objects (real cdk8s output). Pod Security admission is modelled by
``tests.doubles.pod_security`` (the documented baseline/restricted controls), Kyverno by
``tests.doubles.kyverno_eval``; the operator-rendered endpoint Pod is the model in
fixtures/operator_pod.yaml (its sources are listed there).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.doubles.pod_security import violations
from tests.support.admission import operator_pods, pod_templates
from tests.support.objects import OPERATOR_POD

# fsx, tiers: tests/support/config.py FSX_VARIANT, TIERS_VARIANT
ENVS = ("dev", "test", "prod", "fsx", "tiers")
PSA = "pod-security.kubernetes.io/enforce"


def refusals(objs: list[dict[str, Any]]) -> list[str]:
    levels = {
        o["metadata"]["name"]: o["metadata"].get("labels", {}).get(PSA, "privileged")
        for o in objs
        if o["kind"] == "Namespace"
    }
    out = []
    for ref, ns, spec in pod_templates(objs) + operator_pods(objs):
        if ns not in levels:
            out.append(f"{ref}: namespace {ns} is not rendered (its Pod Security level is unknown)")
            continue
        out += [
            f"{ref}: Pod Security {levels[ns]} (enforce) refuses {v}"
            for v in violations(spec, levels[ns])
        ]
    return out


@pytest.mark.parametrize("env", ENVS)
def test_every_pod_is_admitted_by_its_namespace_pod_security(
    rendered_envs: dict[str, list[dict[str, Any]]], env: str
) -> None:
    objs = rendered_envs[env]
    assert operator_pods(objs), f"{env}: no endpoint rendered, the operator Pod went unchecked"
    problems = refusals(objs)
    assert not problems, f"{env}:\n" + "\n".join(problems)


def test_the_operator_pod_model_is_refused_by_baseline_for_its_host_path() -> None:
    """The operator Pod model is what baseline refuses: it must fail there, or the check above
    proves nothing."""
    got = violations(OPERATOR_POD["spec"], "baseline")
    assert got == ["HostPath Volumes: ai-toolkit-cache (/dev/shm/ai_toolkit_cache)"]


def test_helper_knows_the_restricted_controls() -> None:
    spec = {"containers": [{"name": "c", "image": "x:1"}], "volumes": [{"name": "v", "nfs": {}}]}
    got = violations(spec, "restricted")
    for control in (
        "Volume Types",
        "Privilege Escalation",
        "Running as Non-root",
        "Seccomp",
        "Capabilities",
    ):
        assert any(v.startswith(control) for v in got), control
    assert violations(spec, "baseline") == []
