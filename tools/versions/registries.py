"""The releases a registry lists for one package, chart, image or repository, in the registry's
own documented format; every look-up has a short timeout.

Formats:
- PyPI JSON API, ``GET <host>/pypi/<name>/json``: ``releases`` maps each version to its files,
  each with ``yanked`` (https://docs.pypi.org/api/json/). A mirror without it: the simple index,
  JSON (PEP 691, ``files`` with ``filename`` and ``yanked``) or HTML (PEP 503, one anchor per file).
- npm registry, ``GET <registry>/<name>``, abbreviated metadata: ``versions`` maps each version to
  its manifest, ``deprecated`` set on deprecated ones
  (https://github.com/npm/registry/blob/main/docs/responses/package-metadata.md).
- Helm chart repository, ``GET <repository>/index.yaml``: ``entries`` maps each chart to its
  versions (https://helm.sh/docs/topics/chart_repository/#the-index-file).
- OCI distribution, ``GET /v2/<name>/tags/list`` (``tags``; the ``Link`` header points at the
  next page), after the Bearer token challenge of a ``401``
  (https://github.com/opencontainers/distribution-spec/blob/main/spec.md#listing-tags;
  https://distribution.github.io/distribution/spec/auth/token/).
- GitHub releases, ``GET /repos/<owner>/<repo>/releases``: ``tag_name`` and ``draft``
  (https://docs.github.com/en/rest/releases/releases#list-releases).
- git: ``git ls-remote <url> HEAD``, the commit of the default branch.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from html.parser import HTMLParser
from typing import Any

import yaml
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    parse_sdist_filename,
    parse_wheel_filename,
)

USER_AGENT = "hyperpod-kvcache-versions"
PYPI_SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
NPM_ABBREVIATED = "application/vnd.npm.install-v1+json"
MAX_TAG_PAGES = 20


class Unreachable(Exception):
    """The registry did not answer, or not with the document asked for."""


class NotFound(Exception):
    """The registry answered that it has no such package."""


def get(url: str, timeout: float, headers: dict[str, str] | None = None) -> tuple[bytes, Any]:
    """The body and headers of a 200; NotFound for a 404, Unreachable for anything else."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read(), response.headers
    except urllib.error.HTTPError as error:
        if error.code == 404:
            raise NotFound(url) from None
        raise Unreachable(f"HTTP {error.code} from {url}") from None
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, TimeoutError):
            raise Unreachable(f"no answer within {timeout:g} s") from None
        raise Unreachable(getattr(reason, "strerror", None) or str(reason)) from None
    except TimeoutError:
        raise Unreachable(f"no answer within {timeout:g} s") from None
    except (ConnectionError, OSError) as error:
        raise Unreachable(error.strerror or str(error)) from None


