"""``verify --chaos``: an endpoint Pod deleted and replaced, a Curvine worker lost and back.

Doubles: FakeKube (the recorded endpoint and Curvine's Pods; hooks stand in for the ReplicaSet
and DaemonSet controllers that replace a deleted Pod), model servers (tests/doubles/fake_vllm.py
with fake_tiers: each Pod its own GPU and CPU cache, the Curvine Pods sharing one L2 directory;
a lost worker is L2 ``down`` on every server until its replacement is Ready), a map transport
instead of port-forward, and a fake clock for the waits."""

from __future__ import annotations

import copy
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from infra.config import AppConfig
from k8s.names import WORKER_WL
from scripts.cli import app
from scripts.lib.checks import Check
from scripts.lib.progress import Reporter
from scripts.lib.verify.chaos import (
    DURING_LOSS,
    L2_BACK,
    L2_KEPT,
    POD_REPLACED,
    ChaosOptions,
    run_chaos,
)
from tests.doubles.fake_kube import FakeKube
from tests.doubles.fake_tiers import TierSpec
from tests.doubles.fake_vllm import FakeVllm
from tests.support.config import make_cfg
from tests.support.endpoint_objects import PODS, recorded_cfg
from tests.support.progress import FakeClock
from tests.support.verify import (
    CURVINE_PODS,
    MapTransport,
    _clients,
    _seed_cluster,
)

OPTS = ChaosOptions(prompt_words=600, seed=5, settle_s=0, flush_s=0, timeout_s=120, interval_s=5)
A, B, NEW = "vllm-kvcache-7d9f-1", "vllm-kvcache-7d9f-2", "vllm-kvcache-7d9f-3"
DELAY_MS = {"l0": 0.0, "l1": 0.0, "l2": 0.0, "cold": 0.0}


def _servers(l2_dir: str, new_l2_dir: str) -> Iterator[dict[str, FakeVllm]]:
    def spec(d: str) -> TierSpec:
        return TierSpec("curvine", d, DELAY_MS)

    with (
        FakeVllm(tiers=spec(l2_dir)) as a,
        FakeVllm(tiers=spec(l2_dir)) as b,
        FakeVllm(tiers=spec(new_l2_dir)) as new,
    ):
        yield {A: a, B: b, NEW: new}


@pytest.fixture
def l2_dir() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as d:
        yield d


def _label_workers(kube: FakeKube) -> None:
    for name in ("curvine-worker-a", "curvine-worker-b"):
        pod = kube.get(f"{CURVINE_PODS}/{name}")
        assert pod is not None
        pod["metadata"]["labels"] = dict(WORKER_WL.selector)


def _replace_on_delete(
    kube: FakeKube,
    deleted: str,
    new: dict[str, object],
    reads: int,
    on_ready: Callable[[], None] = lambda: None,
) -> None:
    """A controller: once ``deleted`` is deleted, ``new`` appears, Ready after ``reads`` more
    lists of its collection."""
    collection = str(new.pop("collection"))
    seen = {"deleted": False, "reads": 0}

    def on_write(fake: FakeKube, method: str, path: str) -> None:
        if method == "DELETE" and path.endswith(f"/{deleted}"):
            seen["deleted"] = True

    def on_read(fake: FakeKube, method: str, path: str) -> None:
        if not seen["deleted"] or path != collection or seen["reads"] < 0:
            return
        seen["reads"] += 1
        if seen["reads"] >= reads:
            fake.put(collection, new)
            seen["reads"] = -1
            on_ready()

    kube.after_write.append(on_write)
    kube.after_read.append(on_read)


def _endpoint_pod(kube: FakeKube) -> dict[str, object]:
    pod = copy.deepcopy(kube.get(f"{PODS}/{A}"))
    assert pod is not None
    pod["metadata"]["name"] = NEW
    return {**pod, "collection": PODS}


def _worker_pod(kube: FakeKube) -> dict[str, object]:
    pod = copy.deepcopy(kube.get(f"{CURVINE_PODS}/curvine-worker-a"))
    assert pod is not None
    pod["metadata"]["name"] = "curvine-worker-c"
    return {**pod, "collection": CURVINE_PODS}


def _lose_l2_with_worker(kube: FakeKube, servers: dict[str, FakeVllm]) -> None:
    def on_write(fake: FakeKube, method: str, path: str) -> None:
        if method == "DELETE" and path.endswith("/curvine-worker-a"):
            for s in servers.values():
                s.set_l2("down")

    kube.after_write.append(on_write)


