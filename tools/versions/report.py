"""Each pin beside the newest release its registry lists, and how they compare.

Versions are ordered as ``packaging.version`` orders them (PEP 440; a leading ``v`` dropped);
a pre-release counts as the newest only when the pin is one itself. A registry that does not
answer makes its rows ``unreachable``, with the reason once per registry: nothing is guessed.
"""

from __future__ import annotations

import re
import threading
import urllib.parse
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from packaging.version import InvalidVersion, Version

from tools.versions import registries
from tools.versions.pins import EKS_REGISTRY, Pin

KINDS = ("pypi", "npm", "helm", "image", "github", "git", "eks")
STATUSES = ("current", "behind", "ahead", "unreachable", "not-found", "unknown", "not-queried")
WORKERS = 8


@dataclass(frozen=True)
class Registries:
    pypi_index: str
    npm_registry: str
    timeout: float


@dataclass
class Row:
    kind: str
    component: str
    pinned: str
    newest: str | None
    registry: str
    status: str
    where: list[str] = field(default_factory=list)
    note: str = ""


def parse(text: str) -> Version | None:
    try:
        return Version(text[1:] if text[:1] in "vV" else text)
    except InvalidVersion:
        return None


def newest(versions: Iterable[str], pinned: str) -> str | None:
    """The highest release, pre-releases left out unless ``pinned`` is one."""
    pin = parse(pinned)
    allow_pre = pin is not None and pin.is_prerelease
    best: tuple[Version, str] | None = None
    for text in versions:
        version = parse(text)
        if version is None or (version.is_prerelease and not allow_pre):
            continue
        if best is None or version > best[0]:
            best = (version, text)
    return best[1] if best else None


def compare(pinned: str, latest: str | None, *, floating: bool = False) -> str:
    """current, behind or ahead; unknown when either is not a version. ``floating``: a pin of
    fewer parts stands for its newest release (a GitHub Action's ``v4`` is any 4.x.y)."""
    pin, new = parse(pinned), parse(latest or "")
    if pin is None or new is None:
        return "unknown"
    if floating and len(pin.release) < len(new.release) and not pin.is_prerelease:
        have, want = pin.release, new.release[: len(pin.release)]
        return "current" if have == want else "behind" if have < want else "ahead"
    return "current" if pin == new else "behind" if pin < new else "ahead"


def registry_of(pin: Pin, where: Registries) -> str:
    if pin.kind == "pypi":
        return where.pypi_index
    if pin.kind == "npm":
        return where.npm_registry
    return pin.registry


def shown(registry: str) -> str:
    """The registry as the table names it: the host, with the path for a Helm or git repository."""
    parsed = urllib.parse.urlparse(registry if "://" in registry else f"//{registry}")
    if not parsed.netloc:
        return registry
    return parsed.netloc + (parsed.path.rstrip("/") if parsed.path.count("/") > 1 else "")


def _host(registry: str) -> str:
    parsed = urllib.parse.urlparse(registry if "://" in registry else f"//{registry}")
    return parsed.netloc or registry


def _look_up(pin: Pin, registry: str, timeout: float) -> list[str]:
    if pin.kind == "pypi":
        return registries.pypi_versions(pin.name, registry, timeout)
    if pin.kind == "npm":
        return registries.npm_versions(pin.name, registry, timeout)
    if pin.kind == "helm":
        return registries.helm_versions(pin.name, registry, timeout)
    if pin.kind == "image":
        return registries.image_tags(pin.name, registry, timeout)
    if pin.kind == "github":
        return registries.github_tags(registry, timeout)
    if pin.kind == "git":
        return [registries.git_head(registry, timeout)]
    raise ValueError(pin.kind)


