"""Alerts as code, generated from an environment's config: the alert rules and the alert
manager definition the observability stack uploads to the AMP workspace, on the queries of
``infra.metrics.dashboards`` and ``infra.metrics.tiers``. Every metric name used here is in
``infra.metrics.catalog.METRICS``."""

from __future__ import annotations

from typing import Any

import yaml

from infra.config import AppConfig
from infra.config.curvine import CURVINE_FS_PATH
from infra.config.kvcache import MOUNTED_L2_BACKENDS, L2Backend
from infra.metrics.dashboards import RATE, WORKER, l2_used_percent, rows
from infra.metrics.scaling import at_max_rules
from infra.metrics.tiers import LOADED, PROMISED, QUERIED, l2_tokens_expr
from k8s.names import EVICTOR, vllm_job


def _l2_jobs(config: AppConfig) -> dict[L2Backend, list[str]]:
    """The scrape jobs of the endpoints with an L2, per L2 backend: an endpoint without L2 reads
    nothing from one by design."""
    jobs: dict[L2Backend, list[str]] = {}
    for e in config.kvcache.endpoints:
        if e.l2_backend != "none":
            jobs.setdefault(e.l2_backend, []).append(vllm_job(e.namespace, e.name))
    return jobs


def _job_selector(jobs: list[str]) -> str:
    # Job names are DNS labels joined by "-", nothing a regex would read as an operator.
    return f'{{job=~"{"|".join(jobs)}"}}'


def _l2_rules(config: AppConfig) -> list[dict[str, Any]]:
    """The L2 alerts, for the endpoints with an L2 only (none without any)."""
    obs = config.observability
    by = "sum by (namespace, endpoint)"
    jobs = _l2_jobs(config)
    if not jobs:
        return []
    low = []
    # The near-zero alert watches endpoints on a shared mount (curvine, fsx_lustre) only: its
    # hint is about the mount, and Tiered Storage's reads are counted by bytes.
    for backend, names in ((b, n) for b, n in jobs.items() if b in MOUNTED_L2_BACKENDS):

        def rate(metric: str, sel: str = _job_selector(names)) -> str:
            return f"{by} (rate({metric}{sel}[15m]))"

        l2 = l2_tokens_expr(rate, backend, obs.kv_bytes_per_token)
        low.append(
            f"({l2} / {rate(QUERIED)} < {obs.l2_hit_rate_floor}"
            f" and {rate('vllm:request_success_total')} > 0)"
        )
    every = _job_selector([name for names in jobs.values() for name in names])

    def rate10(metric: str) -> str:
        return f"{by} (rate({metric}{every}[10m]))"

    near_zero = (
        [
            {
                "alert": "KvCacheL2HitRateNearZero",
                "expr": " or ".join(low),
                "for": "30m",
                "labels": {"severity": "warning"},
                "annotations": {
                    "summary": "{{ $labels.endpoint }} serves requests but reads almost "
                    "nothing from L2: check PYTHONHASHSEED, the Kyverno mutation and the "
                    "L2 claim's mount (hpkv verify)"
                },
            }
        ]
        if low
        else []
    )
    return [
        *near_zero,
        {
            "alert": "KvCacheL2ReadsFailing",
            "expr": f"({rate10(PROMISED)} - {rate10(LOADED)}) / {rate10(PROMISED)}"
            f" > {obs.l2_failed_load_ratio}",
            "for": "10m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "{{ $labels.endpoint }}: a share of {{ $value }} of the KV "
                "tokens LMCache found did not load (L2 reads failing): check the L2 store "
                "and the Pods' logs ('Failed to read from file')"
            },
        },
    ]


