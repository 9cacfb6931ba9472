"""The L2 evictor, run as rendered: the CronJob's own command and env, executed by /bin/sh over a
directory that stands in for the Curvine mount (GNU find and coreutils, as in the Curvine image).

LMCache's fs connector never deletes, and Curvine does not evict by size: this script is what
keeps the NVMe pool from filling up.

The pool tests stand a directory in for the whole pool: each claim the charts render is the
directory its volume is there (curvine-sc's: ``<fs-path>/<its volume>``, one per claim; a
static volume: its ``curvine-path``; FSx: the file system's root), and every rendered evictor
runs over the directory its claim is. What is left must fit what Curvine lets writes fill."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from infra.config import AppConfig, parse_config
from infra.config.model import curvine_writable_bytes, l2_pool_bytes
from k8s.app import build_charts, manifests
from k8s.l2_volume import EVICTOR
from tests.support.config import DEPLOYED_FSX, FSX_KVCACHE, SOURCE, with_overrides

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
        with_overrides(
            {
                "kvcache.curvine.worker.capacity_gib": 50,
                "kvcache.curvine.worker.reserved_gib": 10,
                "kvcache.curvine.evictor.high_water_percent": 95,
                "kvcache.curvine.evictor.low_water_percent": 80,
            }
        ),
        SOURCE,
        "dev",
    )
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


# --- the evictors over the whole pool ------------------------------------------------------------


def _render(config: AppConfig) -> list[Obj]:
    fsx = DEPLOYED_FSX if "fsx_lustre" in config.kvcache.l2_backends else None
    return [o for objs in manifests(build_charts(config, fsx=fsx)).values() for o in objs]


def _claim_dirs(objs: list[Obj], pool: Path) -> dict[tuple[str, str], Path]:
    """(namespace, claim) -> the directory of ``pool`` its volume is."""
    classes = {o["metadata"]["name"]: o for o in objs if o["kind"] == "StorageClass"}
    volumes = {o["metadata"]["name"]: o for o in objs if o["kind"] == "PersistentVolume"}
    dirs = {}
    for claim in (o for o in objs if o["kind"] == "PersistentVolumeClaim"):
        ns, name = claim["metadata"]["namespace"], claim["metadata"]["name"]
        bound = volumes.get(claim["spec"].get("volumeName", ""))
        if bound is None:  # provisioned by curvine-sc: a directory of its own under fs-path
            fs_path = classes[claim["spec"]["storageClassName"]]["parameters"]["fs-path"]
            path = pool / fs_path.lstrip("/") / f"pvc-{ns}-{name}"
        elif bound["spec"]["csi"]["driver"] == "curvine":
            path = pool / bound["spec"]["csi"]["volumeAttributes"]["curvine-path"].lstrip("/")
        else:  # FSx: every claim is the file system's root
            path = pool
        dirs[(ns, name)] = path
    return dirs


def _evict_all(objs: list[Obj], dirs: dict[tuple[str, str], Path]) -> list[Obj]:
    """Run every rendered evictor, each over its claim's directory with its own marks."""
    crons = [o for o in objs if o["kind"] == "CronJob" and "evictor" in o["metadata"]["name"]]
    for cron in crons:
        pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        (claim,) = [
            v["persistentVolumeClaim"]["claimName"]
            for v in pod["volumes"]
            if "persistentVolumeClaim" in v
        ]
        env = {e["name"]: e["value"] for e in _container(cron)["env"]}
        root = dirs[(cron["metadata"]["namespace"], claim)]
        root.mkdir(parents=True, exist_ok=True)
        _run(cron, root, high=int(env["HIGH"]), low=int(env["LOW"]))
    return crons


def _chunks(where: Path, count: int, size: int, first_age: int, step: int = 1) -> list[Path]:
    """``count`` sparse chunk files of ``size`` bytes, each ``step`` seconds newer, from
    ``first_age``, named after their age: du -b and find count their apparent size, as on the
    mount."""
    where.mkdir(parents=True, exist_ok=True)
    made = []
    for age in range(first_age, first_age + count * step, step):
        path = where / f"{age:06}.data"
        with path.open("wb") as f:
            f.truncate(size)
        os.utime(path, (1_700_000_000 + age,) * 2)
        made.append(path)
    return made


