"""Write only over what the product wrote: every folder the product writes into keeps a record of
the files it put there (``.hpkv-written``: each name with the SHA-256 of what was written).

A folder is written into when it is new or empty, or when everything in it is in its record and
unchanged since: a re-run into the product's own output works, a folder that holds anything else
(a checkout's README.md, a GitOps repository's kustomization.yaml, a file edited since the
product wrote it) is refused in one line before anything is written. Commands that write one
file (a PNG) need only that file to be absent or recorded and unchanged. ``hpkv manifests``, the
synth's ``dist/<env>/``, ``hpkv dashboard``, ``hpkv bench``, ``hpkv bench compare`` and
``hpkv report`` all write through here.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

RECORD = ".hpkv-written"
NOTE = (
    "Files hpkv wrote into this folder, with the SHA-256 of what it wrote. hpkv writes here only "
    "while everything in the folder is listed and unchanged."
)
# What an operating system's file browser leaves in any folder it shows: never a name the
# product writes, so never written over, and no reason to refuse the folder.
LITTER = frozenset({".DS_Store", "Thumbs.db", "desktop.ini"})
SHOW = 3  # names a refusal lists before "and N more"


class OutputRefused(Exception):
    """Writing there would replace what the product did not write; nothing was written. One
    line: ``<label> = <path>: allowed: ...; fix: ...``."""


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _said(path: Path) -> str:
    text = str(path)
    return text if text and text.isprintable() and " " not in text else repr(text)


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:SHOW])
    return shown + (f" and {len(names) - SHOW} more" if len(names) > SHOW else "")


def read_record(folder: Path) -> dict[str, str]:
    """The record of ``folder``: name -> SHA-256; empty when there is none or it is not one
    of ours (not a regular file, not the JSON written here)."""
    path = folder / RECORD
    try:
        if not stat.S_ISREG(path.lstat().st_mode):
            return {}
        files = json.loads(path.read_text(encoding="utf-8")).get("files", {})
    except (OSError, ValueError, AttributeError):
        return {}
    if not isinstance(files, dict):
        return {}
    return {str(k): str(v) for k, v in files.items() if isinstance(v, str)}


def _write_record(folder: Path, files: Mapping[str, str]) -> None:
    text = json.dumps({"note": NOTE, "files": dict(sorted(files.items()))}, indent=2) + "\n"
    temporary = folder / f"{RECORD}.tmp"
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(folder / RECORD)


def _ours_unchanged(path: Path, recorded: Mapping[str, str]) -> bool | None:
    """True: in the record and unchanged; False: in it but changed (or no longer a plain file);
    None: not in the record."""
    if path.name not in recorded:
        return None
    try:
        if not stat.S_ISREG(path.lstat().st_mode):  # a link or a folder now: not what we wrote
            return False
        return digest(path.read_bytes()) == recorded[path.name]
    except OSError:
        return False


def _first_existing(path: Path) -> Path:
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


@dataclass(frozen=True)
class _Destination:
    """Where the product writes; ``label``: how the user named it (``--out``, ``--png``)."""

    path: Path
    label: str

    def _refuse(self, allowed: str, fix: str) -> OutputRefused:
        return OutputRefused(f"{self.label} = {_said(self.path)}: allowed: {allowed}; fix: {fix}")

    def _writable(self, folder: Path, what: str) -> Path:
        """The first folder of ``folder`` and its parents that exists: a folder one can write
        to, or a refusal saying ``what`` belongs there."""
        anchor = _first_existing(folder)
        if not anchor.is_dir():
            why = "" if anchor == self.path else f" ({anchor} is not a folder)"
            raise self._refuse(f"{what}{why}", f"give {self.label} a path in a folder")
        if not os.access(anchor, os.W_OK | os.X_OK):
            raise self._refuse(
                f"a path you can write to ({anchor} is not writable)",
                f"give {self.label} a path in a folder of yours",
            )
        return anchor


@dataclass(frozen=True)
class OutputFolder(_Destination):
    """A folder the product writes files into."""

    label: str = "output folder"

    def check(self) -> None:
        """Refuse (OutputRefused) unless the folder is new or empty, or holds only what the
        product recorded there, unchanged."""
        folder = self.path
        if self._writable(folder, "a folder, new or written by hpkv before") != folder:
            return
        recorded = read_record(folder)
        foreign, changed = [], []
        for name in sorted(os.listdir(folder)):
            if name == RECORD or name in LITTER:
                continue
            verdict = _ours_unchanged(folder / name, recorded)
            if verdict is None:
                foreign.append(name)
            elif not verdict:
                changed.append(name)
        if foreign:
            raise self._refuse(
                f"a new or empty folder, or one only hpkv wrote into; it holds {_names(foreign)}, "
                "which hpkv did not write",
                f"give {self.label} a new folder (e.g. {folder / 'hpkv'}), or move those out",
            )
        if changed:
            raise self._refuse(
                f"files hpkv wrote, unchanged since; {_names(changed)} changed after hpkv wrote it",
                f"move your edits out of {folder} (or delete the file) and re-run, or give "
                f"{self.label} a new folder",
            )

    def write(self, files: Mapping[str, str | bytes], *, drop: Iterable[str] = ()) -> list[Path]:
        """Check, remove ``drop`` (names of ours no longer written), write ``files`` (plain
        names in this folder) and record them; the paths written, in order."""
        self.check()
        self.path.mkdir(parents=True, exist_ok=True)
        recorded = read_record(self.path)
        for name in drop:
            if name in recorded:
                (self.path / name).unlink(missing_ok=True)
                del recorded[name]
        written = []
        for name, content in files.items():
            data = content.encode("utf-8") if isinstance(content, str) else content
            path = self.path / name
            path.write_bytes(data)
            recorded[name] = digest(data)
            written.append(path)
        _write_record(self.path, recorded)
        return written

    def record(self, paths: Iterable[Path]) -> None:
        """Record files a writer of its own (a plot, a CSV) put here after ``check``."""
        recorded = read_record(self.path)
        for path in paths:
            recorded[path.name] = digest(path.read_bytes())
        _write_record(self.path, recorded)


@dataclass(frozen=True)
class OutputFile(_Destination):
    """One file the product writes (a PNG): absent, or written by it and unchanged since."""

    label: str = "output file"

    def check(self) -> None:
        path = self.path
        if path.is_dir():
            raise self._refuse("a file path, not a folder", f"name a file: {path / 'report.png'}")
        self._writable(path.parent, "a file in a folder")
        if not os.path.lexists(path):
            return
        verdict = _ours_unchanged(path, read_record(path.parent))
        if verdict is None:
            raise self._refuse(
                "a new file, or one hpkv wrote before; this one hpkv did not write",
                f"give {self.label} another name, or move the file away",
            )
        if not verdict:
            raise self._refuse(
                "a file hpkv wrote, unchanged since; this one changed after",
                f"give {self.label} another name, or move the file away",
            )

    def record(self) -> None:
        """Record the file, once written, in its folder's record."""
        OutputFolder(self.path.parent).record([self.path])
