"""k8s/names.py: the names the CLI finds objects by are the names the charts render, and reading
them needs no Node.js.

No double: the environments are rendered by cdk8s and the real renderer (tests/k8s/conftest.py);
the import check runs a Python whose PATH holds no ``node``, as on a workstation without Node.js.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from infra.config import AppConfig
from k8s.names import (
    CSI_DRIVER,
    CURVINE_SC,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    PART_OF,
    PART_OF_LABEL,
    POLICY,
    REMOTE_URL_ENV,
    curvine_claim,
    fsx_claim,
)
from k8s.policy import rule
from tests.support.config import DEPLOYED_FSX, FSX_VARIANT

REPO = Path(__file__).resolve().parents[2]


def _named(objs: list[dict[str, Any]], kind: str) -> set[str]:
    return {o["metadata"]["name"] for o in objs if o["kind"] == kind}


def test_the_cli_finds_each_object_by_the_name_it_is_rendered_with(
    env: str, objs: list[dict[str, Any]], config: AppConfig
) -> None:
    curvine = "curvine" in config.kvcache.l2_backends and env != FSX_VARIANT
    if curvine:
        assert CSI_DRIVER in _named(objs, "CSIDriver")
        assert CURVINE_SC in _named(objs, "StorageClass")
    claim = fsx_claim(DEPLOYED_FSX) if env == FSX_VARIANT else curvine_claim(config)
    claims = {
        (o["metadata"]["namespace"], o["metadata"]["name"])
        for o in objs
        if o["kind"] == "PersistentVolumeClaim"
    }
    assert {(e.namespace, claim) for e in config.kvcache.mounted_l2_endpoints} <= claims
    if config.kvcache.mounted_l2_endpoints:
        assert POLICY in _named(objs, "ClusterPolicy")


def test_every_rendered_object_carries_the_labels_teardown_selects_by(
    objs: list[dict[str, Any]],
) -> None:
    unlabelled = [
        f"{o['kind']}/{o['metadata']['name']}"
        for o in objs
        if (o["metadata"].get("labels") or {}).get(PART_OF_LABEL) != PART_OF
        or o["metadata"]["labels"].get(MANAGED_BY_LABEL) != MANAGED_BY
    ]
    assert unlabelled == []


def test_the_l2_rule_rewrites_the_variable_the_cli_looks_for(config: AppConfig) -> None:
    for e in config.kvcache.endpoints:
        (loop,) = rule(config, e, "any-claim")["mutate"]["foreach"]
        (container,) = loop["patchStrategicMerge"]["spec"]["containers"]
        assert REMOTE_URL_ENV in {env["name"] for env in container["env"]}


def test_teardown_tells_our_objects_apart_without_node_js(tmp_path: Path) -> None:
    """A PATH without ``node``: importing cdk8s (jsii) would fail there."""
    code = (
        "import sys; from scripts.lib.teardown.kubernetes import labelled; "
        f"assert labelled({{'labels': {{'{PART_OF_LABEL}': '{PART_OF}', "
        f"'{MANAGED_BY_LABEL}': '{MANAGED_BY}'}}}}); "
        "assert 'cdk8s' not in sys.modules, 'cdk8s loaded'"
    )
    env = {**os.environ, "PATH": str(tmp_path), "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
