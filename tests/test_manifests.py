"""`make manifests` output builds with kustomize and carries the GitOps ordering hints.

`kubectl kustomize dist/<env>` must build every object k8s.render writes, in apply order; each
object carries its file's Argo CD sync wave; the notes name the Kyverno chart and the operator
add-on versions from config.
"""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.cdk.written import RECORD, read_record
from infra.config import load_config
from k8s.render import KYVERNO_VALUES, SYNC_WAVE, render, sync_wave_patch

KUBECTL = shutil.which("kubectl")


def identity(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    out = tmp_path_factory.mktemp("dist") / "dev"
    return out, render("dev", out, lock_dir=tmp_path_factory.mktemp("locks"))


def rendered_objects(files: list[Path]) -> list[dict[str, Any]]:
    return [o for f in files for o in yaml.safe_load_all(f.read_text()) if o]


@pytest.fixture(scope="module")
def built(dist: tuple[Path, list[Path]]) -> list[dict[str, Any]]:
    if KUBECTL is None:
        pytest.skip("kubectl is not on PATH: `kubectl kustomize` needs it")
    out = subprocess.run(
        [KUBECTL, "kustomize", str(dist[0])], check=True, capture_output=True, text=True
    ).stdout
    return [o for o in yaml.safe_load_all(out) if o]


def without_wave(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    annotations = obj["metadata"]["annotations"]
    del annotations[SYNC_WAVE]
    annotations.pop("argocd.argoproj.io/sync-options", None)
    if not annotations:
        del obj["metadata"]["annotations"]
    return obj


def test_kubectl_kustomize_builds_every_rendered_object_in_order(
    dist: tuple[Path, list[Path]], built: list[dict[str, Any]]
) -> None:
    expected = rendered_objects(dist[1])
    assert len(expected) > 20
    assert [identity(o) for o in built] == [identity(o) for o in expected]
    # The kustomization adds the Argo CD annotations and changes nothing else.
    assert [without_wave(o) for o in built] == expected


def test_kustomization_lists_the_chart_files_in_apply_order(
    dist: tuple[Path, list[Path]],
) -> None:
    out, files = dist
    kustomization = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert kustomization["resources"] == [f.name for f in files]
    assert [f.name for f in files] == sorted(f.name for f in files)
    assert {p.name for p in out.iterdir()} == {f.name for f in files} | {
        "kustomization.yaml",
        "README.md",
        KYVERNO_VALUES,
        RECORD,  # what the product wrote there (infra.cdk.written), for its next render
    }
    assert set(read_record(out)) == {p.name for p in out.iterdir()} - {RECORD}


def test_every_object_gets_its_files_sync_wave(
    dist: tuple[Path, list[Path]], built: list[dict[str, Any]]
) -> None:
    wave_of = {identity(o): wave for wave, f in enumerate(dist[1]) for o in rendered_objects([f])}
    for obj in built:
        assert obj["metadata"]["annotations"][SYNC_WAVE] == str(wave_of[identity(obj)])
    waves = {o["kind"]: int(o["metadata"]["annotations"][SYNC_WAVE]) for o in built}
    assert waves["Namespace"] < waves["StorageClass"] < waves["PersistentVolumeClaim"]
    assert waves["ClusterPolicy"] < waves["InferenceEndpointConfig"]


def test_notes_name_what_the_objects_depend_on(dist: tuple[Path, list[Path]]) -> None:
    out, _ = dist
    config = load_config("dev")
    notes = (out / "README.md").read_text()
    assert f"--version {config.kvcache.kyverno.chart_version}" in notes
    assert config.addons.inference_operator.version in notes
    assert "dependsOn" in notes and "sync-wave" in notes


def test_only_objects_whose_crd_comes_from_elsewhere_skip_argo_cds_dry_run(
    built: list[dict[str, Any]],
) -> None:
    """Argo CD's dry run fails on a kind whose CRD is not installed yet (Kyverno's ClusterPolicy,
    the operator's InferenceEndpointConfig); Argo CD reads the option by its exact text. Every
    other object is dry-run as usual."""
    option = "argocd.argoproj.io/sync-options"
    skipped = {
        o["kind"]: o["metadata"]["annotations"].get(option)
        for o in built
        if option in o["metadata"]["annotations"]
    }
    assert skipped == {
        "ClusterPolicy": "SkipDryRunOnMissingResource=true",
        "InferenceEndpointConfig": "SkipDryRunOnMissingResource=true",
    }


@pytest.mark.parametrize(
    ("obj", "target"),
    [
        (
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "router", "namespace": "inference"},
            },
            {
                "group": "apps",
                "version": "v1",
                "kind": "Deployment",
                "name": "router",
                "namespace": "inference",
            },
        ),
        (
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "curvine"}},
            {"group": "", "version": "v1", "kind": "Namespace", "name": "curvine"},
        ),
    ],
)
def test_a_wave_patch_targets_exactly_its_object(
    obj: dict[str, Any], target: dict[str, str]
) -> None:
    """By namespace too: the same kind and name in two namespaces are two objects."""
    patch = sync_wave_patch(obj, 3)
    assert patch["target"] == target
    assert yaml.safe_load(patch["patch"]) == {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "metadata": {"name": obj["metadata"]["name"], "annotations": {SYNC_WAVE: "3"}},
    }
