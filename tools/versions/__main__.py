"""List every pinned version beside the newest release its registry lists (a report: exit 0 even
when a pin is behind; 2 on a bad input, one line).

Usage: python -m tools.versions [--json] [--only pypi,npm,...] [--timeout 5]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from typing import NoReturn
from urllib.parse import urlsplit

from infra.config import ConfigError
from tools.versions.pins import discover
from tools.versions.report import KINDS, Registries, Report, as_json, as_table

PYPI = "https://pypi.org/simple"
NPM = "https://registry.npmjs.org/"
# `pip config list` prints key='value'; the environment (:env:) outranks install., then global.
_PIP_INDEX = re.compile(r"^(:env:|install|global)\.index-url='([^']*)'$", re.MULTILINE)


def pip_index() -> str:
    """The index pip installs from: PIP_INDEX_URL, else pip's configuration, else PyPI."""
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"].split()[0]
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    found = dict(_PIP_INDEX.findall(proc.stdout))
    return next((found[k] for k in (":env:", "install", "global") if found.get(k)), PYPI)


def npm_registry() -> str:
    """The registry npm installs from (`npm config get registry` honours .npmrc and the
    environment), else the public one."""
    if shutil.which("npm") is None:
        return NPM
    proc = subprocess.run(
        ["npm", "config", "get", "registry"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    answer = proc.stdout.strip()
    return answer if proc.returncode == 0 and answer.startswith("http") else NPM


def _url_problem(text: str) -> str | None:
    """Why ``text`` is no registry URL urllib can ask (``pypi.org/simple`` has no scheme, and
    urllib refuses it with a traceback at the first request), or None."""
    parts = urlsplit(text)
    if parts.scheme in ("http", "https") and parts.netloc:
        return None
    fix = f"write https://{text}" if "://" not in text else "give an http(s) URL"
    return f"{text!r}: allowed: an http(s) URL with a host, like {PYPI}; fix: {fix}"


def _registry_url(text: str) -> str:
    problem = _url_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


class _OneLineParser(argparse.ArgumentParser):
    """argparse's errors in one line (its own print the usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message}\n")


def _kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(
            f"{','.join(unknown) or text!r}: allowed: {', '.join(KINDS)} (comma-separated)"
        )
    return kinds


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 120:
        raise argparse.ArgumentTypeError(
            f"{text!r}: allowed: seconds, more than 0, at most 120; fix: e.g. --timeout 5"
        )
    return value


def main(argv: list[str] | None = None) -> int:
    parser = _OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--only", type=_kinds, default=KINDS, help=f"kinds: {','.join(KINDS)}")
    parser.add_argument("--timeout", type=_timeout, default=5.0, help="seconds per request")
    parser.add_argument(
        "--pypi-index", type=_registry_url, help="default: the index pip is configured with"
    )
    parser.add_argument(
        "--npm-registry", type=_registry_url, help="default: `npm config get registry`"
    )
    args = parser.parse_args(argv)
    try:
        pins = [pin for pin in discover(kinds=args.only) if pin.kind in args.only]
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    index = args.pypi_index or (pip_index() if "pypi" in args.only else PYPI)
    problem = _url_problem(index)
    if problem is not None:  # pip's own setting: PIP_INDEX_URL, else `pip config`'s index-url
        print(
            f"error: the pip index (PIP_INDEX_URL, else index-url of `pip config list`) = "
            f"{problem}, or pass --pypi-index",
            file=sys.stderr,
        )
        return 2
    where = Registries(
        pypi_index=index,
        npm_registry=args.npm_registry or (npm_registry() if "npm" in args.only else NPM),
        timeout=args.timeout,
    )
    report = Report(pins, where)
    rows = report.run()
    if args.json:
        print(json.dumps(as_json(rows, report.unreachable), indent=2))
    else:
        print(as_table(rows, report.unreachable))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    sys.exit(main())
