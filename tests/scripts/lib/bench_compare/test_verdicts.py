"""bench compare's cross-Pod verdict on the counters a replica's /metrics gives (names as LMCache
and vLLM expose them): a pass, a miss explained (chunks of another size; none of the first
replica's chunks read), and a replica whose LMCache runs degraded failing its tier."""

from __future__ import annotations

from infra.config.bench import BenchConfig
from infra.metrics.tiers import L2_READS, L2_WRITES, LOADED, QUERIED
from scripts.lib.bench_compare.scrape import L2_WRITE_BYTES, REQUESTS
from scripts.lib.bench_compare.targets import BenchTarget
from scripts.lib.bench_compare.verdicts import CROSS_POD, judge
from scripts.lib.bench_compare.workloads import Sample, WorkloadRun

BPT = 147456
CHUNK_BYTES = 256 * BPT
A, B = "http://127.0.0.1:1", "http://127.0.0.1:2"


def _run(first: dict[str, float], second: dict[str, float]) -> WorkloadRun:
    target = BenchTarget("curvine", "curvine", (A, B), (A, B))
    samples = [
        Sample("cross_pod", "curvine", kind, i, 10.0, 12.0, 2048, 1, 0.0)
        for i, kind in enumerate(("cold", "warm"))
    ]
    run = WorkloadRun("cross_pod", target, samples)
    run.replica_deltas = [{**first, REQUESTS: 1.0}, {**second, REQUESTS: 1.0}]
    run.deltas = run.extra["second_replica"] = second
    return run


def _verdict(run: WorkloadRun, degraded: tuple[str, ...] = ()) -> tuple[str, str]:
    ((_, v),) = [
        (r, v) for r, v in judge([run], BenchConfig(), BPT, degraded) if v.check == CROSS_POD
    ]
    return v.status, v.reason


WROTE = {L2_WRITES: 8.0, L2_WRITE_BYTES: 8 * CHUNK_BYTES, QUERIED: 2048.0, LOADED: 0.0}


def test_a_second_replica_that_read_every_chunk_passes() -> None:
    read = {QUERIED: 2048.0, LOADED: 2048.0, L2_READS: 8.0}
    assert _verdict(_run(WROTE, read)) == ("pass", "1.00 >= 0.99")


def test_a_miss_names_chunks_of_another_size() -> None:
    other = {QUERIED: 2048.0, LOADED: 0.0, L2_WRITES: 4.0, L2_WRITE_BYTES: 8 * CHUNK_BYTES}
    status, reason = _verdict(_run(WROTE, other))
    assert status == "fail" and "chunk sizes (LMCACHE_CHUNK_SIZE) differ" in reason


def test_a_miss_of_equal_chunks_names_a_folder_or_keys_not_shared() -> None:
    same = {QUERIED: 2048.0, LOADED: 0.0, L2_WRITES: 8.0, L2_WRITE_BYTES: 8 * CHUNK_BYTES}
    status, reason = _verdict(_run(WROTE, same))
    assert status == "fail" and "read 0 of the 8 chunks the first wrote" in reason
    assert "do not share an L2 folder" in reason


def test_a_degraded_replica_fails_its_tier_by_name() -> None:
    read = {QUERIED: 2048.0, LOADED: 2048.0, L2_READS: 8.0}
    status, reason = _verdict(_run(WROTE, read), degraded=(B,))
    assert status == "fail" and reason.startswith(f"replica 2 ({B}): LMCache runs in its degraded")


def test_a_miss_on_a_prompt_the_first_replica_had_cached_says_so() -> None:
    cached = {QUERIED: 2048.0, LOADED: 2048.0}
    same = {QUERIED: 2048.0, LOADED: 0.0, L2_WRITES: 8.0, L2_WRITE_BYTES: 8 * CHUNK_BYTES}
    status, reason = _verdict(_run(cached, same))
    assert status == "fail" and "the first replica found the prompt already cached" in reason
