"""Refuse to write output that holds an unresolved CDK token.

A value CloudFormation only knows at deploy time (a file system's id, an attribute of another
resource) is a token in CDK: a placeholder string, list entry or number that ``cdk deploy``
replaces. Written to plain YAML or JSON it stays a placeholder, and kubectl or Grafana takes it
literally (a PersistentVolume whose ``volumeHandle`` is ``${Token[TOKEN.123]}`` is accepted, and
every Pod that mounts it hangs in ContainerCreating). Every writer of files for people or tools
outside CDK (``k8s.render``, ``hpkv dashboard``) passes its output through ``write_checked``.

The spellings are aws-cdk-lib's own (``core/lib/private/encoding``, what ``Token.is_unresolved``
tests): ``${Token[<key>]}`` for a string, ``#{Token[<key>]}`` for a list entry, and a number
token as Python or JavaScript prints it (``-1.8881545897087526e+289``: the double CDK encodes a
number token as, matched by CDK's own ``STRINGIFIED_NUMBER_PATTERN``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

_KEY = r"[a-zA-Z0-9:._-]+"  # encoding.VALID_KEY_CHARS
TOKEN = re.compile(rf"\$\{{Token\[{_KEY}\]\}}|#\{{Token\[{_KEY}\]\}}|-1\.\d{{10,16}}e\+289")


class UnresolvedTokenError(Exception):
    """Output that would carry a deploy-time placeholder; nothing was written."""


def unresolved_tokens(text: str) -> list[tuple[int, str]]:
    """(line number, token) of every unresolved CDK token in ``text``."""
    return [
        (number, match.group(0))
        for number, line in enumerate(text.splitlines(), start=1)
        for match in TOKEN.finditer(line)
    ]


def check(path: Path, text: str) -> None:
    found = unresolved_tokens(text)
    if found:
        line, token = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise UnresolvedTokenError(
            f"refusing to write {path}: line {line} holds the unresolved CDK token {token}{more}, "
            "a value only `cdk deploy` fills in, which kubectl or Grafana would take literally; "
            "nothing was written: build this output from values known without a deploy"
        )


def check_all(files: Mapping[Path, str]) -> None:
    for path, text in files.items():
        check(path, text)


def write_checked(files: Mapping[Path, str]) -> None:
    """Write every file, or none when any holds an unresolved token."""
    check_all(files)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