def alert_rules(config: AppConfig) -> dict[str, Any]:
    """Prometheus rule groups for the AMP rule groups namespace."""
    obs = config.observability
    ev = config.kvcache.curvine.evictor
    rules: list[dict[str, Any]] = [
        {
            "alert": "KvCacheTtftP95High",
            "expr": f"histogram_quantile(0.95, sum by (namespace, endpoint, le) (rate(vllm:"
            f"time_to_first_token_seconds_bucket[{RATE}]))) > {obs.ttft_p95_bound_seconds}",
            "for": "10m",
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": "TTFT p95 of {{ $labels.endpoint }} is {{ $value }}s "
                f"(bound {obs.ttft_p95_bound_seconds}s)"
            },
        },
    ]
    rules += _l2_rules(config)
    rules += at_max_rules(config)
    if "curvine" in config.kvcache.l2_backends:
        rules += [
            {
                "alert": "KvCacheL2AboveHighWater",
                "expr": f"{l2_used_percent(config)} > {ev.high_water_percent}",
                "for": f"{obs.l2_high_water_minutes}m",
                "labels": {"severity": "warning"},
                "annotations": _high_water_hint(config),
            },
            {
                "alert": "CurvineWorkerDown",
                "expr": f"up{{{WORKER}}} == 0",
                "for": "5m",
                "labels": {"severity": "critical"},
                "annotations": {
                    "summary": "Curvine worker on {{ $labels.node }} is not "
                    "answering its metrics port"
                },
            },
            {
                "alert": "CurvineWorkersMissing",
                "expr": f'max(worker_num{{job="curvine-master", tag="live"}}) < '
                f"{config.hyperpod.gpu_group.instance_count}",
                "for": "5m",
                "labels": {"severity": "critical"},
                "annotations": {
                    "summary": "The Curvine master counts {{ $value }} live workers "
                    f"of {config.hyperpod.gpu_group.instance_count} GPU nodes"
                },
            },
        ]
    return {"groups": [{"name": "kvcache-tiers", "rules": rules}]}


def _high_water_hint(config: AppConfig) -> dict[str, str]:
    """What the pool above the mark means, and where to look: the pool's one evictor
    (k8s.l2_volume) keeps everything under the claims' root below it, so either it does not run
    or finish, or the space is held where it does not delete."""
    ns, high = config.kvcache.curvine.namespace, config.kvcache.curvine.evictor.high_water_percent
    pods = f"kubectl -n {ns} get pods -l app.kubernetes.io/name={EVICTOR}"
    return {
        "summary": "L2 holds {{ $value }}% of what Curvine can write (capacity less reserved), "
        f"above the evictor's high-water mark ({high}%): a full worker refuses new blocks "
        "('Not enough Ssd storage capacity') and LMCache's writes to L2 fail",
        "description": f"CronJob {ns}/{EVICTOR} keeps everything under {CURVINE_FS_PATH} (every "
        f"claim's directory) below the mark. No Pod of it in the last runs ({pods}): it does not "
        f"run. Its log (kubectl -n {ns} logs -l app.kubernetes.io/name={EVICTOR}) with "
        "'l2 used' but no 'after eviction': it did not finish. 'l2 used' below high: the "
        f"space is held outside {CURVINE_FS_PATH} or by files that are not LMCache chunks "
        "(*.data).",
    }


def alert_rules_yaml(config: AppConfig) -> str:
    return yaml.safe_dump(alert_rules(config), sort_keys=False, width=200)


def alertmanager_definition(config: AppConfig, topic_arn: str) -> str:
    """AMP alert manager definition: one SNS receiver (the only receiver AMP supports).

    ``topic_arn`` may be a CDK token; it is embedded in the string as is.
    """
    inner = yaml.safe_dump(
        {
            "route": {
                "receiver": "sns",
                "group_by": ["alertname", "endpoint"],
                "group_wait": "1m",
                "repeat_interval": "4h",
            },
            "receivers": [
                {
                    "name": "sns",
                    "sns_configs": [
                        {
                            "topic_arn": "TOPIC_ARN",
                            "sigv4": {"region": config.region},
                            "subject": f"[{config.stack_prefix}] {{{{ .GroupLabels.alertname }}}}",
                        }
                    ],
                }
            ],
        },
        sort_keys=False,
    )
    body = "\n".join("  " + line for line in inner.splitlines())
    return "alertmanager_config: |\n" + body.replace("TOPIC_ARN", topic_arn) + "\n"


def all_exprs(config: AppConfig) -> list[str]:
    """Every PromQL expression of the dashboard and the alert rules."""
    exprs = [t.expr for r in rows(config) for p in r.panels for t in p.targets]
    exprs += [rule["expr"] for g in alert_rules(config)["groups"] for rule in g["rules"]]
    return exprs
