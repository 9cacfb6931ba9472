"""``infra.cdk.written``: the product writes into a folder only when it is new or empty, or holds
nothing but what the product recorded writing there, unchanged; one file only when it is absent
or recorded and unchanged. Every refusal is one line naming the folder, what is in the way and
the fix, and leaves every file byte for byte.

No double: real folders and files under pytest's temporary directory, a FIFO and /dev/null."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from infra.cdk.written import RECORD, OutputFile, OutputFolder, OutputRefused, read_record


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _refused(check: OutputFolder | OutputFile) -> str:
    with pytest.raises(OutputRefused) as caught:
        check.check()
    (line,) = str(caught.value).splitlines()
    return line


def test_a_new_folder_is_written_and_recorded_with_the_hash_of_each_file(tmp_path: Path) -> None:
    folder = OutputFolder(tmp_path / "new" / "out", "--out")
    written = folder.write({"a.yaml": "a: 1\n", "b.png": b"\x89PNG"})
    assert [p.name for p in written] == ["a.yaml", "b.png"]
    assert read_record(folder.path) == {
        "a.yaml": hashlib.sha256(b"a: 1\n").hexdigest(),
        "b.png": hashlib.sha256(b"\x89PNG").hexdigest(),
    }
    assert json.loads((folder.path / RECORD).read_text())["note"].startswith("Files hpkv wrote")


def test_a_rerun_into_its_own_output_writes_again_and_drops_what_it_no_longer_writes(
    tmp_path: Path,
) -> None:
    folder = OutputFolder(tmp_path, "--out")
    folder.write({"a.yaml": "a: 1\n", "old.yaml": "gone\n"})
    folder.write({"a.yaml": "a: 2\n"}, drop=["old.yaml"])
    assert (tmp_path / "a.yaml").read_text() == "a: 2\n"
    assert not (tmp_path / "old.yaml").exists()
    assert set(read_record(tmp_path)) == {"a.yaml"}


@pytest.mark.parametrize(
    "theirs",
    [
        {"README.md": b"# my project\n"},  # a checkout's root (--out "$OUT" with OUT unset)
        {"kustomization.yaml": b"resources: [app.yaml]\n", ".git/HEAD": b"ref: main\n"},  # GitOps
        {".hidden": b"x"},
        {"sub/file.txt": b"x"},
    ],
    ids=["checkout", "gitops-repo", "hidden-file", "a-folder"],
)
def test_a_folder_holding_anything_it_did_not_write_is_refused_untouched(
    tmp_path: Path, theirs: dict[str, bytes]
) -> None:
    for name, content in theirs.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(content)
    before = _snapshot(tmp_path)
    folder = OutputFolder(tmp_path, "--out")
    with pytest.raises(OutputRefused) as caught:
        folder.write({"README.md": "ours\n", "kustomization.yaml": "ours\n"})
    (line,) = str(caught.value).splitlines()
    assert line.startswith(f"--out = {tmp_path}: allowed: a new or empty folder"), line
    assert sorted(theirs)[0].split("/")[0] in line and "fix: give --out a new folder" in line
    assert _snapshot(tmp_path) == before and not (tmp_path / RECORD).exists()


def test_a_file_it_wrote_then_edited_is_not_written_over(tmp_path: Path) -> None:
    folder = OutputFolder(tmp_path, "--out")
    folder.write({"README.md": "ours\n", "a.yaml": "a: 1\n"})
    (tmp_path / "README.md").write_text("ours\nand my notes\n")
    before = _snapshot(tmp_path)
    line = _refused(folder)
    assert "README.md changed after hpkv wrote it" in line and "fix: move your edits" in line
    assert _snapshot(tmp_path) == before


def test_a_recorded_name_replaced_by_a_link_is_not_followed(tmp_path: Path) -> None:
    """A link where a recorded file was would send the write to whatever it points at."""
    target = tmp_path / "elsewhere.txt"
    target.write_text("precious\n")
    folder = OutputFolder(tmp_path / "out", "--out")
    folder.write({"a.yaml": "a: 1\n"})
    (folder.path / "a.yaml").unlink()
    (folder.path / "a.yaml").symlink_to(target)
    assert "a.yaml changed after hpkv wrote it" in _refused(folder)
    assert target.read_text() == "precious\n"


def test_a_record_that_is_not_ours_counts_for_nothing(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# mine\n")
    (tmp_path / RECORD).write_text("not json")
    assert "README.md" in _refused(OutputFolder(tmp_path, "--out"))
    assert read_record(tmp_path) == {}


def test_what_a_file_browser_leaves_does_not_stop_a_rerun(tmp_path: Path) -> None:
    folder = OutputFolder(tmp_path, "--out")
    folder.write({"a.yaml": "a: 1\n"})
    (tmp_path / ".DS_Store").write_bytes(b"\x00")
    folder.write({"a.yaml": "a: 2\n"})
    assert (tmp_path / ".DS_Store").read_bytes() == b"\x00"


@pytest.mark.parametrize("kind", ["file", "fifo", "device", "under-a-file"])
def test_a_path_that_is_no_folder_is_refused(tmp_path: Path, kind: str) -> None:
    path = {
        "file": tmp_path / "README.md",
        "fifo": tmp_path / "pipe",
        "device": Path("/dev/null"),
        "under-a-file": tmp_path / "README.md" / "out",
    }[kind]
    (tmp_path / "README.md").write_text("# mine\n")
    os.mkfifo(tmp_path / "pipe")
    line = _refused(OutputFolder(path, "--out"))
    assert line.startswith(f"--out = {path}: allowed: a folder"), line


def test_an_empty_folder_and_a_new_one_are_both_fine(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    OutputFolder(tmp_path / "empty").check()
    OutputFolder(tmp_path / "a" / "b").check()
    assert not (tmp_path / "a").exists()  # a check writes nothing


def test_one_file_is_written_only_where_it_is_absent_or_its_own(tmp_path: Path) -> None:
    shot = OutputFile(tmp_path / "report.png", "--png")
    shot.check()
    shot.path.write_bytes(b"\x89PNG one")
    shot.record()
    shot.check()  # ours, unchanged: written again
    shot.path.write_bytes(b"\x89PNG edited")
    assert "this one changed after" in _refused(shot)
    theirs = OutputFile(tmp_path / "holiday.png", "--png")
    theirs.path.write_bytes(b"\x89PNG mine")
    assert "this one hpkv did not write" in _refused(theirs)
    assert theirs.path.read_bytes() == b"\x89PNG mine"


@pytest.mark.parametrize("where", ["folder", "under-a-file", "fifo"])
def test_one_file_is_not_written_where_no_file_can_be(tmp_path: Path, where: str) -> None:
    (tmp_path / "README.md").write_text("# mine\n")
    os.mkfifo(tmp_path / "pipe.png")
    path = {
        "folder": tmp_path,
        "under-a-file": tmp_path / "README.md" / "r.png",
        "fifo": tmp_path / "pipe.png",
    }[where]
    assert _refused(OutputFile(path, "--png")).startswith(f"--png = {path}: allowed: ")