class Report:
    def __init__(self, pins: list[Pin], where: Registries) -> None:
        self.where = where
        self.unreachable: dict[str, str] = {}  # registry host -> the first reason it gave
        self._lock = threading.Lock()
        grouped: dict[tuple[str, str, str, str], list[str]] = {}
        for pin in pins:
            key = (pin.kind, pin.name, pin.pinned, registry_of(pin, where))
            grouped.setdefault(key, []).append(pin.where)
        self._groups = grouped

    def run(self) -> list[Row]:
        keys = sorted(self._groups, key=lambda k: (KINDS.index(k[0]), k[1], k[2]))
        # One look-up per registry first: a registry that does not answer costs one timeout,
        # and its other rows are marked without asking it again.
        first = {_host(k[3]): k for k in reversed(keys)}
        with ThreadPoolExecutor(WORKERS) as pool:
            rows = dict(zip(first.values(), pool.map(self._row, first.values()), strict=True))
            rest = [k for k in keys if k not in rows]
            rows.update(zip(rest, pool.map(self._row, rest), strict=True))
        return [rows[k] for k in keys]

    def _row(self, key: tuple[str, str, str, str]) -> Row:
        kind, name, pinned, registry = key
        label = _host(registry) if kind == "github" else shown(registry)  # one API for all
        row = Row(kind, name, pinned, None, label, "unknown", self._groups[key])
        if kind == "eks":
            row.status, row.note = "not-queried", "needs AWS credentials: `make preflight`"
            return row
        if not registry:
            row.note = "no registry known for this key: add it to tools/versions/pins.py"
            return row
        host = _host(registry)
        with self._lock:
            down = self.unreachable.get(host)
        if down is not None:  # one registry that did not answer is not asked again
            row.status, row.note = "unreachable", down
            return row
        pin = Pin(kind, name, pinned, "", registry)
        try:
            versions = _look_up(pin, registry, self.where.timeout)
        except registries.Unreachable as error:
            with self._lock:
                self.unreachable.setdefault(host, str(error))
            row.status, row.note = "unreachable", str(error)
            return row
        except registries.NotFound:
            row.status, row.note = "not-found", f"{shown(registry)} has no {name}"
            return row
        if kind == "git":
            row.newest = versions[0]
            row.status = "current" if versions[0] == pinned else "behind"
            if row.status == "behind":
                row.note = "the default branch's head is another commit"
            return row
        row.newest = newest(versions, pinned)
        row.status = compare(pinned, row.newest, floating=kind == "github")
        return row


def summary(rows: list[Row]) -> dict[str, int]:
    counts = Counter(row.status for row in rows)
    return {status: counts[status] for status in STATUSES if counts[status]}


def as_json(rows: list[Row], unreachable: dict[str, str]) -> dict[str, Any]:
    return {
        "pins": [asdict(row) for row in rows],
        "unreachable": unreachable,
        "summary": summary(rows),
    }


_COMMIT = re.compile(r"[0-9a-f]{40}")
HEADER = ("kind", "component", "pinned", "newest", "registry", "status", "where")


def _short(text: str | None) -> str:
    if text is None:
        return "-"
    return text[:12] if _COMMIT.fullmatch(text) else text


def as_table(rows: list[Row], unreachable: dict[str, str]) -> str:
    cells = [HEADER] + [
        (
            row.kind,
            row.component,
            _short(row.pinned),
            _short(row.newest),
            row.registry,
            row.status,
            row.where[0] + (f" (+{len(row.where) - 1})" if len(row.where) > 1 else ""),
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(HEADER) - 1)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=False)) + "  " + line[-1]
        for line in cells
    ]
    counts = ", ".join(f"{n} {status}" for status, n in summary(rows).items())
    lines += ["", f"{len(rows)} pins: {counts}"]
    lines += [f"not reachable: {host}: {reason}" for host, reason in sorted(unreachable.items())]
    if any(row.kind == "eks" for row in rows):
        lines.append(f"EKS add-ons and the Kubernetes minor: {EKS_REGISTRY}, with AWS credentials")
    return "\n".join(lines)
