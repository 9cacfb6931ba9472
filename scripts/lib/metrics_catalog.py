"""The metric names dashboards, alerts and ``report`` may use, each with where it is defined.

Names are as scraped: Python ``prometheus_client`` counters gain ``_total`` and histograms
``_bucket``/``_sum``/``_count``; Curvine's Rust ``prometheus`` crate adds no suffix to counters.
``metric_names(expr)`` pulls the metric names out of a PromQL expression so a test can check
every query against this table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

VLLM = "vllm-project/vllm vllm/v1/metrics/loggers.py @ 005a810bc40faa25b8870fbc8559c3462581eee3"
LMCACHE = "LMCache/LMCache lmcache/observability.py @ 0353be824aebefb9fd4fbdca022746adbf252d3b"
CURVINE_WORKER = (
    "CurvineIO/curvine curvine-server/src/worker/worker_metrics.rs @ v0.3.2-alpha "
    "(f40ca6ff7fbc985b15e7a3f3079516d244f10a62)"
)
CURVINE_MASTER = (
    "CurvineIO/curvine curvine-server/src/master/master_metrics.rs @ v0.3.2-alpha "
    "(f40ca6ff7fbc985b15e7a3f3079516d244f10a62)"
)
CURVINE_FUSE = (
    "CurvineIO/curvine curvine-fuse/src/fuse_metrics.rs @ v0.3.2-alpha "
    "(f40ca6ff7fbc985b15e7a3f3079516d244f10a62)"
)
PROMETHEUS = "Prometheus: synthetic series of every scrape (up), prometheus.io/docs jobs_instances"


@dataclass(frozen=True)
class Metric:
    kind: str
    """counter, gauge or histogram (as defined upstream)."""
    source: str
    """repository, path and commit of the definition."""


METRICS: dict[str, Metric] = {
    # vLLM V1 PrometheusStatLogger (labels model_name, engine).
    "vllm:prefix_cache_queries_total": Metric("counter", VLLM),  # L0 tokens looked up
    "vllm:prefix_cache_hits_total": Metric("counter", VLLM),  # L0 tokens hit
    "vllm:prompt_tokens_total": Metric("counter", VLLM),
    "vllm:request_success_total": Metric("counter", VLLM),  # label finished_reason
    "vllm:num_requests_running": Metric("gauge", VLLM),
    "vllm:num_requests_waiting": Metric("gauge", VLLM),
    "vllm:kv_cache_usage_perc": Metric("gauge", VLLM),
    "vllm:time_to_first_token_seconds_bucket": Metric("histogram", VLLM),
    "vllm:time_to_first_token_seconds_count": Metric("histogram", VLLM),
    "vllm:time_to_first_token_seconds_sum": Metric("histogram", VLLM),
    # LMCache PrometheusLogger: on vLLM's /metrics once PROMETHEUS_MULTIPROC_DIR is set.
    "lmcache:num_requested_tokens_total": Metric("counter", LMCACHE),  # L1+L2 looked up
    "lmcache:num_hit_tokens_total": Metric("counter", LMCACHE),  # L1+L2 hit
    "lmcache:num_remote_read_bytes_total": Metric("counter", LMCACHE),  # L2 (Curvine) reads
    "lmcache:num_remote_read_requests_total": Metric("counter", LMCACHE),
    "lmcache:num_remote_write_bytes_total": Metric("counter", LMCACHE),
    "lmcache:local_cache_usage": Metric("gauge", LMCACHE),  # L1 bytes in use
    # Curvine worker (one per GPU node; web port 9001, /metrics).
    "capacity": Metric("gauge", f"{CURVINE_WORKER}; {CURVINE_MASTER}"),
    "fs_used": Metric("gauge", f"{CURVINE_WORKER}; {CURVINE_MASTER}"),
    "available": Metric("gauge", f"{CURVINE_WORKER}; {CURVINE_MASTER}"),
    "read_bytes": Metric("counter", CURVINE_WORKER),
    "read_time_us": Metric("counter", CURVINE_WORKER),
    "read_count": Metric("counter", CURVINE_WORKER),
    "write_bytes": Metric("counter", CURVINE_WORKER),
    # Curvine master (web port 9000): label tag = live | blacklist | decommission | lost.
    "worker_num": Metric("gauge", CURVINE_MASTER),
    # Curvine FUSE in the CSI node plugin (web port 9002).
    "curvine_fuse_request_duration_us_bucket": Metric("histogram", CURVINE_FUSE),
    "curvine_fuse_response_bytes_total": Metric("counter", CURVINE_FUSE),
    "up": Metric("gauge", PROMETHEUS),
}

_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
             "group_right", "offset", "bool", "inf", "nan"}  # fmt: skip
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
