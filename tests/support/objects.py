"""Reading rendered Kubernetes objects: their ids, Pod templates, selectors and containers, and one
failure that lists every problem found (shared by the rehearsal and invariant tests)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

Obj = dict[str, Any]
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")

# A Pod the inference operator rendered for an endpoint (what Kyverno's admission sees).
OPERATOR_POD: Obj = yaml.safe_load(
    (Path(__file__).parents[1] / "k8s" / "fixtures" / "operator_pod.yaml").read_text()
)


def obj_id(o: Obj) -> str:
    """``Kind namespace/name`` (``Kind name`` when cluster-scoped): how a failure names it."""
    ns = o["metadata"].get("namespace")
    return f"{o['kind']} {ns + '/' if ns else ''}{o['metadata']['name']}"


def pod_template(o: Obj) -> Obj | None:
    if o["kind"] in WORKLOADS:
        t: Obj = o["spec"]["template"]
        return t
    if o["kind"] == "CronJob":
        t = o["spec"]["jobTemplate"]["spec"]["template"]
        return t
    return None


def pod_templates(objs: list[Obj]) -> Iterator[tuple[Obj, Obj]]:
    """(workload, its Pod template) for every object that makes Pods."""
    for o in objs:
        t = pod_template(o)
        if t is not None:
            yield o, t


def selector_of(o: Obj) -> dict[str, Any] | None:
    if o["kind"] == "CronJob":
        sel: dict[str, Any] | None = o["spec"]["jobTemplate"]["spec"].get("selector")
        return sel
    sel = o["spec"].get("selector")
    return sel


def containers_of(t: Obj) -> list[Obj]:
    spec = t["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def named_objects(objs: list[Obj], kind: str) -> set[tuple[str, str]]:
    """(namespace, name) of every rendered object of ``kind`` ('' for cluster-scoped)."""
    return {
        (o["metadata"].get("namespace", ""), o["metadata"]["name"])
        for o in objs
        if o["kind"] == kind
    }


def fail_with(problems: list[str]) -> None:
    """Fail listing every problem, one a line (no traceback: the lines say it all)."""
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
