"""`make versions` against registries: a real HTTP server on 127.0.0.1 serves documents written
in each registry's own format (the format's reference is beside each), so the tool reads what
PyPI, npm, a Helm repository, an OCI registry and GitHub answer, with no network. git is the real
git over a local repository. Versions are ordered as ``packaging.version`` orders them."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.http_documents import Documents, closed_port, serving, silent
from tools.versions.pins import Pin
from tools.versions.report import Registries, Report, compare, newest


def _report(pins: list[Pin], base: str = "http://127.0.0.1:9", timeout: float = 5.0) -> Report:
    return Report(pins, Registries(f"{base}/simple", f"{base}/npm/", timeout))


def _one(pin: Pin, base: str, timeout: float = 5.0) -> tuple[str, str | None, str]:
    report = _report([pin], base, timeout)
    [row] = report.run()
    return row.status, row.newest, row.note


def _file(filename: str, yanked: bool = False) -> dict[str, object]:
    return {"filename": filename, "yanked": yanked}


# PyPI JSON API (https://docs.pypi.org/api/json/): "releases" maps a version to its files.
PYPI_JSON = {
    "info": {"name": "demo", "version": "1.10.0"},
    "releases": {
        "1.9.0": [_file("demo-1.9.0.tar.gz")],
        "1.10.0": [_file("demo-1.10.0-py3-none-any.whl")],
        "1.11.0": [_file("demo-1.11.0.tar.gz", yanked=True)],  # yanked: not a release to take
        "1.12.0": [],  # a version with no files left
        "2.0.0rc1": [_file("demo-2.0.0rc1.tar.gz")],
    },
}


@pytest.mark.parametrize(
    ("pinned", "status", "latest"),
    [
        ("1.9.0", "behind", "1.10.0"),
        ("1.10.0", "current", "1.10.0"),
        ("2.0.0b1", "behind", "2.0.0rc1"),
        ("1.13.0", "ahead", "1.10.0"),
    ],
)
def test_pypi_json_api(pinned: str, status: str, latest: str) -> None:
    """Yanked and empty releases are not the newest; a pre-release only for a pre-release pin."""
    with serving(Documents()) as registry:
        registry.add("/pypi/demo/json", json.dumps(PYPI_JSON).encode())
        assert _one(Pin("pypi", "demo", pinned, "r.txt"), registry.base)[:2] == (status, latest)
        assert registry.paths() == ["/pypi/demo/json"]


def test_a_mirror_without_the_json_api_is_read_through_its_simple_index() -> None:
    """PEP 691 JSON (``files``, each ``filename`` and ``yanked``); PEP 503 HTML (one anchor per
    file, ``data-yanked`` on yanked ones)."""
    simple_json = {
        "meta": {"api-version": "1.1"},
        "name": "demo",
        "files": [
            _file("demo-1.2.0.tar.gz"),
            _file("demo-1.3.0-py3-none-any.whl"),
            _file("demo-1.4.0.tar.gz", yanked=True),
        ],
    }
    html = (
        b'<html><body><a href="demo-0.9.tar.gz">demo-0.9.tar.gz</a>'
        b'<a href="demo-0.10-py3-none-any.whl">demo-0.10-py3-none-any.whl</a>'
        b'<a href="demo-0.11.tar.gz" data-yanked="">demo-0.11.tar.gz</a></body></html>'
    )
    with serving(Documents()) as registry:
        registry.add(
            "/simple/demo/", json.dumps(simple_json).encode(), "application/vnd.pypi.simple.v1+json"
        )
        registry.add("/simple/old/", html, "text/html")
        assert _one(Pin("pypi", "demo", "1.2.0", "r.txt"), registry.base)[:2] == ("behind", "1.3.0")
        assert _one(Pin("pypi", "old", "0.10", "r.txt"), registry.base)[:2] == ("current", "0.10")
        accept = [h.get("accept", "") for p, h in registry.asked if p == "/simple/demo/"]
        assert "application/vnd.pypi.simple.v1+json" in accept[0]


def test_npm_registry() -> None:
    """Abbreviated metadata (npm/registry docs/responses/package-metadata.md): ``versions`` with
    ``deprecated`` on deprecated ones; a scoped name is sent with its slash encoded."""
    doc = {
        "name": "@scope/cli",
        "dist-tags": {"latest": "2.4.0"},
        "versions": {
            "2.3.0": {"name": "@scope/cli"},
            "2.4.0": {"name": "@scope/cli"},
            "2.5.0": {"name": "@scope/cli", "deprecated": "broken"},
            "3.0.0-rc.1": {"name": "@scope/cli"},
        },
    }
    with serving(Documents()) as registry:
        registry.add("/npm/@scope%2Fcli", json.dumps(doc).encode())
        assert _one(Pin("npm", "@scope/cli", "2.3.0", "package.json"), registry.base)[:2] == (
            "behind",
            "2.4.0",
        )
        assert "application/vnd.npm.install-v1+json" in registry.asked[0][1]["accept"]


def test_helm_repository_index() -> None:
    """index.yaml (helm.sh docs, "The index file"): ``entries`` maps a chart to its versions."""
    index = b"""apiVersion: v1
