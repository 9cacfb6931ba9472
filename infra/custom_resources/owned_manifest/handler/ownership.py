"""Apply and delete objects only where the app owns them.

An object is ours when its annotation ``hyperpod-kvcache/owner`` equals this deployment's owner
value (``<project>-<environment>``). Apply: every write is a server-side apply by the field
manager ``hyperpod-kvcache``, the create of an absent object included, so that manager alone owns
what we set and a later version that drops a field (an env var, a volume, a port, a label)
removes it; if any object exists without our mark nothing is changed and the apply fails with
one line naming it and the fix. Delete: only ours, and gone counts as done.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from .cluster import Cluster
from .kinds import Ref
from .volumes import VolumeWait, wait_for_volumes

OWNER_ANNOTATION = "hyperpod-kvcache/owner"
DEFAULT_FIX = "rename ours in config or remove theirs"


class OwnershipError(Exception):
    """A refusal or failure the user must act on; ``str(error)`` is one line."""


@dataclass(frozen=True)
class Check:
    """An object that must exist (``present``) or must not exist unless ours (``absent``)."""

    ref: Ref
    fix: str
    match: Mapping[str, str] | None = None  # top-level fields it must have, e.g. provisioner

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Check:
        ref = Ref.of(
            {
                "apiVersion": data["apiVersion"],
                "kind": data["kind"],
                "metadata": {"name": data["name"], "namespace": data.get("namespace")},
            }
        )
        return cls(ref=ref, fix=str(data["fix"]), match=data.get("match"))


def owner_of(obj: Mapping[str, Any] | None) -> str | None:
    if obj is None:
        return None
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(OWNER_ANNOTATION)
    return None if value is None else str(value)


def stamped(obj: Mapping[str, Any], owner: str) -> dict[str, Any]:
    """A copy of ``obj`` carrying our owner annotation."""
    out = json.loads(json.dumps(obj))
    meta = out.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), OWNER_ANNOTATION: owner}
    return out


def _refusal(ref: Ref, current: Mapping[str, Any], hints: Mapping[str, str]) -> str:
    mark = owner_of(current)
    whose = f"marked {OWNER_ANNOTATION}={mark}" if mark else f"has no {OWNER_ANNOTATION} mark"
    return f"{ref} exists and is not ours ({whose}): {hints.get(ref.key, DEFAULT_FIX)}"


def check(
    cluster: Cluster,
    owner: str,
    refs: Iterable[Ref],
    *,
    present: Sequence[Check] = (),
    absent: Sequence[Check] = (),
    hints: Mapping[str, str] | None = None,
) -> dict[Ref, dict[str, Any] | None]:
    """Read everything first; raise OwnershipError (nothing changed) on the first problem."""
    hints = hints or {}
    for c in present:
        current = cluster.get(c.ref)
        if current is None:
            raise OwnershipError(f"{c.ref} does not exist: {c.fix}. Nothing was changed.")
        for field, want in (c.match or {}).items():
            if current.get(field) != want:
                raise OwnershipError(
                    f"{c.ref} has {field} {current.get(field)!r}, not {want!r}: {c.fix}. "
                    "Nothing was changed."
                )
    for c in absent:
        current = cluster.get(c.ref)
        if current is not None and owner_of(current) != owner:
            raise OwnershipError(f"{c.ref} exists: {c.fix}. Nothing was changed.")
    found: dict[Ref, dict[str, Any] | None] = {}
    refused: list[str] = []
    for ref in refs:
        current = cluster.get(ref)
        found[ref] = current
        if current is not None and owner_of(current) != owner:
            refused.append(_refusal(ref, current, hints))
    if refused:
        more = f" (and {len(refused) - 1} more object(s) not ours)" if len(refused) > 1 else ""
        raise OwnershipError(f"{refused[0]}{more}. Nothing was changed.")
    return found


def apply(
    cluster: Cluster,
    owner: str,
    objects: Sequence[Mapping[str, Any]],
    *,
    preflight: Sequence[Ref] = (),
    present: Sequence[Check] = (),
    absent: Sequence[Check] = (),
    hints: Mapping[str, str] | None = None,
    previous: Sequence[Mapping[str, Any]] = (),
) -> list[str]:
    """Create or update ``objects``; prune ours that ``previous`` had and ``objects`` lost.

    ``preflight`` names further objects (of later applies) checked for ownership up front, so a
    refusal comes before anything is changed. Returns what was done, for the log.
    """
    refs = [Ref.of(dict(o)) for o in objects]
    extra = [r for r in preflight if r not in refs]
    found = check(cluster, owner, [*refs, *extra], present=present, absent=absent, hints=hints)
    done: list[str] = []
    created: list[Ref] = []
    for ref, obj in zip(refs, objects, strict=True):
        verb = "update" if found[ref] is not None else "create"
        try:
            if found[ref] is not None:
                cluster.apply(ref, stamped(obj, owner))
            elif cluster.create(ref, stamped(obj, owner)):
                created.append(ref)
            else:
                raise OwnershipError(_appeared(cluster, ref, hints or {}, created))
        except ApiException as e:
            undone = _undo(cluster, created)
            raise OwnershipError(
                f"{verb} {ref} failed: HTTP {e.status} {_reason(e)}{undone}. Fix the object in "
                "the chart or the cluster, then deploy again."
            ) from e
        done.append(f"{verb}d {ref}")
    kept = set(refs)
    for old in reversed([Ref.of(dict(o)) for o in previous]):
        if old not in kept:
            done.append(delete_one(cluster, owner, old))
    return done


def _appeared(cluster: Cluster, ref: Ref, hints: Mapping[str, str], created: Sequence[Ref]) -> str:
    """The refusal when ``ref``, absent when checked, was created by someone else before our
    create: theirs is left as it is, and what this apply created is removed."""
    current = cluster.get(ref) or {}
    mark = owner_of(current)
    whose = f"marked {OWNER_ANNOTATION}={mark}" if mark else f"no {OWNER_ANNOTATION} mark"
    return (
        f"{ref} was created by someone else while this deploy ran ({whose}) and is not ours: "
        f"{hints.get(ref.key, DEFAULT_FIX)}{_undo(cluster, created)}. It was left as it is."
    )


def _undo(cluster: Cluster, created: Sequence[Ref]) -> str:
    """Delete what this apply created, newest first; say what was removed and what remains."""
    removed: list[str] = []
    left: list[str] = []
    for ref in reversed(created):
        try:
            cluster.delete(ref)
            removed.insert(0, str(ref))
        except ApiException as e:
            left.insert(0, f"{ref} (HTTP {e.status} {_reason(e)})")
    said = f"; removed what this apply had created ({', '.join(removed)})" if removed else ""
    if left:
        said += f"; could not remove what it created: {', '.join(left)}"
    return said


def _reason(e: ApiException) -> str:
    try:
        message = json.loads(e.body or "{}").get("message")
    except (ValueError, AttributeError):
        message = None
    return str(message or e.reason or "").replace("\n", " ")


def delete_one(cluster: Cluster, owner: str, ref: Ref) -> str:
    return _delete_one(cluster, owner, ref)[0]


def _delete_one(cluster: Cluster, owner: str, ref: Ref) -> tuple[str, dict[str, Any] | None]:
    """What was done, and the object as read before its delete (None if not deleted)."""
    current = cluster.get(ref)
    if current is None:
        return f"{ref} is gone already", None
    mark = owner_of(current)
    if mark != owner:
        return f"left {ref}: not ours ({OWNER_ANNOTATION}={mark or 'absent'})", None
    if not cluster.delete(ref):
        return f"{ref} is gone already", None
    return f"deleted {ref}", current


def delete(
    cluster: Cluster,
    owner: str,
    objects: Sequence[Mapping[str, Any]],
    wait: VolumeWait | None = None,
) -> list[str]:
    """Delete ours, in reverse apply order, then wait (bounded, ``wait``) for the volumes of
    the claims it deleted; never raises for one object (logged instead)."""
    done: list[str] = []
    claims: list[tuple[Ref, Mapping[str, Any]]] = []
    for obj in reversed(objects):
        ref = Ref.of(dict(obj))
        try:
            line, deleted = _delete_one(cluster, owner, ref)
        except ApiException as e:
            line, deleted = (
                f"could not delete {ref}: HTTP {e.status} {_reason(e)}; left in place",
                None,
            )
        done.append(line)
        if deleted is not None and ref.kind == "PersistentVolumeClaim":
            claims.append((ref, deleted))
    return done + wait_for_volumes(cluster, claims, wait or VolumeWait())
