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

from infra.config import load_config
from k8s.render import SYNC_WAVE, render

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
    }


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
