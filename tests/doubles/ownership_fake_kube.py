"""tests/doubles/fake_kube.py plus what an apply needs: POST (create; 409 when the object
exists, like the real server) and server-side apply (``application/apply-patch+yaml``), with the
field ownership the API server keeps in ``metadata.managedFields``.

Field ownership, as kube-apiserver's server-side apply keeps it (Kubernetes docs, "Server-Side
Apply": field management, conflicts, "Merge strategy"; kubernetes/apimachinery v0.34.0
``pkg/util/managedfields/internal``, structured-merge-diff v6 ``merge/update.go``): every write
records which fields its manager holds, under (manager, operation): a POST or a merge patch as
``Update``, an apply as ``Apply``.

- An Update (POST, merge patch) compares the object before and after: its manager gains only the
  fields it added or whose value it changed (on a create, every field), keeps what it held but
  what was removed, and every other manager loses the fields it added, changed or removed. A
  field sent with the value it already had changes hands to nobody. An Update of an object that
  has no managed fields at all records nothing (``skipNonApplied``).
- An Apply by manager M owns exactly the fields of its body; fields M's previous apply set and
  this one leaves out are removed from the object, unless another manager owns them too. The
  first apply to an object without managed fields (one stored here by ``put``) first gives every
  field it has to the manager ``before-first-apply``, as an Update.
- Whatever a patch changes is judged on the object before and after it, whatever its type;
  ``FakeKube`` refuses the patches it cannot apply (``Unmodelled``), and a write to a
  subresource is refused here.
Lists whose items carry a key (``name``, ``mountPath``, ``containerPort``/``port`` with
``protocol``) merge item by item as associative lists; other lists are atomic. The manager of a
request without ``fieldManager`` is the User-Agent's product token, as the server derives it. A
``metadata.resourceVersion`` in an apply body is a precondition: 409 Conflict when the object
exists at another version; an absent object is created. ``managers(path)`` shows the ownership.

Every request is also kept as received (``received``: all header field lines and the decoded
body), and refused where the real API server refuses it: 406 for an Accept it cannot serve, 415
for a POST body type it cannot decode, 400/422 for a DELETE body that is not valid DeleteOptions.
"""

from __future__ import annotations

import copy
import io
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.doubles.fake_kube import FakeKube, Refusal, Unmodelled

