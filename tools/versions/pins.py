"""Every version the product pins, read from the files that pin it: the requirements files,
pyproject.toml's build system, package.json, the GitHub workflows and each shipped config
(config/<env>.yaml through the config model, so the model's defaults count too). What no such
file holds is in EXPLICIT, each with why."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from pydantic import BaseModel

from infra.config import load_config
from infra.config.errors import ConfigError
from infra.config.fields import EKSBUILD_VERSION
from infra.config.image_reference import BadReference, parse_image
from infra.config.loader import available_environments

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = (
    "requirements*.txt",
    "tests/runtime/requirements/*.txt",
    "tests/server/requirements/*.txt",
)
EKS_REGISTRY = "EKS DescribeAddonVersions (make preflight)"
GITHUB_API = "https://api.github.com/repos/"
DOCKER_HUB = "registry-1.docker.io"


@dataclass(frozen=True)
class Pin:
    kind: str  # pypi, npm, helm, image, git, github, eks: how the newest is looked up
    name: str  # package, chart, image repository, git URL, GitHub repository, config key
    pinned: str
    where: str  # the file (and key) that pins it
    registry: str = ""  # where to look (Helm repository, image registry, ...); "" for pypi/npm


def _github_release(owner_repo: str) -> str:
    return GITHUB_API + owner_repo


def _pipeline_pins() -> list[Pin]:
    # The helm CLI the pipelines install is a constant of the pipeline construct, not a config
    # key or a package: its releases are GitHub releases of helm/helm. Late: the construct
    # module loads aws-cdk-lib, which `--only pypi,npm` never needs.
    from infra.constructs.pipeline import HELM_VERSION

    return [
        Pin(
            "github",
            "helm/helm (helm CLI)",
            HELM_VERSION,
            "infra/constructs/pipeline.py",
            _github_release("helm/helm"),
        ),
    ]


# Pins no file above holds in a form this module can read, as (path key, chart, repository):
# a config's chart_version names no Helm repository (the construct that installs the chart
# does), so each such key is matched to its repository here. A chart_version key not listed
# here is still reported, as one whose repository is unknown.
def chart_repositories() -> dict[str, tuple[str, str]]:
    # Late: k8s.policy loads cdk8s (a node process), which `--only pypi,npm` never needs.
    from k8s.policy import KYVERNO_REPOSITORY

    return {"kvcache.kyverno.chart_version": ("kyverno", KYVERNO_REPOSITORY)}


EXPLICIT = (_pipeline_pins,)


def requirement_pins(root: Path = ROOT) -> list[Pin]:
    pins = []
    for pattern in REQUIREMENTS:
        for path in sorted(root.glob(pattern)):
            where = path.relative_to(root).as_posix()
            for number, line in enumerate(path.read_text().splitlines(), 1):
                text = line.split(" #", 1)[0].strip()
                if not text or text.startswith(("#", "-")):  # comments, -r/-c/--index-url
                    continue
                pins.append(_requirement_pin(text, where, f"line {number}"))
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        build = tomllib.loads(pyproject.read_text()).get("build-system", {})
        pins += [
            _requirement_pin(text, "pyproject.toml", "build-system.requires")
            for text in build.get("requires", [])
        ]
    return pins


def _requirement_pin(text: str, source: str, field: str) -> Pin:
    try:
        req = Requirement(text)
    except InvalidRequirement:
        raise ConfigError(
            source,
            field,
            text,
            "a requirement in pip's syntax, pinned like name==1.2.3",
            "fix the line, or start it with # to make it a comment",
        ) from None
    exact = [s.version for s in req.specifier if s.operator in ("==", "===")]
    pinned = exact[0] if len(exact) == 1 else (str(req.specifier) or "(unpinned)")
    where = source if field.startswith("build") else f"{source}:{field.removeprefix('line ')}"
    return Pin("pypi", canonicalize_name(req.name), pinned, where)


def npm_pins(root: Path = ROOT) -> list[Pin]:
    path = root / "package.json"
    if not path.is_file():
        return []
    manifest = json.loads(path.read_text())
    return [
        Pin("npm", name, version, f"package.json: {section}.{name}")
        for section in ("dependencies", "devDependencies", "optionalDependencies")
        for name, version in manifest.get(section, {}).items()
    ]


# `uses: owner/repo@ref` (or owner/repo/path@ref) of a workflow step.
_USES = re.compile(r"^\s*-?\s*uses:\s*([\w.-]+/[\w.-]+)(?:/[^@\s]*)?@([\w.-]+)")


def workflow_pins(root: Path = ROOT) -> list[Pin]:
    pins = []
    for path in sorted((root / ".github" / "workflows").glob("*.y*ml")):
        where = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if m := _USES.match(line):
                pins.append(Pin("github", m[1], m[2], f"{where}:{number}", _github_release(m[1])))
    return pins


def config_pins(config_dir: Path | None = None) -> list[Pin]:
    """The pins of each shipped config, defaults included."""
    repositories = chart_repositories()
    pins = []
    for env in available_environments(config_dir):
        config = load_config(env, config_dir)
        source = f"config/{env}.yaml"
        for key, field, value, owner in _walk(config, ""):
            pins += _classify(key, field, value, owner, f"{source}: {key}", repositories)
    return pins


def _walk(model: BaseModel, prefix: str) -> Iterator[tuple[str, str, Any, BaseModel]]:
    """(key, field name, value, owning model) of every field, and of every property whose name
    ends in ``image`` (an image a section assembles from a repository and a version)."""
    for name in type(model).model_fields:
        value = getattr(model, name)
        yield prefix + name, name, value, model
        yield from _nested(value, f"{prefix}{name}.")
    for klass in type(model).__mro__:
        for name, attribute in vars(klass).items():
            if isinstance(attribute, property) and name.endswith("image"):
                yield prefix + name, name, getattr(model, name), model


def _nested(value: Any, prefix: str) -> Iterator[tuple[str, str, Any, BaseModel]]:
    if isinstance(value, BaseModel):
        yield from _walk(value, prefix)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _nested(item, f"{prefix}{index}.")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _nested(item, f"{prefix}{key}.")


def _classify(
    key: str,
    field: str,
    value: Any,
    owner: BaseModel,
    where: str,
    repositories: dict[str, tuple[str, str]],
) -> list[Pin]:
    if not isinstance(value, str):
        return []
    if field.endswith("image"):
        return [_image_pin(value, where)] if _is_tagged_image(value) else []
    if field == "chart_version":
        chart, repository = repositories.get(_generic(key), (key, ""))
        return [Pin("helm", chart, value, where, repository)]
    if field == "commit" and isinstance(getattr(owner, "repository", None), str):
        return [Pin("git", owner.repository, value, where, owner.repository)]  # type: ignore[attr-defined]
    if field == "kubernetes_version" or EKSBUILD_VERSION.match(value):
        return [Pin("eks", key, value, where, EKS_REGISTRY)]
    return []


def _generic(key: str) -> str:
    """kvcache.endpoints.0.image -> kvcache.endpoints.image (list positions dropped)."""
    return ".".join(part for part in key.split(".") if not part.isdigit())


def _is_tagged_image(value: str) -> bool:
    try:
        ref = parse_image(value)
    except BadReference:
        return False
    return ref.tag is not None or ref.digest is not None


def _image_pin(image: str, where: str) -> Pin:
    """``[registry/]repository:tag[@digest]``; Docker Hub's default registry and library/ prefix
    filled in as docker pull does."""
    name, _, digest = image.partition("@")
    repository, tag = name, ""
    if ":" in name.rsplit("/", 1)[-1]:
        repository, _, tag = name.rpartition(":")
    first, _, rest = repository.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        registry, path = (DOCKER_HUB if first == "docker.io" else first), rest
    else:
        registry, path = DOCKER_HUB, repository
    if registry == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    return Pin("image", path, tag or digest, where, registry)


CONFIG_KINDS = ("helm", "image", "git", "eks")


def discover(
    root: Path = ROOT, config_dir: Path | None = None, kinds: tuple[str, ...] | None = None
) -> list[Pin]:
    """Every pin, or those of ``kinds`` (the configs are read only when one of theirs is asked)."""
    pins = requirement_pins(root) + npm_pins(root) + workflow_pins(root)
    if kinds is None or set(kinds) & set(CONFIG_KINDS):
        pins += config_pins(config_dir)
    if kinds is None or "github" in kinds:
        for source in EXPLICIT:
            pins += source()
    return pins