def _run(
    kube: FakeKube,
    servers: dict[str, FakeVllm],
    opts: ChaosOptions = OPTS,
    cfg: AppConfig | None = None,
) -> dict[str, Check]:
    the_cfg = cfg or recorded_cfg()
    rep = Reporter(clock=FakeClock().clock(), tty=False, enabled=False)
    transport = MapTransport({name: s.url for name, s in servers.items()})
    ref = the_cfg.kvcache.endpoints[0]
    checks = run_chaos(_clients(kube, {}), the_cfg, ref, transport, opts, show=rep)
    return {c.stage: c for c in checks}


def test_a_replaced_pod_reads_the_prefix_from_l2_and_l2_serves_again_after_a_lost_worker(
    kube: FakeKube, l2_dir: str
) -> None:
    _seed_cluster(kube)
    _label_workers(kube)
    for servers in _servers(l2_dir, l2_dir):
        _replace_on_delete(kube, A, _endpoint_pod(kube), reads=2)
        _lose_l2_with_worker(kube, servers)

        def l2_up(s: dict[str, FakeVllm] = servers) -> None:
            for v in s.values():
                v.set_l2("up")

        _replace_on_delete(kube, "curvine-worker-a", _worker_pod(kube), reads=3, on_ready=l2_up)
        rows = _run(kube, servers)
        stages = (POD_REPLACED, DURING_LOSS, L2_BACK, L2_KEPT)
        assert [rows[s].status for s in stages] == ["pass"] * 4, rows
        assert f"deleted {A}; {NEW}" in rows[POD_REPLACED].detail
        assert "100.0 % from L2" in rows[POD_REPLACED].detail
        assert "100.0 % from L2" in rows[L2_BACK].detail
        assert "100.0 % from L2" in rows[L2_KEPT].detail
    deleted = [p for m, p, _ in kube.writes("DELETE")]
    assert [p.rsplit("/", 1)[1] for p in deleted] == [A, "curvine-worker-a"]


def test_every_stage_writes_a_prefix_of_its_own_and_reads_it_once(
    kube: FakeKube, l2_dir: str
) -> None:
    """A prefix another stage sent sits in some Pod's GPU or CPU cache: a stage that read one
    back could be served from there and pass for L2. So no prompt is sent more than twice (once
    written, once read), whichever stages run: the scale-out stage's prefix is not the one kept
    across the worker's loss."""
    _seed_cluster(kube)
    _label_workers(kube)
    for servers in _servers(l2_dir, l2_dir):
        _replace_on_delete(kube, A, _endpoint_pod(kube), reads=2)
        _lose_l2_with_worker(kube, servers)

        def l2_up(s: dict[str, FakeVllm] = servers) -> None:
            for v in s.values():
                v.set_l2("up")

        _replace_on_delete(kube, "curvine-worker-a", _worker_pod(kube), reads=3, on_ready=l2_up)
        rows = _run(kube, servers)
        sent = Counter(p for server in servers.values() for p in server.prompts)
    assert rows[L2_KEPT].status == "pass", rows
    assert len(sent) > 5 and max(sent.values()) <= 2, sorted(sent.values())


def test_a_worker_that_returns_without_what_it_held_fails_the_kept_stage(
    kube: FakeKube, l2_dir: str
) -> None:
    """Curvine v0.4.1 keeps the blocks of files written through the mount across a worker's
    loss: its replacement reports them from the node's NVMe. A replacement that comes back empty
    (its directory formatted, or the files dropped as v0.4.1 drops cache-mode files with a UFS
    source) serves fresh prefixes, so the L2-back stage passes, but the prefix stored before the
    loss is recomputed: that stage fails."""
    _seed_cluster(kube)
    _label_workers(kube)
    for servers in _servers(l2_dir, l2_dir):
        _replace_on_delete(kube, A, _endpoint_pod(kube), reads=2)
        _lose_l2_with_worker(kube, servers)

        def back_empty(s: dict[str, FakeVllm] = servers) -> None:
            for f in Path(l2_dir).rglob("*"):
                if f.is_file():
                    f.unlink()
            for v in s.values():
                v.set_l2("up")

        _replace_on_delete(
            kube, "curvine-worker-a", _worker_pod(kube), reads=3, on_ready=back_empty
        )
        rows = _run(kube, servers)
    assert [rows[s].status for s in (DURING_LOSS, L2_BACK)] == ["pass"] * 2, rows
    assert rows[L2_KEPT].status == "fail"
    assert "0.0 % from L2 (need 99 %)" in rows[L2_KEPT].detail