def _json(body: bytes, url: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        raise Unreachable(f"not a JSON document: {url}") from None


def pypi_versions(name: str, index: str, timeout: float) -> list[str]:
    """Versions with at least one file not yanked: the JSON API beside the index where the host
    has one, else the simple index itself."""
    index = index.rstrip("/")
    if index.endswith("/simple"):
        url = f"{index.removesuffix('/simple')}/pypi/{name}/json"
        try:
            body, _ = get(url, timeout)
        except NotFound:
            pass  # no such package, or a mirror without the JSON API: the simple index says
        else:
            releases = _json(body, url).get("releases", {})
            return [v for v, files in releases.items() if any(not f.get("yanked") for f in files)]
    url = f"{index}/{name}/"
    body, headers = get(url, timeout, {"Accept": f"{PYPI_SIMPLE_JSON}, text/html;q=0.1"})
    if PYPI_SIMPLE_JSON in headers.get("Content-Type", ""):
        files = [f["filename"] for f in _json(body, url).get("files", []) if not f.get("yanked")]
    else:
        files = _anchors(body.decode("utf-8", "replace"))
    return sorted({v for v in map(_file_version, files) if v})


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.files: list[str] = []
        self._yanked = False
        self._in_anchor = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._in_anchor, self._yanked = True, any(k == "data-yanked" for k, _ in attrs)

    def handle_endtag(self, tag: str) -> None:
        self._in_anchor = self._in_anchor and tag != "a"

    def handle_data(self, data: str) -> None:
        if self._in_anchor and not self._yanked and data.strip():
            self.files.append(data.strip())


def _anchors(html: str) -> list[str]:
    parser = _Anchors()
    parser.feed(html)
    return parser.files


def _file_version(filename: str) -> str | None:
    try:
        if filename.endswith(".whl"):
            return str(parse_wheel_filename(filename)[1])
        return str(parse_sdist_filename(filename)[1])
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None


def npm_versions(name: str, registry: str, timeout: float) -> list[str]:
    url = registry.rstrip("/") + "/" + urllib.parse.quote(name, safe="@")
    body, _ = get(url, timeout, {"Accept": f"{NPM_ABBREVIATED}, application/json;q=0.8"})
    versions = _json(body, url).get("versions", {})
    return [v for v, manifest in versions.items() if not manifest.get("deprecated")]


def helm_versions(chart: str, repository: str, timeout: float) -> list[str]:
    url = repository.rstrip("/") + "/index.yaml"
    body, _ = get(url, timeout)
    try:
        index = yaml.safe_load(body)
    except yaml.YAMLError:
        raise Unreachable(f"not a Helm repository index: {url}") from None
    entries = (index or {}).get("entries", {}) if isinstance(index, dict) else {}
    if chart not in entries:
        raise NotFound(f"{chart} in {url}")
    return [str(e["version"]) for e in entries[chart] if "version" in e and not e.get("deprecated")]


def _registry_base(registry: str) -> str:
    host = registry.split(":", 1)[0]
    scheme = "http" if host in ("localhost", "127.0.0.1") else "https"  # as docker treats them
    return f"{scheme}://{registry}"


_CHALLENGE = re.compile(r'(\w+)="([^"]*)"')
_NEXT = re.compile(r"<([^>]+)>\s*;\s*rel=\"?next\"?")


def image_tags(repository: str, registry: str, timeout: float) -> list[str]:
    base = _registry_base(registry)
    url: str | None = f"{base}/v2/{repository}/tags/list"
    headers: dict[str, str] = {}
    tags: list[str] = []
    for _ in range(MAX_TAG_PAGES):
        if url is None:
            break
        try:
            body, response = get(url, timeout, headers)
        except Unreachable as error:
            if "HTTP 401" not in str(error) or headers:
                raise
            headers = {"Authorization": f"Bearer {_token(url, repository, timeout)}"}
            body, response = get(url, timeout, headers)
        tags += _json(body, url).get("tags") or []
        link = _NEXT.search(response.get("Link", ""))
        url = urllib.parse.urljoin(base, link[1]) if link else None
    return tags


def _token(url: str, repository: str, timeout: float) -> str:
    """An anonymous pull token from the realm the registry's 401 names."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    try:
        urllib.request.urlopen(request, timeout=timeout).close()
    except urllib.error.HTTPError as error:
        challenge = dict(_CHALLENGE.findall(error.headers.get("WWW-Authenticate", "")))
    else:
        raise Unreachable(f"no token challenge from {url}")
    if "realm" not in challenge:
        raise Unreachable(f"HTTP 401 without a Bearer realm from {url}")
    query = {"scope": challenge.get("scope", f"repository:{repository}:pull")}
    if "service" in challenge:
        query["service"] = challenge["service"]
    token_url = f"{challenge['realm']}?{urllib.parse.urlencode(query)}"
    body, _ = get(token_url, timeout)
    answer = _json(body, token_url)
    token = answer.get("token") or answer.get("access_token")
    if not token:
        raise Unreachable(f"no token in the answer of {challenge['realm']}")
    return str(token)


def github_tags(api_repository: str, timeout: float) -> list[str]:
    url = api_repository.rstrip("/") + "/releases?per_page=100"
    body, _ = get(url, timeout, {"Accept": "application/vnd.github+json"})
    return [r["tag_name"] for r in _json(body, url) if not r.get("draft")]


def git_head(url: str, timeout: float) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        proc = subprocess.run(
            ["git", "ls-remote", url, "HEAD"],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise Unreachable(f"no answer within {timeout:g} s") from None
    except FileNotFoundError:
        raise Unreachable("git is not on PATH") from None
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise Unreachable(lines[-1] if lines else f"git ls-remote exited {proc.returncode}")
    head = proc.stdout.split()
    if not head:
        raise NotFound(url)
    return head[0]
