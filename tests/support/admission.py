"""The Pods admission sees in a rendered environment: every Pod template we render, and the
operator's Pod for each endpoint after Kyverno's mutation (shared by the admission rehearsals)."""

from __future__ import annotations

import copy
from typing import Any

from tests.doubles.kyverno_eval import apply_policy
from tests.support.objects import OPERATOR_POD

WORKLOADS = {"Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job"}


def pod_templates(objs: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    """(object, namespace, Pod spec) of every Pod template we render."""
    out = []
    for o in objs:
        ref = f"{o['kind']} {o['metadata'].get('namespace')}/{o['metadata']['name']}"
        if o["kind"] in WORKLOADS:
            out.append((ref, o["metadata"].get("namespace", ""), o["spec"]["template"]["spec"]))
        elif o["kind"] == "CronJob":
            spec = o["spec"]["jobTemplate"]["spec"]["template"]["spec"]
            out.append((ref, o["metadata"].get("namespace", ""), spec))
    return out


def operator_pods(objs: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    """The operator's Pod for each rendered endpoint, as admitted: Kyverno's mutation applied."""
    policies = [o for o in objs if o["kind"] == "ClusterPolicy"]
    out = []
    for iec in (o for o in objs if o["kind"] == "InferenceEndpointConfig"):
        pod = copy.deepcopy(OPERATOR_POD)
        name, ns = iec["metadata"]["name"], iec["metadata"]["namespace"]
        pod["metadata"].update(namespace=ns, labels={"app": name})
        for policy in policies:
            pod = apply_policy(policy, pod, "CREATE")
        out.append((f"Pod {ns}/{name}-* (operator-rendered, Kyverno-mutated)", ns, pod["spec"]))
    return out
