"""Lambda packages of this repository's Python handlers, built in-process from this virtualenv.

A handler directory (``infra/handlers/<name>``) is shipped with the pure-Python distributions it
imports, copied from the virtualenv that requirements.txt pins: no Docker, no network, and the
same bytes (so the same asset hash) on every synth. A distribution whose installed version differs
from its pin fails the synth, naming the fix.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

REPO_ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = REPO_ROOT / "requirements.txt"
# Never run: the local bundler always succeeds or raises. Named because BundlingOptions needs one.
FALLBACK_IMAGE = "public.ecr.aws/sam/build-python3.13"
# Install bookkeeping that may name this machine; METADATA and licences stay.
_BOOKKEEPING = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})


def pinned_versions(requirements: Path = REQUIREMENTS) -> dict[str, str]:
    """``name==version`` lines of requirements.txt, names lower-cased."""
    pins: dict[str, str] = {}
    for line in requirements.read_text().splitlines():
        m = re.match(r"^\s*([A-Za-z0-9_.\-\[\],]+?)\s*==\s*([^\s#;]+)", line)
        if m:
            pins[re.sub(r"\[.*\]", "", m[1]).lower()] = m[2]
    return pins


def skipped_always(relative: Path) -> bool:
    """Console scripts outside site-packages, bytecode of this interpreter, install bookkeeping."""
    parts = relative.parts
    if parts[0] == ".." or "__pycache__" in parts or relative.suffix == ".pyc":
        return True
    return parts[0].endswith(".dist-info") and relative.name in _BOOKKEEPING


@dataclass(frozen=True)
class HandlerBundle:
    """One handler package: ``handler_dir`` copied as a package, plus ``distributions``.

    ``skip`` leaves out more of a distribution (unused service models, compiled extensions)."""

    handler_dir: Path
    distributions: tuple[str, ...]
    skip: Callable[[Path], bool] = lambda _relative: False

    def write(self, output_dir: Path) -> None:
        pins = pinned_versions()
        target = output_dir / self.handler_dir.name
        target.mkdir(parents=True, exist_ok=True)
        for source in sorted(self.handler_dir.glob("*.py")):
            shutil.copyfile(source, target / source.name)
        for name in self.distributions:
            dist = importlib.metadata.distribution(name)
            pinned = pins.get(name.lower())
            if pinned is not None and dist.version != pinned:
                raise RuntimeError(
                    f"{name} {dist.version} is installed but requirements.txt pins {pinned}: "
                    "run `.venv/bin/pip install -r requirements.txt` before synth"
                )
            if not dist.files:
                raise RuntimeError(f"{name} has no RECORD of its files: reinstall it with pip")
            for relative in dist.files:
                rel = Path(str(relative))
                if skipped_always(rel) or self.skip(rel):
                    continue
                destination = output_dir / rel
                destination.parent.mkdir(parents=True, exist_ok=True)
                # copyfile, not copy2: contents only, so timestamps cannot change the asset hash.
                shutil.copyfile(Path(str(relative.locate())), destination)

    def code(self) -> lambda_.Code:
        return lambda_.Code.from_asset(
            str(self.handler_dir),
            # Hash what is shipped (handler + packages), not the handler sources alone: a
            # package bump must change the asset, and identical bytes must keep it.
            asset_hash_type=AssetHashType.OUTPUT,
            bundling=BundlingOptions(
                image=DockerImage.from_registry(FALLBACK_IMAGE), local=_LocalBundler(self)
            ),
        )


@jsii.implements(ILocalBundling)
class _LocalBundler:
    """Bundles in this process (the Docker image in BundlingOptions is never used)."""

    def __init__(self, bundle: HandlerBundle) -> None:
        self._bundle = bundle

    def try_bundle(self, output_dir: str, *_options: Any, **_kw: Any) -> bool:
        # jsii passes the BundlingOptions struct positionally (the typed interface declares them
        # as keywords); nothing in it is needed here.
        self._bundle.write(Path(output_dir))
        return True
