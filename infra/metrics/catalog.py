"""The metric names dashboards, alerts, ``report`` and ``bench compare`` may use, each with
where it is defined and what it counts.

Names are as scraped: Python ``prometheus_client`` counters gain ``_total`` and histograms
``_bucket``/``_sum``/``_count``; Curvine's Rust ``prometheus`` crate adds no suffix to counters.
``metric_names(expr)`` pulls the metric names out of a PromQL expression so a test can check
every query against this table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

VLLM = (
    "vllm-project/vllm vllm/v1/metrics/loggers.py @ 005a810bc40faa25b8870fbc8559c3462581eee3; "
    "the same names in the vLLM 0.16.0 sdist (the recommended image's vLLM)"
)
LMCACHE = (
    "LMCache 0.3.15 wheel (PyPI lmcache-0.3.15, commit 9dc3ab71f) lmcache/observability.py, "
    "the same names at 0.3.9; fed by lmcache/v1/cache_engine.py (retrieve), "
    "integration/vllm/vllm_v1_adapter.py (which tokens are retrieved) and "
    "v1/storage_backend/connector/instrumented_connector.py (remote reads and writes)"
)
_CURVINE_TAG = "@ v0.4.1 (709f24781f35a0ea8dda01b12212ede007712498)"
CURVINE_WORKER = f"CurvineIO/curvine curvine-worker/src/worker/worker_metrics.rs {_CURVINE_TAG}"
CURVINE_MASTER = f"CurvineIO/curvine curvine-master/src/master/master_metrics.rs {_CURVINE_TAG}"
CURVINE_FUSE = f"CurvineIO/curvine curvine-fuse/src/fuse_metrics.rs {_CURVINE_TAG}"
# curvine-fuse registers its metrics in the prometheus crate's default registry
# (crates/core/curvine-metrics/src/lib.rs), built with the crate's "process" feature
# (Cargo.toml: prometheus 0.13.4), which adds the standard process_* series of the FUSE process.
CURVINE_FUSE_PROCESS = f"CurvineIO/curvine Cargo.toml, crates/core/curvine-metrics {_CURVINE_TAG}"
PROMETHEUS = "Prometheus: synthetic series of every scrape (up), prometheus.io/docs jobs_instances"


# Every curvine_fuse_* series of CURVINE_FUSE with its kind; the upstream FUSE dashboard
# (assets/grafana/curvine-fuse-dashboard.json) queries most of them.
_FUSE_KINDS = {
    "counter": (
        "decode_errors_total",
        "errors_total",
        "interrupted_total",
        "io_bytes_total",
        "io_requests_total",
        "negative_entry_returned_total",
        "node_cache_total",
        "notify_total",
        "receive_errors_total",
        "reply_enqueue_errors_total",
        "requests_total",
        "response_bytes_total",
        "response_write_errors_total",
        "session_init_total",
        "session_shutdown_total",
        "state_persist_total",
        "state_restore_total",
        "stream_lifecycle_requests_total",
        "unsupported_total",
        "user_meta_cache_invalidations_total",
        "user_meta_cache_total",
    ),
    "gauge": (
        "active_requests",
        "dir_handle_count",
        "file_handle_count",
        "inode_count",
        "kernel_fd_health",
        "meta_task_inflight",
        "metrics_scrape_bytes",
        "reply_queue_depth",
        "sender_last_progress_unixtime",
        "setlkw_inflight",
        "state_persist_handle_count",
        "stream_io_inflight",
        "stream_lifecycle_inflight",
        "stream_write_queue_depth",
    ),
    "histogram": (
        "io_dispatch_duration_us",
        "io_duration_us",
        "io_size_bytes",
        "metrics_scrape_duration_us",
        "operation_duration_us",
        "readdir_duration_us",
        "readdir_entries",
        "receive_loop_wait_duration_us",
        "request_duration_us",
        "response_write_duration_us",
        "setlkw_wait_duration_us",
        "stage_duration_us",
        "state_persist_stage_duration_us",
        "state_restore_stage_duration_us",
        "stream_lifecycle_duration_us",
    ),
}
_PROCESS = (
    "cpu_seconds_total",
    "max_fds",
    "open_fds",
    "resident_memory_bytes",
    "threads",
    "virtual_memory_bytes",
    "start_time_seconds",
)


@dataclass(frozen=True)
class Metric:
    kind: str
    """counter, gauge or histogram (as defined upstream)."""
    source: str
    """repository or package, path and commit of the definition."""
    meaning: str = ""
    """What the series counts, read from the code that feeds it (how ``infra.metrics.tiers``
    uses it)."""


def _vllm(kind: str, meaning: str) -> Metric:
    return Metric(kind, VLLM, meaning)


def _lmcache(kind: str, meaning: str) -> Metric:
    return Metric(kind, LMCACHE, meaning)


def _process_kind(name: str) -> str:
    return "counter" if name.endswith("_total") else "gauge"


def _curvine_fuse() -> dict[str, Metric]:
    """Each FUSE series as scraped: a histogram as its _bucket, _count and _sum."""
    out = {}
    for kind, names in _FUSE_KINDS.items():
        for name in names:
            suffixes = ("_bucket", "_count", "_sum") if kind == "histogram" else ("",)
            for suffix in suffixes:
                out[f"curvine_fuse_{name}{suffix}"] = Metric(kind, CURVINE_FUSE)
    return out


METRICS: dict[str, Metric] = {
    # vLLM V1 PrometheusStatLogger (labels model_name, engine).
    "vllm:prefix_cache_queries_total": _vllm(
        "counter", "prompt tokens looked up in the GPU prefix cache: the base of every tier share"
    ),
    "vllm:prefix_cache_hits_total": _vllm("counter", "of those, tokens found on the GPU: L0"),
    "vllm:prompt_tokens_total": _vllm("counter", "prompt tokens of the requests processed"),
    "vllm:request_success_total": _vllm("counter", "finished requests (label finished_reason)"),
    "vllm:num_requests_running": _vllm("gauge", "requests running on the GPU"),
    "vllm:num_requests_waiting": _vllm("gauge", "requests queued"),
    "vllm:kv_cache_usage_perc": _vllm("gauge", "share of the GPU KV blocks in use"),
    "vllm:time_to_first_token_seconds_bucket": _vllm("histogram", "time to first token"),
    "vllm:time_to_first_token_seconds_count": _vllm("histogram", "time to first token"),
    "vllm:time_to_first_token_seconds_sum": _vllm("histogram", "time to first token"),
    # LMCache PrometheusLogger: on vLLM's /metrics once PROMETHEUS_MULTIPROC_DIR is set.
    "lmcache:num_requested_tokens_total": _lmcache(
        "counter", "tokens LMCache's lookup found beyond L0, which its retrieve was asked for"
    ),
    "lmcache:num_hit_tokens_total": _lmcache(
        "counter", "tokens the retrieve loaded, L1 and L2 together (no per-tier counter)"
    ),
    "lmcache:num_remote_read_requests_total": _lmcache(
        "counter",
        "L2 reads that returned an object: one per chunk for fs:// (Curvine, FSx); "
        "counted twice by the sagemaker-hyperpod connector from 0.3.13 (with its batches)",
    ),
    "lmcache:num_remote_read_bytes_total": _lmcache(
        "counter", "bytes of those reads (twice the bytes for sagemaker-hyperpod from 0.3.13)"
    ),
    "lmcache:num_remote_write_requests_total": _lmcache(
        "counter", "L2 writes that completed (a put that raised counts nothing)"
    ),
    "lmcache:num_remote_write_bytes_total": _lmcache("counter", "bytes of those writes"),
    "lmcache:local_cache_usage": _lmcache("gauge", "bytes LMCache's CPU backend holds: L1"),
    # Curvine worker (one per GPU node; web port 9001, /metrics).
    "capacity": Metric("gauge", f"{CURVINE_WORKER}; {CURVINE_MASTER}", "bytes of the pool"),
    "fs_used": Metric("gauge", f"{CURVINE_WORKER}; {CURVINE_MASTER}", "bytes in use"),
    "available": Metric("gauge", f"{CURVINE_WORKER}; {CURVINE_MASTER}", "bytes free"),
    "read_bytes": Metric("counter", CURVINE_WORKER, "bytes the worker read"),
    "read_time_us": Metric("counter", CURVINE_WORKER, "microseconds spent reading"),
    "read_count": Metric("counter", CURVINE_WORKER, "reads"),
    "write_bytes": Metric("counter", CURVINE_WORKER, "bytes the worker wrote"),
    # Curvine master (web port 9000): label tag = live | blacklist | decommission | lost.
    "worker_num": Metric("gauge", CURVINE_MASTER, "workers per state (label tag)"),
    # Curvine FUSE in the CSI node plugin (web port 9002, 9003 for the static PV).
    **_curvine_fuse(),
    "curvine_fuse_request_duration_us_bucket": Metric(
        "histogram", CURVINE_FUSE, "FUSE request time"
    ),
    "curvine_fuse_response_bytes_total": Metric("counter", CURVINE_FUSE, "FUSE bytes answered"),
    **{f"process_{n}": Metric(_process_kind(n), CURVINE_FUSE_PROCESS) for n in _PROCESS},
    "up": Metric("gauge", PROMETHEUS, "1 when the target's scrape succeeded"),
}

_KEYWORDS = {
    "and",
    "or",
    "unless",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "offset",
    "bool",
    "inf",
    "nan",
}
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression: identifiers that are not functions, keywords,
    label names (inside ``{}`` or after by/without/on/ignoring), strings or durations."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for m in _NAME.finditer(text):
        word = m.group(0)
        rest = text[m.end() :].lstrip()
        if rest.startswith("(") or word.lower() in _KEYWORDS:
            continue
        before = text[: m.start()]
        if before and (before[-1].isdigit() or before[-1] == "."):
            continue  # a unit or exponent of a number, e.g. 1e3
        names.add(word)
    return names
