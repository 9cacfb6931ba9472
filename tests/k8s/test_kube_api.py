"""The typed cdk8s-plus API of the charts (k8s/kube_api.py): mypy checks every chart against one
pinned package, the run time builds with the package of the cluster's minor. These tests show
that what type-checks builds with every pinned package, and that mypy does check the charts."""

from __future__ import annotations

import importlib
import inspect
import textwrap
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import cdk8s
import pytest
from mypy import api as mypy_api

from infra.config import AppConfig
from infra.facts.versions import SUPPORTED_KUBERNETES
from k8s.app import build_charts
from k8s.common import k8s_for
from k8s.kube_api import REFERENCE, KPlusApi, KubeApi
from k8s.observability import ObservabilityChart
from tests.support.config import env_fsx

REPO = Path(__file__).resolve().parents[2]
PINNED = sorted({p.cdk8s_plus_module for p in SUPPORTED_KUBERNETES.values()})


def _members(protocol: type) -> list[str]:
    return [n for n in protocol.__annotations__ if n != "k8s"]


def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature (object's own slots)
        return None


def _refusals(
    name: str, ref: Callable[..., Any], other: Callable[..., Any], rename: str
) -> list[str]:
    """What a call that ``ref`` accepts would meet in ``other``: a parameter it lacks, a type it
    does not take, a parameter it requires that ``ref`` leaves optional. ``rename`` maps the
    reference package's name in an annotation to the other's."""
    ref_sig, other_sig = _signature(ref), _signature(other)
    if ref_sig is None or other_sig is None:
        return []
    out = []
    theirs = other_sig.parameters
    for p in ref_sig.parameters.values():
        q = theirs.get(p.name)
        if q is None or q.kind != p.kind:
            out.append(f"{name}: no parameter {p.name!r}")
            continue
        want = str(p.annotation).replace(REFERENCE, rename)
        if str(q.annotation) not in (want, f"typing.Optional[{want}]"):
            out.append(f"{name}({p.name}): {q.annotation} where the charts pass {want}")
        if p.default is not inspect.Parameter.empty and q.default is inspect.Parameter.empty:
            out.append(f"{name}({p.name}): required")
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    required = [q for q in theirs.values() if q.default is q.empty and q.kind not in variadic]
    out += [f"{name}: requires {q.name!r}" for q in required if q.name not in ref_sig.parameters]
    want_return = str(ref_sig.return_annotation).replace(REFERENCE, rename)
    if str(other_sig.return_annotation) != want_return:
        out.append(f"{name}: returns {other_sig.return_annotation}, typed as {want_return}")
    return out


def class_refusals(ref: type, other: type | None, rename: str) -> list[str]:
    """Every way ``other`` would refuse what mypy accepts for the reference class ``ref``."""
    if other is None:
        return [f"{ref.__name__}: missing"]
    out = []
    for attr in ["__init__", *(a for a in dir(ref) if not a.startswith("_"))]:
        label = f"{ref.__name__}.{attr}"
        if not hasattr(other, attr):
            out.append(f"{label}: missing")
            continue
        mine, theirs = getattr(ref, attr), getattr(other, attr)
        if callable(mine) and not isinstance(inspect.getattr_static(ref, attr), property):
            out += _refusals(label, mine, theirs, rename)
        elif isinstance(mine, str | int) and mine != theirs:  # an enum member
            out.append(f"{label}: {theirs!r}")
    return out


def package_refusals(ref: ModuleType, other: ModuleType) -> list[str]:
    rename = other.__name__
    out = []
    for name in _members(KPlusApi):
        out += class_refusals(getattr(ref, name), getattr(other, name, None), rename)
    for name in _members(KubeApi):
        out += class_refusals(getattr(ref.k8s, name), getattr(other.k8s, name, None), rename)
    return out


def test_the_charts_are_typed_against_a_pinned_cdk8s_plus() -> None:
    assert REFERENCE in PINNED


@pytest.mark.parametrize("package", PINNED)
def test_every_pinned_cdk8s_plus_builds_what_the_typed_charts_build(package: str) -> None:
    """Whichever minor the cluster runs, its package takes every field of every class mypy
    let the charts use, with the type mypy checked (dropping the reference from
    requirements.txt, or pinning a package that renames a field, fails here)."""
    ref = importlib.import_module(REFERENCE)
    assert package_refusals(ref, importlib.import_module(package)) == []


def test_a_field_only_a_newer_package_knows_would_be_refused_by_an_older_one() -> None:
    """The check above is not vacuous: typed against cdk8s-plus-34, a chart could set a
    Container's restartPolicyRules, which cdk8s-plus-33 (Kubernetes 1.33) refuses."""
    older, newer = (importlib.import_module(p) for p in ("cdk8s_plus_33", "cdk8s_plus_34"))
    refused = class_refusals(newer.k8s.Container, older.k8s.Container, older.__name__)
    assert "Container.__init__: no parameter 'restart_policy_rules'" in refused
    assert class_refusals(older.k8s.Container, newer.k8s.Container, newer.__name__) == []


def test_mypy_refuses_a_misspelt_field_in_a_chart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The objects the charts build are typed (not Any): a field the Kubernetes API does not
    have, or a value of the wrong type, fails the type check before any synth."""
    chart = tmp_path / "chart.py"
    source = textwrap.dedent("""
        from infra.config import AppConfig
        from k8s.common import k8s_for, kplus_for

        def build(config: AppConfig) -> None:
            k8s = k8s_for(config)
            k8s.Container(name="x", image_pul_policy="IfNotPresent")
            k8s.ContainerPort(container_port="8080")
            kplus_for(config).k8s.VolumeMount(name="x")
    """)
    chart.write_text(source)
    config = str(REPO / "pyproject.toml")
    cache = str(tmp_path / "cache")
    args = [str(chart), "--config-file", config, "--cache-dir", cache, "--no-error-summary"]
    monkeypatch.chdir(REPO)  # mypy finds the repository's packages from there
    out, _, status = mypy_api.run(args)
    assert status == 1, out
    assert 'Unexpected keyword argument "image_pul_policy" for "Container"' in out
    assert 'Argument "container_port" to "ContainerPort" has incompatible type "str"' in out
    assert 'Missing named argument "mount_path" for "VolumeMount"' in out


def test_every_built_in_kind_the_charts_build_comes_from_a_typed_class(
    env: str, config: AppConfig
) -> None:
    """Only a custom resource (no typed class to build it with) is written field by field,
    out of mypy's sight (docs/kubernetes-layer.md, "Typed objects"): every other object is an
    instance of a typed cdk8s-plus class, the collector's RBAC included."""
    charts = [chart for _, chart in build_charts(config, fsx=env_fsx(env)).ordered]
    charts.append(ObservabilityChart(cdk8s.App(), "observability", config=config))
    typed = k8s_for(config)
    untyped = [
        f"{obj.kind} {obj.name}"
        for chart in charts
        for obj in chart.node.find_all()
        if type(obj) is cdk8s.ApiObject and hasattr(typed, f"Kube{obj.kind}")
    ]
    assert untyped == []