entries:
  kyverno:
  - {name: kyverno, version: 3.9.0-rc.1, appVersion: v1.19.0-rc.1}
  - {name: kyverno, version: 3.8.3, appVersion: v1.18.3}
  - {name: kyverno, version: 3.8.2, appVersion: v1.18.2}
  other:
  - {name: other, version: 9.0.0}
generated: "2026-11-30T00:00:00Z"
"""
    with serving(Documents()) as registry:
        registry.add("/charts/index.yaml", index, "application/x-yaml")
        pin = Pin("helm", "kyverno", "3.8.2", "config", f"{registry.base}/charts/")
        assert _one(pin, registry.base)[:2] == ("behind", "3.8.3")
        missing = Pin("helm", "absent", "1.0.0", "config", f"{registry.base}/charts/")
        assert _one(missing, registry.base)[0] == "not-found"


def test_oci_registry_with_a_token_challenge_and_two_pages() -> None:
    """distribution-spec "Listing Tags" (``tags``, ``Link: <...>; rel="next"``) behind the token
    auth of distribution's docs (401 with ``WWW-Authenticate: Bearer realm=...``)."""
    documents = Documents()

    def page(first: bool) -> object:
        def answer(headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
            if headers.get("authorization") != "Bearer t0ken":
                realm = (
                    f'Bearer realm="{documents.base}/token",service="test",'
                    'scope="repository:org/img:pull"'
                )
                return 401, {"WWW-Authenticate": realm}, b"{}"
            tags = ["latest", "v0.3.1", "v0.3.2-alpha"] if first else ["v0.3.3-alpha", "nightly"]
            link = {"Link": '</v2/org/img/tags/list?n=3&last=v0.3.2-alpha>; rel="next"'}
            return (
                200,
                link if first else {},
                json.dumps({"name": "org/img", "tags": tags}).encode(),
            )

        return answer

    documents.routes["/v2/org/img/tags/list"] = page(first=True)  # type: ignore[assignment]
    documents.routes["/v2/org/img/tags/list?n=3&last=v0.3.2-alpha"] = page(first=False)  # type: ignore[assignment]
    with serving(documents) as registry:
        registry.add("/token", json.dumps({"token": "t0ken"}).encode())
        host = registry.base.removeprefix("http://")
        assert _one(Pin("image", "org/img", "v0.3.2-alpha", "config", host), registry.base)[:2] == (
            "behind",
            "v0.3.3-alpha",
        )
        assert _one(Pin("image", "org/img", "v0.3.1", "config", host), registry.base)[:2] == (
            "current",
            "v0.3.1",
        )
        token = next(p for p in registry.paths() if p.startswith("/token"))
        assert "scope=repository%3Aorg%2Fimg%3Apull" in token and "service=test" in token


@pytest.mark.parametrize(
    ("pinned", "status"),
    [
        ("v4", "current"),
        ("v3", "behind"),
        ("v4.1.0", "behind"),
        ("v5", "ahead"),
        ("v4.2rc1", "behind"),
    ],
)
def test_github_releases_and_a_floating_major_tag(pinned: str, status: str) -> None:
    """List releases (docs.github.com REST "List releases"): ``tag_name``, ``draft``; an Action
    pinned at ``v4`` is current while v4.x.y is the newest release. A pre-release pin is that
    pre-release, not a floating tag: v4.2rc1 is behind v4.2.2."""
    releases = [
        {"tag_name": "v5.0.0", "draft": True},
        {"tag_name": "v4.2.2", "draft": False},
        {"tag_name": "v4.1.0", "draft": False},
    ]
    with serving(Documents()) as registry:
        registry.add("/repos/actions/checkout/releases", json.dumps(releases).encode())
        pin = Pin(
            "github",
            "actions/checkout",
            pinned,
            "ci.yml",
            f"{registry.base}/repos/actions/checkout",
        )
        assert _one(pin, registry.base)[:2] == (status, "v4.2.2")


@pytest.mark.parametrize(("pinned", "status"), [("1.10", "behind"), ("1.10.3", "current")])
def test_a_short_pin_outside_github_is_that_exact_release_not_its_newest_patch(
    pinned: str, status: str
) -> None:
    """pip's ``==1.10`` installs 1.10.0 and nothing newer: a PyPI pin of 1.10 is behind 1.10.3.
    Only a GitHub Action's tag floats (``v4`` follows 4.x.y)."""
    with serving(Documents()) as registry:
        releases = {v: [_file(f"demo-{v}.tar.gz")] for v in ("1.10.0", "1.10.3")}
        registry.add("/pypi/demo/json", json.dumps({"info": {}, "releases": releases}).encode())
        assert _one(Pin("pypi", "demo", pinned, "r.txt"), registry.base)[:2] == (status, "1.10.3")


def test_git_pin_against_the_default_branchs_head(tmp_path: Path) -> None:
    repo = tmp_path / "chart"
    git = ["git", "-C", str(repo), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for message in ("one", "two"):
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", message], check=True)
    log = subprocess.run([*git, "log", "--format=%H"], capture_output=True, text=True, check=True)
    head, older = log.stdout.split()
    assert _one(Pin("git", str(repo), head, "config", str(repo)), "")[:2] == ("current", head)
    assert _one(Pin("git", str(repo), older, "config", str(repo)), "")[:2] == ("behind", head)


def test_an_unreachable_registry_is_named_once_and_its_rows_say_so() -> None:
    """Nothing listens on the PyPI index's port: every PyPI row is unreachable, the reason is
    given once for that registry, and the npm row that answered is still judged."""
    port = closed_port()
    with serving(Documents()) as npm:
        npm.add("/npm/cli", json.dumps({"versions": {"1.0.0": {}, "1.1.0": {}}}).encode())
        report = Report(
            [Pin("pypi", name, "1.0", "r.txt") for name in ("a", "b", "c")]
            + [Pin("npm", "cli", "1.0.0", "package.json")],
            Registries(f"http://127.0.0.1:{port}/simple", f"{npm.base}/npm/", 2.0),
        )
        rows = report.run()
    assert [r.status for r in rows if r.kind == "pypi"] == ["unreachable"] * 3
    assert [(r.status, r.newest) for r in rows if r.kind == "npm"] == [("behind", "1.1.0")]
    assert list(report.unreachable) == [f"127.0.0.1:{port}"]


def test_a_registry_that_fails_is_asked_once() -> None:
    with serving(Documents()) as registry:
        registry.routes["/pypi/a/json"] = (503, {}, b"down")
        rows = _report([Pin("pypi", n, "1.0", "r.txt") for n in "abc"], registry.base).run()
        assert len(registry.asked) == 1
    assert {(r.status, r.note) for r in rows} == {
        ("unreachable", f"HTTP 503 from {registry.base}/pypi/a/json")
    }


def test_a_registry_that_never_answers_times_out_quickly() -> None:
    with silent() as port:
        started = time.monotonic()
        status, latest, note = _one(
            Pin("pypi", "slow", "1.0", "r.txt"), f"http://127.0.0.1:{port}", timeout=0.5
        )
        assert time.monotonic() - started < 5
    assert (status, latest) == ("unreachable", None)
    assert "0.5 s" in note


@pytest.mark.parametrize(
    ("versions", "pinned", "expected"),
    [
        (["1.9.0", "1.10.0", "1.2.0"], "1.9.0", "1.10.0"),  # numeric, not text, order
        (["1.0.0", "1.1.0rc1", "1.1.0.dev3", "latest"], "1.0.0", "1.0.0"),  # pre-releases left out
        (["1.0.0", "1.1.0rc1"], "1.1.0b2", "1.1.0rc1"),  # unless the pin is one
        (["v0.3.2-alpha", "v0.3.10-alpha", "v0.3.9"], "v0.3.2-alpha", "v0.3.10-alpha"),
        (["2024.10.1", "2024.9.30"], "2024.9.30", "2024.10.1"),
        (["1.0.post1", "1.0"], "1.0", "1.0.post1"),
        (["nightly", "latest"], "1.0", None),
    ],
)
def test_newest_follows_packaging_version_order(
    versions: list[str], pinned: str, expected: str | None
) -> None:
    assert newest(versions, pinned) == expected


@pytest.mark.parametrize(
    ("pinned", "latest", "status"),
    [
        ("1.9.0", "1.10.0", "behind"),
        ("1.10", "1.10.0", "current"),
        ("2.0", "1.10.0", "ahead"),
        ("v1.2.3", "1.2.3", "current"),
        ("main", "1.0.0", "unknown"),
        ("1.0.0", None, "unknown"),
    ],
)
def test_compare(pinned: str, latest: str | None, status: str) -> None:
    assert compare(pinned, latest) == status