def test_a_replacement_pod_without_the_shared_l2_fails_the_first_stage(
    kube: FakeKube, l2_dir: str, tmp_path: Path
) -> None:
    _seed_cluster(kube)
    _label_workers(kube)
    for servers in _servers(l2_dir, str(tmp_path)):  # the new Pod mounts another directory
        _replace_on_delete(kube, A, _endpoint_pod(kube), reads=1)
        rows = _run(kube, servers, ChaosOptions(**{**OPTS.__dict__, "timeout_s": 20}))
    assert rows[POD_REPLACED].status == "fail"
    assert "0.0 % from L2 (need 99 %)" in rows[POD_REPLACED].detail


def test_l2_that_never_comes_back_fails_the_last_stage_but_requests_kept_succeeding(
    kube: FakeKube, l2_dir: str
) -> None:
    _seed_cluster(kube)
    _label_workers(kube)
    for servers in _servers(l2_dir, l2_dir):
        _replace_on_delete(kube, A, _endpoint_pod(kube), reads=1)
        _lose_l2_with_worker(kube, servers)  # and no worker ever replaces it
        rows = _run(kube, servers, ChaosOptions(**{**OPTS.__dict__, "timeout_s": 30}))
    assert rows[POD_REPLACED].status == "pass"
    assert rows[DURING_LOSS].status == "pass" and "3 requests succeeded" in rows[DURING_LOSS].detail
    assert rows[L2_BACK].status == "fail"
    assert "timed out after 30s waiting for Curvine workers" in rows[L2_BACK].detail
    assert rows[L2_KEPT].status == "skip"


def test_an_endpoint_without_l2_skips_every_chaos_stage_and_deletes_nothing(
    kube: FakeKube, l2_dir: str
) -> None:
    _seed_cluster(kube)
    endpoint = {"name": "vllm-kvcache", "namespace": "models", "replicas": 1}
    none = make_cfg(kvcache={"endpoints": [{**endpoint, "l2_backend": "none"}]})
    rows = _run(kube, {}, cfg=none)
    assert {r.status for r in rows.values()} == {"skip"}
    assert not kube.writes("DELETE")


def test_chaos_without_yes_is_refused_where_no_one_can_answer_and_deletes_nothing(
    kube: FakeKube,
) -> None:
    result = CliRunner().invoke(app, ["verify", "--chaos", "--env", "dev"])
    assert result.exit_code == 3
    (line,) = result.stderr.strip().splitlines()
    assert "deletes an endpoint Pod" in line and "pass --yes" in line
    assert not kube.writes("DELETE")


def test_requests_during_the_loss_wait_until_the_deleted_worker_stops_serving(
    kube: FakeKube, l2_dir: str
) -> None:
    """A deleted Pod keeps serving through its grace period: the worker stays listed and Ready
    for three more lists (polls at 0, 5 and 10 s on the fake clock) and is gone at 15 s."""
    _seed_cluster(kube)
    _label_workers(kube)
    lingering = copy.deepcopy(kube.get(f"{CURVINE_PODS}/curvine-worker-a"))
    reads = {"n": 0}

    def terminating(fake: FakeKube, method: str, path: str) -> None:
        if method == "DELETE" and path.endswith("/curvine-worker-a"):
            fake.put(CURVINE_PODS, lingering)  # type: ignore[arg-type]
            reads["n"] = 1

    def grace_over(fake: FakeKube, method: str, path: str) -> None:
        if path == CURVINE_PODS and reads["n"]:
            reads["n"] += 1
            if reads["n"] == 4:
                del fake.objects[f"{CURVINE_PODS}/curvine-worker-a"]

    kube.after_write.append(terminating)
    kube.after_read.append(grace_over)
    for servers in _servers(l2_dir, l2_dir):
        _replace_on_delete(kube, A, _endpoint_pod(kube), reads=1)
        rows = _run(kube, servers, ChaosOptions(**{**OPTS.__dict__, "timeout_s": 30}))
    assert "deleted curvine-worker-a (stopped after 15s)" in rows[DURING_LOSS].detail
