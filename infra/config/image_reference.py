"""Container image references read as a registry and the kubelet read them: the reference
grammar of the distribution project (``[registry[:port]/]path[:tag][@digest]``), which
containerd and Docker parse with, so a reference refused there is refused at synth.

The rules, in the grammar's words: the path is components of lower-case letters and digits
joined by ``.``, ``_``, ``__`` or runs of ``-``, separated by ``/``; the registry is the first
component when it holds a ``.`` or a ``:``, is ``localhost``, or has an upper-case letter (so
``LMCache/vllm-openai`` names a host ``LMCache``: refused here, as a Docker Hub path written in
upper case); a tag is
a word character then up to 127 of word characters, ``.`` and ``-``; a digest is an algorithm
and its hex (sha256: 64 lower-case hex digits); registry and path together at most 255
characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ALNUM = r"[a-z0-9]+"
_PATH_COMPONENT = re.compile(rf"{_ALNUM}(?:(?:[._]|__|-+){_ALNUM})*")
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_REGISTRY = re.compile(
    rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
)
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}")
# The algorithms the OCI image spec registers, with their hex length (lower case).
_DIGEST_HEX = {"sha256": 64, "sha384": 96, "sha512": 128}
NAME_MAX = 255
GRAMMAR = "[registry[:port]/]path[:tag][@digest] with the path in lower case"


@dataclass(frozen=True)
class ImageReference:
    registry: str | None
    path: str
    """The repository path inside the registry (``lmcache/vllm-openai``)."""
    tag: str | None
    digest: str | None


class BadReference(ValueError):
    """What a registry would refuse in a reference, and the reference it would take, if any."""

    def __init__(self, why: str, fixed: str | None = None) -> None:
        super().__init__(why)
        self.why = why
        self.fixed = fixed


def _split_registry(name: str) -> tuple[str | None, str]:
    first, slash, rest = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        return first, rest
    return None, name


def parse_repository(name: str) -> tuple[str | None, str]:
    """(registry, path) of a repository without tag or digest; raises BadReference."""
    registry, path = _split_registry(name)
    if registry is not None and not ("." in registry or ":" in registry or registry == "localhost"):
        # Read as a host only for its upper case: meant as a Docker Hub path, it is refused there.
        raise BadReference(
            f"{registry!r} reads as a registry host only for its upper-case letters (repository "
            "paths are lower case)",
            name.lower(),
        )
    if registry is not None and not _REGISTRY.fullmatch(registry):
        raise BadReference(f"the registry {registry!r} is not a host name with an optional port")
    components = path.split("/")
    if any(not _PATH_COMPONENT.fullmatch(c) for c in components):
        lower = path.lower()
        if lower != path and all(_PATH_COMPONENT.fullmatch(c) for c in lower.split("/")):
            fixed = f"{registry}/{lower}" if registry else lower
            raise BadReference(
                f"the repository path {path!r} has upper-case letters (registries and the "
                "kubelet refuse them: repository name must be lowercase)",
                fixed,
            )
        raise BadReference(
            f"the repository path {path!r} has a component that is not lower-case letters and "
            "digits joined by '.', '_', '__' or '-'"
        )
    if len(name) > NAME_MAX:
        raise BadReference(f"registry and path are {len(name)} characters, more than {NAME_MAX}")
    if registry is None and re.fullmatch(r"[a-f0-9]{64}", path):
        raise BadReference("a repository named by 64 hex digits reads as an image id")
    return registry, path


def parse_image(reference: str) -> ImageReference:
    """The parts of ``reference``; raises BadReference with what a registry would say."""
    rest, at, digest = reference.partition("@")
    if at:
        _check_digest(digest)
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    tag = None
    if colon > slash:  # a ':' before the last '/' is the registry's port
        rest, tag = rest[:colon], rest[colon + 1 :]
        if not tag:
            raise BadReference("nothing after the ':' that starts the tag")
        if not _TAG.fullmatch(tag):
            raise BadReference(
                f"the tag {tag!r} is not a letter, digit or '_' followed by at most 127 of "
                "those, '.' and '-'"
            )
    try:
        registry, path = parse_repository(rest)
    except BadReference as bad:
        suffix = (f":{tag}" if tag is not None else "") + (f"@{digest}" if at else "")
        raise BadReference(bad.why, bad.fixed and bad.fixed + suffix) from None
    return ImageReference(registry, path, tag, digest if at else None)


def _check_digest(digest: str) -> None:
    if not _DIGEST.fullmatch(digest):
        raise BadReference(f"the digest {digest!r} is not <algorithm>:<hex>, e.g. sha256:<64 hex>")
    algorithm, _, hexpart = digest.partition(":")
    length = _DIGEST_HEX.get(algorithm)
    if length is None:
        raise BadReference(f"the digest algorithm {algorithm!r} is not sha256, sha384 or sha512")
    if not re.fullmatch(rf"[a-f0-9]{{{length}}}", hexpart):
        raise BadReference(f"a {algorithm} digest is {length} lower-case hex digits")
