"""The Kyverno chart (3.8.2) as far as the app's values reach it, for tests.

No helm binary is installable from a package registry here, so this models the two steps that
matter, from the chart's source (kyverno/kyverno at tag kyverno-chart-3.8.2, commit 945ac9ce):

- Helm's values: the user's values are merged into the chart's values.yaml (the copy in
  k8s/schemas/kyverno/values.yaml): maps merge key by key, anything else is replaced, and a null
  deletes the chart's key.
- The admission controller's objects: templates/admission-controller/deployment.yaml (replicas
  unless autoscaling, ``kyverno.deployment.replicas`` refusing 0; updateStrategy; nodeSelector,
  else global.nodeSelector; affinity with podAntiAffinity while antiAffinity.enabled) and
  poddisruptionbudget.yaml (rendered when podDisruptionBudget.enabled or replicas > 1; spec from
  _helpers/_pdb.tpl: minAvailable, default 1, unless maxUnavailable; both is an error;
  unhealthyPodEvictionPolicy when set). Pod labels: kyverno.admission-controller.matchLabels.
Keys the templates do not read are refused (Unsupported), so a value that would be silently
ignored cannot pass.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

VALUES = Path(__file__).resolve().parents[2] / "k8s" / "schemas" / "kyverno" / "values.yaml"
CHART_VALUES: dict[str, Any] = yaml.safe_load(VALUES.read_text())
# What the model reads under admissionController (the rest keeps the chart's defaults).
MODELLED = {
    "replicas",
    "nodeSelector",
    "podDisruptionBudget",
    "antiAffinity",
    "podAntiAffinity",
    "updateStrategy",
}


class Unsupported(ValueError):
    """A value this model does not follow into the chart's templates."""


class ChartRefuses(ValueError):
    """The chart's template fails (``fail``): helm install stops with this message."""


# Values the templates copy into the object as they are (toYaml): their keys are Kubernetes
# fields or labels, checked by validating the rendered object, not against values.yaml.
VERBATIM = {
    "nodeSelector",
    "podAntiAffinity",
    "podAffinity",
    "nodeAffinity",
    "updateStrategy",
    "tolerations",
    "podLabels",
    "podAnnotations",
    "labels",
    "annotations",
}


def unknown_keys(values: Any, defaults: Any, path: str = "") -> list[str]:
    """Paths of ``values`` that the chart's values.yaml does not have (a misspelt key is kept by
    Helm and read by no template)."""
    if not isinstance(values, dict) or not isinstance(defaults, dict):
        return []
    out = []
    for k, v in values.items():
        where = f"{path}.{k}" if path else k
        if k not in defaults:
            out.append(where)
        elif k not in VERBATIM:
            out += unknown_keys(v, defaults[k], where)
    return out


def helm_merge(defaults: Any, values: Any) -> Any:
    if not isinstance(defaults, dict) or not isinstance(values, dict):
        return copy.deepcopy(values)
    out = copy.deepcopy(defaults)
    for k, v in values.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = helm_merge(defaults.get(k), v)
    return out


def merged(values: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = helm_merge(CHART_VALUES, values)
    return out


def admission_objects(
    values: dict[str, Any], release: str, namespace: str
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(Deployment, PodDisruptionBudget or None) of the admission controller, as far as the
    modelled keys go, for the user's ``values``."""
    extra = set(values.get("admissionController", {})) - MODELLED
    if extra:
        raise Unsupported(f"admissionController keys not modelled: {sorted(extra)}")
    if "kyverno" not in release:
        raise Unsupported("a release name without 'kyverno' (kyverno.fullname differs)")
    v = merged(values)
    ac = v["admissionController"]
    name = "kyverno-admission-controller"  # kyverno.admission-controller.name
    labels = {
        "app.kubernetes.io/part-of": release,
        "app.kubernetes.io/instance": release,
        "app.kubernetes.io/component": "admission-controller",
    }
    spec: dict[str, Any] = {"selector": {"matchLabels": labels}, "strategy": ac["updateStrategy"]}
    if not ac["autoscaling"]["enabled"]:
        if ac["replicas"] == 0:
            raise ChartRefuses("Kyverno does not support running with 0 replicas")
        if ac["replicas"] is not None:
            spec["replicas"] = ac["replicas"]
    pod: dict[str, Any] = {"nodeSelector": ac["nodeSelector"] or v["global"]["nodeSelector"]}
    if ac["antiAffinity"]["enabled"] and ac["podAntiAffinity"]:
        pod["affinity"] = {"podAntiAffinity": ac["podAntiAffinity"]}
    pod["containers"] = [{"name": "kyverno", "image": "reg.kyverno.io/kyverno/kyverno:v1.18.2"}]
    spec["template"] = {"metadata": {"labels": labels}, "spec": pod}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
    }
    budget = ac["podDisruptionBudget"]
    if not (budget["enabled"] or int(ac["replicas"] or 0) > 1):
        return deployment, None
    if budget.get("minAvailable") and budget.get("maxUnavailable"):
        raise ChartRefuses("Cannot set both .minAvailable and .maxUnavailable")
    pdb_spec: dict[str, Any] = {"selector": {"matchLabels": labels}}
    if budget.get("maxUnavailable"):
        pdb_spec["maxUnavailable"] = budget["maxUnavailable"]
    else:
        pdb_spec["minAvailable"] = budget.get("minAvailable") or 1
    if budget.get("unhealthyPodEvictionPolicy"):
        pdb_spec["unhealthyPodEvictionPolicy"] = budget["unhealthyPodEvictionPolicy"]
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": pdb_spec,
    }
    return deployment, pdb