# What kube-apiserver serves and decodes (media types compare case-insensitively, RFC 9110).
SERVED = {"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
ACCEPTED = SERVED | {"*/*", "application/*"}
DELETE_OPTIONS_VERSIONS = {"v1", "meta.k8s.io/v1"}
PROPAGATION_POLICIES = {"Orphan", "Background", "Foreground"}
APPLY = "application/apply-patch+yaml"
BEFORE_FIRST_APPLY = "before-first-apply"
# A field path: map keys, and ("k", key) for the item of an associative list with that key.
Path = tuple[Any, ...]
Owners = dict[tuple[str, str], set[Path]]  # (manager, operation) -> the fields it owns
# Set by the server, never owned by a manager.
UNTRACKED = {("apiVersion",), ("kind",), ("status",)} | {
    ("metadata", f)
    for f in ("name", "namespace", "resourceVersion", "managedFields", "uid", "creationTimestamp")
}
LIST_KEYS = (("name",), ("mountPath",), ("containerPort", "protocol"), ("port", "protocol"))


@dataclass(frozen=True)
class Received:
    """One request as the API server received it."""

    method: str
    path: str
    headers: tuple[tuple[str, str], ...]  # every field line, in the order sent
    body: Any  # the decoded JSON body; None without one

    def header(self, name: str) -> list[str]:
        """Every value sent under ``name`` (field names are case-insensitive, RFC 9110)."""
        return [v for k, v in self.headers if k.lower() == name.lower()]


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def _refusal(method: str, headers: Any, body: Any) -> tuple[int, str] | None:
    """The status and message kube-apiserver answers instead of serving, or None."""
    accept = [_media_type(r) for v in headers.get_all("Accept") or [] for r in v.split(",")]
    if accept and not ACCEPTED.intersection(accept):
        return 406, f"only the following media types are accepted: {', '.join(sorted(SERVED))}"
    ctype = _media_type(headers.get("Content-Type") or "")
    if method == "POST" and ctype not in SERVED:
        return 415, f"the body of the request was in an unknown format: {ctype}"
    if method == "DELETE" and body is not None:
        # The server decodes a DELETE body as DeleteOptions; kind and apiVersion may be left out.
        if body.get("kind", "DeleteOptions") != "DeleteOptions":
            return 400, f"no kind {body['kind']!r} is registered for DeleteOptions"
        if body.get("apiVersion", "v1") not in DELETE_OPTIONS_VERSIONS:
            return 400, f"no version {body['apiVersion']!r} of DeleteOptions"
        policy = body.get("propagationPolicy")
        if policy is not None and policy not in PROPAGATION_POLICIES:
            return 422, f'propagationPolicy: Unsupported value: "{policy}"'
    return None


def _item_key(item: Any) -> Any:
    """The key of an associative list's item, or None (the list is then atomic)."""
    if not isinstance(item, dict):
        return None
    for fields in LIST_KEYS:
        if fields[0] in item:
            return tuple(item.get(f, "TCP" if f == "protocol" else None) for f in fields)
    return None


def _keyed(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_item_key(i) for i in value)


def field_set(value: Any, prefix: Path = ()) -> set[Path]:
    """Every field ``value`` sets: its leaves (scalars, atomic lists, empty maps) and the items
    of its associative lists."""
    if isinstance(value, dict) and value:
        found: set[Path] = set()
        for key, inner in value.items():
            if (*prefix, key) not in UNTRACKED:
                found |= field_set(inner, (*prefix, key))
        return found
    if _keyed(value):
        found = set()
        for item in value:
            at = (*prefix, ("k", _item_key(item)))
            found |= {at} | field_set(item, at)
        return found
    return {prefix}


def _is_item(path: Path) -> bool:
    """The path of an associative list's item (not one of its fields)."""
    return bool(path) and isinstance(path[-1], tuple)


def compare(live: Any, new: Any) -> tuple[set[Path], set[Path], set[Path]]:
    """(added, modified, removed) fields from ``live`` to ``new``, as structured-merge-diff's
    Compare: an item of an associative list is added or removed as a whole, never modified
    (its fields are)."""
    before, after = field_set(live), field_set(new)
    modified = {
        p for p in before & after if not _is_item(p) and value_at(live, p) != value_at(new, p)
    }
    return after - before, modified, before - after


def _child(node: Any, step: Any) -> Any:
    if isinstance(step, tuple) and isinstance(node, list):
        return next((i for i in node if _item_key(i) == step[1]), None)
    return node.get(step) if isinstance(node, dict) else None


def value_at(obj: Any, path: Path) -> Any:
    node = obj
    for step in path:
        node = _child(node, step)
    return node


def _remove(obj: Any, path: Path) -> None:
    parent = value_at(obj, path[:-1])
    last = path[-1]
    if isinstance(last, tuple) and isinstance(parent, list):
        parent[:] = [i for i in parent if _item_key(i) != last[1]]
    elif isinstance(parent, dict):
        parent.pop(last, None)


def _apply_values(live: Any, applied: Any) -> Any:
    """``applied`` merged into ``live``: maps key by key, associative lists item by item (the
    applied items in their order, then the live items it does not name), anything else
    replaced."""
    if isinstance(applied, dict) and isinstance(live, dict):
        return {**live, **{k: _apply_values(live.get(k), v) for k, v in applied.items()}}
    if _keyed(applied) and _keyed(live):
        named = {_item_key(i) for i in applied}
        by_key = {_item_key(i): i for i in live}
        merged = [_apply_values(by_key.get(_item_key(i)), i) for i in applied]
        return merged + [i for i in live if _item_key(i) not in named]
    return copy.deepcopy(applied)


def _key_field(path: Path) -> bool:
    """A key field (``name``, ...) of a list item: it goes with its item, never alone."""
    keys = {f for fields in LIST_KEYS for f in fields}
    return len(path) > 1 and isinstance(path[-2], tuple) and path[-1] in keys


class Conflict(Exception):
    """What the server answers 409 for; the message is its Status message."""


class ApplyFakeKube(FakeKube):
    def __init__(self) -> None:
        self.received: list[Received] = []
        self.owners: dict[str, Owners] = {}  # object path -> who owns which of its fields
        self._request = threading.local()  # the User-Agent of the request being served
        super().__init__()

    def managers(self, path: str) -> dict[tuple[str, str], set[Path]]:
        """(manager, operation) -> the fields it owns, for the object at ``path``."""
        return copy.deepcopy(self.owners.get(path, {}))

    def _default_manager(self) -> str:
        agent = getattr(self._request, "agent", "") or ""
        return agent.split("/", 1)[0]

    def _update(self, path: str, manager: str, live: Any, new: Any) -> None:
        """Record an Update by ``manager`` from ``live`` (None: a create) to ``new``."""
        if live is not None and not self.owners.get(path):
            return  # skipNonApplied: no managed fields, and an update does not start them
        added, modified, removed = compare(live or {}, new)
        changed = added | modified
        owners = self.owners.setdefault(path, {})
        mine = (manager, "Update")
        for key in owners:
            if key != mine:
                owners[key] -= changed | removed
        owners[mine] = (owners.get(mine, set()) - removed) | changed
        self.owners[path] = {k: v for k, v in owners.items() if v}

    def _server_side_apply(
        self, path: str, query: dict[str, list[str]], applied: dict[str, Any]
    ) -> dict[str, Any]:
        manager = query.get("fieldManager", [""])[0]
        if not manager:  # the real server refuses an apply without one
            raise ValueError("PATCH, application/apply-patch+yaml: fieldManager is required")
        force = query.get("force", ["false"])[0] == "true"
        live = self.objects.get(path)
        wanted = (applied.get("metadata") or {}).get("resourceVersion")
        at = (live or {}).get("metadata", {}).get("resourceVersion")
        if wanted is not None and live is not None and at != wanted:
            raise Conflict(
                f"Operation cannot be fulfilled on {path.rsplit('/', 2)[-2]} "
                f'"{path.rsplit("/", 1)[-1]}": the object has been modified; please apply '
                "your changes to the latest version and try again"
            )
        applied = copy.deepcopy(applied)
        applied.get("metadata", {}).pop("resourceVersion", None)
        if live is not None and not self.owners.get(path):
            self.owners[path] = {}
            self._update(path, BEFORE_FIRST_APPLY, None, live)
        owners = self.owners.setdefault(path, {}) if live is not None else {}
        mine = (manager, "Apply")
        fields = field_set(applied)
        others = {k: v for k, v in owners.items() if k != mine}
        current = copy.deepcopy(live) if live is not None else {}
        clashes = {
            (p, k[0])
            for k, owned in others.items()
            for p in fields & owned
            if not isinstance(p[-1], tuple) and value_at(current, p) != value_at(applied, p)
        }
        if clashes and not force:
            said = ", ".join(f'conflict with "{m}": .{".".join(map(str, p))}' for p, m in clashes)
            raise Conflict(f"Apply failed with {len(clashes)} conflict(s): {said}")
        held = set().union(*others.values()) if others else set()
        dropped = owners.get(mine, set()) - fields
        for p in sorted(dropped, key=len, reverse=True):
            if not any(q[: len(p)] == p for q in held) and not _key_field(p):
                _remove(current, p)
        for k in others:  # forced: the clashing fields are ours alone now
            owners[k] -= {p for p, _ in clashes}
        owners[mine] = fields
        self.owners[path] = {k: v for k, v in owners.items() if v}
        self.objects[path] = _apply_values(current, applied)
        return self.objects[path]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        base: Any = super()._handler()
        fake = self

        class Handler(base):  # type: ignore[misc,valid-type]
            def _receive(self, method: str, serve: Any) -> None:
                """Keep the request, refuse it as the real server would, else ``serve`` it."""
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                with fake._lock:
                    fake.received.append(
                        Received(method, self.path.split("?")[0], tuple(self.headers.items()), body)
                    )
                fake._request.agent = self.headers.get("User-Agent")
                refused = _refusal(method, self.headers, body)
                if refused:
                    return self._status(*refused)
                original, self.rfile = self.rfile, io.BytesIO(raw)  # served from what was read
                try:
                    serve()
                finally:
                    self.rfile = original

            def do_GET(self) -> None:
                self._receive("GET", super().do_GET)

            def do_PATCH(self) -> None:
                self._receive("PATCH", super().do_PATCH)

            def do_DELETE(self) -> None:
                self._receive("DELETE", super().do_DELETE)

            def do_POST(self) -> None:
                self._receive("POST", self._create)

            def _create(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                name = json.loads(body)["metadata"]["name"]
                path = self.path.split("?")[0]
                with fake._lock:
                    fake.requests.append(("POST", path, self.headers.get("Content-Type")))
                    if (("POST", path) not in fake.fail) and f"{path}/{name}" not in fake.objects:
                        fake.objects[f"{path}/{name}"] = json.loads(body)
                        query = parse_qs(urlsplit(self.path).query)
                        manager = query.get("fieldManager", [fake._default_manager()])[0]
                        fake._update(f"{path}/{name}", manager, None, json.loads(body))
                        return self._send(201, json.loads(body))
                if ("POST", path) in fake.fail:
                    return self._status(fake.fail[("POST", path)], "injected failure")
                self._status(409, f'"{name}" already exists')

        return Handler

    def _serve(
        self, method: str, path: str, query: dict[str, list[str]], body: bytes, ctype: str | None
    ) -> Any:
        if method == "PATCH" and ctype == APPLY:
            try:
                return self._server_side_apply(path, query, json.loads(body))
            except Conflict as e:
                raise Refusal(409, str(e)) from e
        if method == "PATCH" and path.endswith("/scale"):
            raise Unmodelled("field ownership of a write to a subresource")
        live = copy.deepcopy(self.objects.get(path))
        result = super()._serve(method, path, query, body, ctype)
        if method == "DELETE":
            self.owners.pop(path, None)
        elif method == "PATCH":
            manager = query.get("fieldManager", [self._default_manager()])[0]
            self._update(path, manager, live, self.objects[path])
        return result


PVS = "/api/v1/persistentvolumes"
PROVISIONER_FINALIZER = "external-provisioner.volume.kubernetes.io/finalizer"


class Provisioner:
    """Plays the PV controller and a CSI provisioner on ``kube``: a claim of ``storage_class``
    applied without a volume is bound to a new PersistentVolume ``pvc-<namespace>-<name>``
    (reclaim policy Delete, the provisioner's finalizer). Once the claim is deleted, its
    volume is deleted ``after_reads`` reads of it later, when ``running(kube)`` says the
    provisioner still runs then; otherwise it stays Released, finalizer and all, as a volume
    whose provisioner is gone does. Time passes for the provisioner only while someone reads
    the volume: whoever does not wait for it loses the race, the worst case."""

    def __init__(
        self,
        kube: ApplyFakeKube,
        *,
        storage_class: str = "curvine-sc",
        after_reads: int = 2,
        running: Any = lambda kube: True,
    ) -> None:
        self.kube, self.storage_class = kube, storage_class
        self.after_reads, self.running = after_reads, running
        self.releasing: dict[str, int] = {}  # volume path -> reads until its provisioner acts
        kube.after_write.append(self._written)
        kube.after_read.append(self._read)

    def volumes(self) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.kube.objects.items() if k.startswith(f"{PVS}/")}

    def _written(self, kube: Any, method: str, path: str) -> None:
        if "/persistentvolumeclaims/" not in path:
            return
        with kube._lock:
            ns, name = path.split("/")[-3], path.split("/")[-1]
            volume = f"pvc-{ns}-{name}"
            claim = kube.objects.get(path)
            if method == "DELETE":
                if f"{PVS}/{volume}" in kube.objects:
                    kube.objects[f"{PVS}/{volume}"]["status"] = {"phase": "Released"}
                    self.releasing[f"{PVS}/{volume}"] = self.after_reads
                return
            spec = (claim or {}).get("spec") or {}
            if spec.get("storageClassName") != self.storage_class or spec.get("volumeName"):
                return
            spec["volumeName"] = volume
            kube.objects[f"{PVS}/{volume}"] = {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": volume, "finalizers": [PROVISIONER_FINALIZER]},
                "spec": {
                    "storageClassName": self.storage_class,
                    "persistentVolumeReclaimPolicy": "Delete",
                    "claimRef": {"namespace": ns, "name": name},
                },
                "status": {"phase": "Bound"},
            }

    def _read(self, kube: Any, method: str, path: str) -> None:
        with kube._lock:
            if path not in self.releasing:
                return
            self.releasing[path] -= 1
            if self.releasing[path] <= 0 and self.running(kube):
                del self.releasing[path], kube.objects[path]
