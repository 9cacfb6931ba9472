"""The alert rules the observability stack uploads (``alert_rules_yaml``, the construct's rule
group), evaluated by Prometheus's own ``promtool`` over series crafted at each alert's
threshold: each alert fires just past its threshold, stays quiet at it, and fires only once its
``for`` has passed. Thresholds come from the environment's config, so a unit slip (percent
against a ratio, bytes against GiB) or a threshold off by a factor fails here.

Series carry the labels the managed collector attaches (``k8s.observability.scrape_config``):
``job``, ``instance``, ``namespace``, ``pod``, ``node`` and, for vLLM, ``endpoint``. Rates are
made exact (per-minute increments that are multiples of 60) where an alert is tested exactly at
its threshold.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config import AppConfig, parse_config
from infra.config.kvcache import MOUNTED_L2_BACKENDS, EndpointConfig
from infra.metrics.alerts import alert_rules_yaml
from infra.metrics.dashboards import rows
from infra.metrics.tiers import LMCACHE_CHUNK_TOKENS
from k8s.names import vllm_job
from tests.support.config import BASE, SOURCE, with_overrides
from tests.support.promtool import check_rules, expand, needs_promtool, run_rule_tests

pytestmark = needs_promtool

Obj = dict[str, Any]
Series = dict[str, str]
Check = tuple[int, list[dict[str, Any]]]  # (minute, the alerts firing then)
CURVINE_ENVS = ("dev", "test", "prod")
PODS = ("x2x7k", "q8z2m")  # two replicas of each endpoint


def _rules(config: AppConfig) -> tuple[str, dict[str, dict[str, Any]]]:
    text = alert_rules_yaml(config)
    return text, {r["alert"]: r for g in yaml.safe_load(text)["groups"] for r in g["rules"]}


# How long each condition must hold before the alert fires, in minutes, as docs/observability.md
# and the config promise (not read from the rule: the rule is what is under test).
WAITS: dict[str, Callable[[AppConfig], int]] = {
    "KvCacheTtftP95High": lambda _: 10,
    "KvCacheL2HitRateNearZero": lambda _: 30,
    "KvCacheL2ReadsFailing": lambda _: 10,
    "KvCacheL2AboveHighWater": lambda c: c.observability.l2_high_water_minutes,
    "CurvineWorkerDown": lambda _: 5,
    "CurvineWorkersMissing": lambda _: 5,
}


def _series(name: str, labels: dict[str, str], values: str) -> Series:
    inner = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{inner}}}", "values": values}


def _counter(per_minute: int, minutes: int) -> str:
    return f"0+{per_minute}x{minutes}"


def _halves(per_minute: int) -> tuple[int, int]:
    """``per_minute`` split over two Pods, each share a multiple of 60 when the total is (so
    each Pod's rate is exact)."""
    first = 60 * (per_minute // 120)
    return first, per_minute - first


def _pod_labels(e: EndpointConfig, i: int) -> dict[str, str]:
    return {
        "job": vllm_job(e.namespace, e.name),
        "instance": f"10.1.7.{20 + i}:8000",
        "namespace": e.namespace,
        "pod": f"{e.name}-5d8f7c9b4-{PODS[i]}",
        "node": f"gpu-{i + 1}",
        "endpoint": e.name,
        "model_name": "/opt/ml/model",
    }


def _alert(rule: dict[str, Any], labels: dict[str, str], value: float = 0.0) -> dict[str, Any]:
    """What promtool must see firing: the expression's labels plus the rule's, and the rule's
    annotations expanded for them."""
    return {
        "exp_labels": {**labels, **rule["labels"]},
        "exp_annotations": {k: expand(v, labels, value) for k, v in rule["annotations"].items()},
    }


def _case(alert: str, series: list[Series], checks: list[Check]) -> dict[str, Any]:
    return {
        "interval": "1m",
        "input_series": series,
        "alert_rule_test": [
            {"eval_time": f"{t}m", "alertname": alert, "exp_alerts": a} for t, a in checks
        ],
    }


# --- one builder per alert: the cases at its threshold ------------------------------------------


def _ttft_cases(config: AppConfig, rule: dict[str, Any]) -> list[dict[str, Any]]:
    """Buckets at the bound and at twice it. 94 % of first tokens within the bound puts the p95
    a sixth of a bucket past it: fires once ``for`` has passed. 96 % within: quiet."""
    bound = config.observability.ttft_p95_bound_seconds
    wait = WAITS[rule["alert"]](config)
    end = wait + 20

    def series(within: int) -> list[Series]:
        out = []
        for e in config.kvcache.endpoints:
            for i, (fast, slow) in enumerate(
                zip(_halves(within * 60), _halves((100 - within) * 60), strict=True)
            ):
                for le, count in (
                    (repr(bound), fast),
                    (repr(2 * bound), fast + slow),
                    ("+Inf", fast + slow),
                ):
                    out.append(
                        _series(
                            "vllm:time_to_first_token_seconds_bucket",
                            {**_pod_labels(e, i), "le": le},
                            _counter(count, end),
                        )
                    )
        return out

    # Prometheus's bucketQuantile over the steady rates (94, 100, 100 per second).
    p95 = bound + (2 * bound - bound) * ((0.95 * 100.0 - 94.0) / (100.0 - 94.0))
    late = [
        _alert(rule, {"namespace": e.namespace, "endpoint": e.name}, p95)
        for e in config.kvcache.endpoints
    ]
    # Rates exist from the second sample (minute 1): pending until 1 + for.
    return [
        _case(rule["alert"], series(94), [(wait, []), (1 + wait, late), (end, late)]),
        _case(rule["alert"], series(96), [(1 + wait, []), (end, [])]),
    ]


def _l2_hit_cases(config: AppConfig, rule: dict[str, Any]) -> list[dict[str, Any]]:
    """L2 hit tokens (fs:// reads x LMCache's 256-token chunk) over the prompt tokens vLLM
    looked up, per endpoint: one hit token in a hundred below the floor fires; exactly at the
    floor is quiet; an idle endpoint is quiet."""
    obs = config.observability
    floor = Fraction(str(obs.l2_hit_rate_floor)).limit_denominator(10**6)
    scale = 100
    tokens = 60 * floor.denominator * scale * LMCACHE_CHUNK_TOKENS  # per minute, both Pods
    at_floor = 60 * floor.numerator * scale  # chunks read per minute
    wait = WAITS[rule["alert"]](config)
    end = wait + 20

    def series(chunks: int, requests: int) -> list[Series]:
        out = []
        for e in config.kvcache.endpoints:
            shares = zip(_halves(chunks), _halves(tokens), _halves(requests), strict=True)
            for i, (read, looked_up, done) in enumerate(shares):
                labels = _pod_labels(e, i)
                out += [
                    _series("lmcache:num_remote_read_requests_total", labels, _counter(read, end)),
                    _series("vllm:prefix_cache_queries_total", labels, _counter(looked_up, end)),
                    _series(
                        "vllm:request_success_total",
                        {**labels, "finished_reason": "stop"},
                        _counter(done, end),
                    ),
                ]
        return out

    # Only endpoints on a shared tier (curvine, fsx_lustre) are watched: every endpoint's
    # series reads near zero here, so an alert for any other is a test failure.
    low = [
        _alert(rule, {"namespace": e.namespace, "endpoint": e.name})
        for e in config.kvcache.mounted_l2_endpoints
    ]
    return [
        _case(rule["alert"], series(at_floor - 60, 120), [(wait, []), (1 + wait, low)]),
        _case(rule["alert"], series(at_floor, 120), [(end, [])]),
        _case(rule["alert"], series(0, 0), [(end, [])]),
    ]


def _failed_load_cases(config: AppConfig, rule: dict[str, Any]) -> list[dict[str, Any]]:
    """Tokens LMCache promised (requested) against tokens it loaded (hit), per endpoint: a
    shortfall one token in a thousand past ``l2_failed_load_ratio`` fires once ``for`` has
    passed; exactly at it is quiet; an endpoint LMCache promised nothing is quiet."""
    ratio = Fraction(str(config.observability.l2_failed_load_ratio)).limit_denominator(10**6)
    promised = 60 * ratio.denominator * 1000  # per minute, over both Pods
    at_ratio = 60 * ratio.numerator * 1000
    wait = WAITS[rule["alert"]](config)
    end = wait + 20

    def series(promised: int, failed: int) -> list[Series]:
        out = []
        for e in config.kvcache.endpoints:
            shares = zip(_halves(promised), _halves(promised - failed), strict=True)
            for i, (asked, loaded) in enumerate(shares):
                labels = _pod_labels(e, i)
                out += [
                    _series("lmcache:num_requested_tokens_total", labels, _counter(asked, end)),
                    _series("lmcache:num_hit_tokens_total", labels, _counter(loaded, end)),
                ]
        return out

    share = Fraction(at_ratio + 60, promised)
    # Endpoints with an L2 only: LMCache's loads on one without L2 come from its CPU cache.
    failing = [
        _alert(rule, {"namespace": e.namespace, "endpoint": e.name}, float(share))
        for e in config.kvcache.endpoints
        if e.l2_backend != "none"
    ]
    return [
        _case(rule["alert"], series(promised, at_ratio + 60), [(wait, []), (1 + wait, failing)]),
        _case(rule["alert"], series(promised, at_ratio), [(end, [])]),
        _case(rule["alert"], series(0, 0), [(end, [])]),
    ]


def _worker_labels(i: int) -> dict[str, str]:
    return {
        "job": "curvine-worker",
        "instance": f"10.1.0.{10 + i}:9001",
        "namespace": "curvine",
        "pod": f"curvine-worker-{i}",
        "node": f"gpu-{i + 1}",
    }


def _high_water_cases(config: AppConfig, rule: dict[str, Any], high: int) -> list[dict[str, Any]]:
    """``high``: the bytes above which the evictor deletes. The workers' ``fs_used`` summing
    to exactly that is quiet; one byte more fires once ``for`` has passed."""
    workers = config.hyperpod.gpu_group.instance_count
    w = config.kvcache.curvine.worker
    # What writes can fill: Curvine keeps reserved_gib free out of every worker's capacity.
    pool = (w.capacity_gib - w.reserved_gib) * workers * 2**30
    wait = WAITS[rule["alert"]](config)
    end = wait + 20

    def series(total: int) -> list[Series]:
        shares = [total // workers] * workers
        shares[0] += total - sum(shares)
        return [
            _series("fs_used", _worker_labels(i), f"{used}x{end}") for i, used in enumerate(shares)
        ]

    over = [_alert(rule, {}, (100 * float(high + 1)) / float(pool))]
    return [
        _case(rule["alert"], series(high + 1), [(wait - 1, []), (wait, over), (end, over)]),
        _case(rule["alert"], series(high), [(end, [])]),
    ]


def _worker_down_cases(config: AppConfig, rule: dict[str, Any]) -> list[dict[str, Any]]:
    """One worker's scrape fails from minute 20: pending for ``for``, then firing for that
    worker only."""
    workers = config.hyperpod.gpu_group.instance_count
    wait = WAITS[rule["alert"]](config)
    end = 20 + wait + 5
    up = [
        _series("up", _worker_labels(i), "1x19 0x30" if i == 0 else f"1x{end}")
        for i in range(workers)
    ]
    down = [_alert(rule, _worker_labels(0))]
    healthy = [_series("up", _worker_labels(i), f"1x{end}") for i in range(workers)]
    return [
        _case(rule["alert"], up, [(19 + wait, []), (20 + wait, down)]),
        _case(rule["alert"], healthy, [(end, [])]),
    ]


def _workers_missing_cases(config: AppConfig, rule: dict[str, Any]) -> list[dict[str, Any]]:
    """The master's live-worker count one below the GPU node count fires; equal to it is quiet
    (however many it counts lost)."""
    nodes = config.hyperpod.gpu_group.instance_count
    wait = WAITS[rule["alert"]](config)
    end = wait + 20
    master = {
        "job": "curvine-master",
        "instance": "10.1.0.5:9000",
        "namespace": "curvine",
        "pod": "curvine-master-0",
        "node": "system-1",
    }

    def series(live: int, lost: int) -> list[Series]:
        return [
            _series("worker_num", {**master, "tag": "live"}, f"{live}x{end}"),
            _series("worker_num", {**master, "tag": "lost"}, f"{lost}x{end}"),
        ]

    missing = [_alert(rule, {}, float(nodes - 1))]
    return [
        _case(rule["alert"], series(nodes - 1, 1), [(wait - 1, []), (wait, missing)]),
        _case(rule["alert"], series(nodes, 3), [(end, [])]),
    ]


Builder = Callable[[AppConfig, dict[str, Any]], list[dict[str, Any]]]


def _run(config: AppConfig, alert: str, builder: Builder, tmp: Path) -> None:
    """promtool runs ``builder``'s cases against the rule group the config deploys."""
    text, rules = _rules(config)
    assert alert in rules, f"{alert} is not among the deployed alerts {sorted(rules)}"
    run_rule_tests(text, builder(config, rules[alert]), tmp)


def _evictor_high(objs: list[Obj]) -> int:
    (cron,) = [
        o for o in objs if o["kind"] == "CronJob" and o["metadata"]["name"] == "curvine-l2-evictor"
    ]
    (container,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    return int({e["name"]: e["value"] for e in container["env"]}["HIGH"])


# --- the tests -------------------------------------------------------------------------------


def test_prometheus_loads_the_alert_rules_and_every_dashboard_query(
    config: AppConfig, tmp_path: Path
) -> None:
    """promtool parses each alert (expression, ``for``, label and annotation templates) as AMP's
    Prometheus engine would, and each dashboard query as a recording rule's expression."""
    text, _rules_by_name = _rules(config)
    check_rules(text, tmp_path)
    queries = [t.expr for r in rows(config) for p in r.panels for t in p.targets]
    recorded = [{"record": f"dashboard:query_{i}", "expr": q} for i, q in enumerate(queries)]
    groups = {"groups": [{"name": "dashboard", "rules": recorded}]}
    check_rules(yaml.safe_dump(groups, sort_keys=False, width=200), tmp_path)


def test_every_deployed_alert_has_a_threshold_test(config: AppConfig) -> None:
    _text, rules = _rules(config)
    assert set(rules) <= set(WAITS), set(rules) - set(WAITS)


def test_the_ttft_alert_fires_when_more_than_5_percent_of_first_tokens_miss_the_bound(
    config: AppConfig, tmp_path: Path
) -> None:
    _run(config, "KvCacheTtftP95High", _ttft_cases, tmp_path)


def test_the_l2_hit_rate_alert_fires_below_the_floor_and_not_at_it(
    config: AppConfig, tmp_path: Path
) -> None:
    _run(config, "KvCacheL2HitRateNearZero", _l2_hit_cases, tmp_path)


@pytest.mark.parametrize("env", CURVINE_ENVS)
def test_the_l2_high_water_alert_fires_one_byte_past_where_the_evictor_starts(
    config: AppConfig, objs: list[Obj], tmp_path: Path
) -> None:
    """The alert and the evictor read one mark: ``fs_used`` in bytes against the pool in
    bytes, as a percentage of it, against ``high_water_percent``."""
    high = _evictor_high(objs)
    _run(
        config,
        "KvCacheL2AboveHighWater",
        lambda c, rule: _high_water_cases(c, rule, high),
        tmp_path,
    )


@pytest.mark.parametrize("env", CURVINE_ENVS)
def test_the_high_water_hint_sends_the_reader_to_the_evictor_that_keeps_the_whole_pool(
    config: AppConfig, objs: list[Obj]
) -> None:
    """The alert shares its mark with one CronJob, the pool's evictor: the hint names it where it
    runs (its namespace, its Pods' label) and the directory it keeps, the one curvine-sc makes
    every claim's directory in; and the refusal Curvine v0.4.1 gives a write once a worker is
    full (``crates/adapters/curvine-storage-local/src/policy.rs``), what LMCache's log shows."""
    _text, rules = _rules(config)
    hint = " ".join(rules["KvCacheL2AboveHighWater"]["annotations"].values())
    (cron,) = [o for o in objs if o["kind"] == "CronJob" and o["metadata"]["name"] in hint]
    ns = cron["metadata"]["namespace"]
    label = cron["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]
    assert (
        f"kubectl -n {ns} get pods -l app.kubernetes.io/name={label['app.kubernetes.io/name']}"
        in hint
    )
    (sc,) = [
        o for o in objs if o["kind"] == "StorageClass" and o["metadata"]["name"] == "curvine-sc"
    ]
    assert f"everything under {sc['parameters']['fs-path']}" in hint
    assert "Not enough Ssd storage capacity" in hint
    assert _evictor_high(objs) == _evictor_high([cron])


@pytest.mark.parametrize("env", CURVINE_ENVS)
def test_the_worker_down_alert_fires_after_five_minutes_without_a_scrape(
    config: AppConfig, tmp_path: Path
) -> None:
    _run(config, "CurvineWorkerDown", _worker_down_cases, tmp_path)


@pytest.mark.parametrize("env", CURVINE_ENVS)
def test_the_workers_missing_alert_fires_when_the_master_counts_fewer_live_than_gpu_nodes(
    config: AppConfig, tmp_path: Path
) -> None:
    _run(config, "CurvineWorkersMissing", _workers_missing_cases, tmp_path)


def test_the_failed_load_alert_fires_past_the_configured_share_of_promised_tokens(
    config: AppConfig, tmp_path: Path
) -> None:
    _run(config, "KvCacheL2ReadsFailing", _failed_load_cases, tmp_path)


def test_an_endpoint_without_l2_is_never_alerted_for_its_l2_hit_rate(tmp_path: Path) -> None:
    """An endpoint with ``l2_backend: none`` reads nothing from L2 by design: serving
    requests with no L2 reads alerts the endpoint that has L2, and only that one."""
    (with_l2,) = BASE["kvcache"]["endpoints"]
    without = {**with_l2, "name": "qwen3-8b-l1-only", "l2_backend": "none", "replicas": 1}
    with_l2 = {**with_l2, "replicas": 1}
    config = parse_config(with_overrides({"kvcache.endpoints": [with_l2, without]}), SOURCE, "dev")
    text, rules = _rules(config)
    rule = rules["KvCacheL2HitRateNearZero"]
    wait = WAITS[rule["alert"]](config)
    series = []
    for e in config.kvcache.endpoints:
        for i in range(2):
            labels = _pod_labels(e, i)
            series += [
                _series("lmcache:num_remote_read_requests_total", labels, f"0x{wait + 5}"),
                _series("vllm:prefix_cache_queries_total", labels, _counter(6000, wait + 5)),
                _series(
                    "vllm:request_success_total",
                    {**labels, "finished_reason": "stop"},
                    _counter(60, wait + 5),
                ),
            ]
    alerted = [
        _alert(rule, {"namespace": e.namespace, "endpoint": e.name})
        for e in config.kvcache.endpoints
        if e.l2_backend in MOUNTED_L2_BACKENDS
    ]
    assert [a["exp_labels"]["endpoint"] for a in alerted] == [with_l2["name"]]
    run_rule_tests(text, [_case(rule["alert"], series, [(1 + wait, alerted)])], tmp_path)