def _two_namespaces(backend: str) -> AppConfig:
    base = {"name": "qwen3-8b", "namespace": "inference", "replicas": 1}
    endpoints = [base, {**base, "name": "team-b-model", "namespace": "team-b"}]
    overrides: dict[str, Any] = {"kvcache.endpoints": endpoints}
    if backend == "fsx_lustre":
        overrides |= {f"kvcache.{k}": v for k, v in FSX_KVCACHE.items()}
    return parse_config(with_overrides(overrides), SOURCE, "dev")


@pytest.mark.parametrize("backend", ["curvine", "fsx_lustre"])
def test_two_namespaces_together_stay_within_the_pool(tmp_path: Path, backend: str) -> None:
    """Two endpoint namespaces each hold 60 % of what the pool can take: each claim alone is
    under the high mark, together they are past the pool. The evictors, all of them as rendered,
    leave at most the low mark of the pool, the oldest chunks gone first."""
    config = _two_namespaces(backend)
    objs = _render(config)
    writable = (
        curvine_writable_bytes(config) if backend == "curvine" else l2_pool_bytes(config, backend)
    )
    dirs = _claim_dirs(objs, tmp_path)
    by_ns = {}
    for (ns, _), path in sorted(dirs.items()):
        by_ns.setdefault(ns, path)
    endpoints = {e.namespace: e.name for e in config.kvcache.endpoints}
    written = []
    for first, ns in enumerate(sorted(endpoints)):  # ages interleaved across the namespaces
        written += _chunks(by_ns[ns] / endpoints[ns], 30, writable * 6 // 10 // 30, first, 2)
    assert _used(tmp_path) > writable
    crons = _evict_all(objs, dirs)
    low = min(int(e["value"]) for c in crons for e in _container(c)["env"] if e["name"] == "LOW")
    assert _used(tmp_path) <= low < writable
    gone = sorted(int(p.stem) for p in written if not p.exists())
    kept = sorted(int(p.stem) for p in written if p.exists())
    assert gone and kept and gone[-1] < kept[0]  # the oldest went, whichever namespace wrote it
    assert {p.parent for p in written if int(p.stem) in gone} == {
        by_ns[ns] / e for ns, e in endpoints.items()
    }


def test_a_resized_pool_still_evicts_the_claim_the_pods_started_before_write_to(
    tmp_path: Path,
) -> None:
    """Three GPU nodes, then two: the claim of the new size is a new directory, and the Pods
    started before the apply keep writing to the old claim's until they are replaced. Both
    count against the pool, and the evictor of the new render must reach both: the old
    directory's older chunks go first."""
    endpoint = {"name": "qwen3-8b", "namespace": "inference", "replicas": 1}
    before, after = (
        parse_config(
            with_overrides(
                {"kvcache.endpoints": [endpoint], "hyperpod.gpu_group.instance_count": n}
            ),
            SOURCE,
            "dev",
        )
        for n in (3, 2)
    )
    old_objs, new_objs = _render(before), _render(after)
    old_dirs, new_dirs = _claim_dirs(old_objs, tmp_path), _claim_dirs(new_objs, tmp_path)
    old_claim = old_dirs[("inference", "curvine-pvc-1200gi")]
    new_claim = new_dirs[("inference", "curvine-pvc-800gi")]
    assert old_claim != new_claim
    writable = curvine_writable_bytes(after)
    old = _chunks(old_claim / "qwen3-8b", 20, writable * 7 // 10 // 20, 0)
    new = _chunks(new_claim / "qwen3-8b", 10, writable * 3 // 10 // 10, 1000)
    assert _used(tmp_path) > writable * 9 // 10
    (cron,) = _evict_all(new_objs, new_dirs)
    low = int({e["name"]: e["value"] for e in _container(cron)["env"]}["LOW"])
    assert _used(tmp_path) <= low
    assert not old[0].exists() and all(p.exists() for p in new)
