"""The L2 evictor, run as rendered: the CronJob's own command and env, executed by /bin/sh over a
directory that stands in for the Curvine mount (GNU find and coreutils, as in the Curvine image).

LMCache's fs connector never deletes, and Curvine does not evict by size: this script is what
keeps the NVMe pool from filling up."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from infra.config import parse_config
from infra.config.model import curvine_writable_bytes
from k8s.app import build_charts, manifests
from k8s.l2_volume import EVICTOR
from tests.support.config import SOURCE, with_overrides

Obj = dict[str, Any]
MIB = 2**20


def _evictor(rendered: list[Obj]) -> dict[str, Any]:
    crons = [o for o in rendered if o["kind"] == "CronJob" and o["metadata"]["name"] == EVICTOR]
    assert crons, "no evictor rendered"
    return crons[0]


def _container(cron: dict[str, Any]) -> dict[str, Any]:
    (container,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    return container


def _tree(root: Path, files: dict[str, int]) -> None:
    """``files``: name -> size in MiB; each later name is one minute newer."""
    for age, (name, size) in enumerate(files.items()):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\0" * (size * MIB))
        os.utime(path, (1_700_000_000 + 60 * age, 1_700_000_000 + 60 * age))


def _used(root: Path) -> int:
    out = subprocess.run(["du", "-sb", str(root)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def _run(cron: dict[str, Any], root: Path, high: int, low: int) -> str:
    """The container's command with its env, ROOT pointed at ``root`` and the marks given."""
    container = _container(cron)
    env = {e["name"]: e["value"] for e in container["env"]}
    assert set(env) == {"ROOT", "HIGH", "LOW"}
    env |= {"ROOT": str(root), "HIGH": str(high), "LOW": str(low)}
    env["PATH"] = os.environ["PATH"]
    done = subprocess.run(
        container["command"], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


def _gnu_tools() -> bool:
    """GNU find (-printf) and du (-b), as in the Curvine image; BSD's (macOS) have neither."""
    if shutil.which("find") is None or shutil.which("du") is None:
        return False
    probe = [["find", ".", "-maxdepth", "0", "-printf", ""], ["du", "-sb", "."]]
    return all(subprocess.run(c, capture_output=True).returncode == 0 for c in probe)


pytestmark = pytest.mark.skipif(not _gnu_tools(), reason="needs GNU find and du")


def test_the_evictor_deletes_the_oldest_chunks_until_the_pool_is_under_the_low_mark(
    rendered: list[Obj], tmp_path: Path
) -> None:
    """Above HIGH, the oldest ``*.data`` chunks go first, in any directory and whatever their
    names, until the tree holds at most LOW; newer chunks and other files stay."""
    _tree(
        tmp_path,
        {"keep.meta": 1, "a/old 1.data": 4, "b/old2.data": 4, "a/mid.data": 4, "b/new.data": 4},
    )
    overhead = _used(tmp_path) - 17 * MIB  # directories count in du -b
    # Stopping at HIGH instead would leave old2; counting keep.meta would delete it first.
    out = _run(_evictor(rendered), tmp_path, high=overhead + 14 * MIB, low=overhead + 9 * MIB)
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == ["a/mid.data", "b/new.data", "keep.meta"], out
    assert _used(tmp_path) <= overhead + 9 * MIB


def test_the_evictor_leaves_a_pool_under_the_high_mark_alone(
    rendered: list[Obj], tmp_path: Path
) -> None:
    _tree(tmp_path, {"a.data": 4, "b.data": 4})
    used = _used(tmp_path)
    _run(_evictor(rendered), tmp_path, high=used, low=used // 4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.data", "b.data"]


def test_evictions_never_overlap_and_a_stuck_one_ends(rendered: list[Obj]) -> None:
    """Two runs at once would both count the same bytes and evict twice as much (Forbid); a run
    stuck on a hung mount, which under Forbid holds back every later one, is ended after 50
    minutes and retried once; the last failures are kept to read."""
    spec = _evictor(rendered)["spec"]
    assert spec["concurrencyPolicy"] == "Forbid"
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (1, 3)
    job = spec["jobTemplate"]["spec"]
    assert (job["backoffLimit"], job["activeDeadlineSeconds"]) == (1, 3000)


def test_the_evictor_keeps_its_reviewed_size(rendered: list[Obj]) -> None:
    """du, find and sort over the pool's file list: small requests on a GPU node (they count
    against the model Pod's room, tests/k8s/test_rehearsal_budget.py), room to sort a long list."""
    assert _container(_evictor(rendered))["resources"] == {
        "requests": {"cpu": "100m", "memory": "128Mi"},
        "limits": {"cpu": "1000m", "memory": "512Mi"},
    }


def test_the_evictor_runs_where_the_pool_is_mounted_and_is_not_restarted_in_place(
    rendered: list[Obj],
) -> None:
    """It mounts the pool through the CSI node plugin, which runs on the GPU nodes: it tolerates
    their taints as the plugin does. A Job's Pod may only be Never or OnFailure (the API server
    refuses Always); Never leaves a failed Pod to read and counts it against backoffLimit."""
    pod = _evictor(rendered)["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["tolerations"] == [{"operator": "Exists"}]


def test_the_evictor_starts_before_curvine_refuses_writes(tmp_path: Path) -> None:
    """Curvine v0.4.1 stops taking writes once each worker holds its capacity less
    ``reserved_gib`` (``infra.config.model.curvine_writable_bytes``). A pool filled that far must
    be above the rendered high mark, or the evictor never runs and every L2 write fails. Sparse
    files stand in for the chunks: du -b and find count their apparent size, as on the mount."""
    cfg = parse_config(
        with_overrides({
            "kvcache.curvine.worker.capacity_gib": 50,
            "kvcache.curvine.worker.reserved_gib": 10,
            "kvcache.curvine.evictor.high_water_percent": 95,
            "kvcache.curvine.evictor.low_water_percent": 80,
        }),
        SOURCE,
        "dev",
    )  # fmt: skip
    cron = _evictor([o for objs in manifests(build_charts(cfg)).values() for o in objs])
    env = {e["name"]: e["value"] for e in _container(cron)["env"]}
    full = curvine_writable_bytes(cfg)
    chunks = 40
    for i in range(chunks):
        with (tmp_path / f"{i:03}.data").open("wb") as f:
            f.truncate(full // chunks)
        os.utime(tmp_path / f"{i:03}.data", (1_700_000_000 + i, 1_700_000_000 + i))
    _run(cron, tmp_path, high=int(env["HIGH"]), low=int(env["LOW"]))
    assert _used(tmp_path) <= int(env["LOW"]) < full
    assert not (tmp_path / "000.data").exists() and (tmp_path / f"{chunks - 1:03}.data").exists()
