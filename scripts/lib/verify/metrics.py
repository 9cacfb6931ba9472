"""The metrics store's row of ``verify``: each tier's hit rate, when the store has samples."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.credentials import Credentials
from botocore.exceptions import BotoCoreError, ClientError

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.report import PromClient, query_endpoint, summary

# What to look at when an endpoint reads next to nothing from its L2 while requests flow.
NEAR_ZERO_FIX = {
    "tieredstorage": "check Tiered Storage (its row above; `hpkv wait-tiered-storage`) and that "
    "the Pods keep the operator's sagemaker-hyperpod:// URL and PYTHONHASHSEED (rows above)",
}
MOUNTED_FIX = "compare PYTHONHASHSEED and the L2 mount on the Pods (rows above)"


def check_metrics(
    cfg: AppConfig, ref: EndpointConfig, connect: Callable[[], Any], window: str = "1h"
) -> Check:
    """The endpoint's tier hit rates from the metrics store, when it has samples. ``connect``
    gives a ``scripts.lib.report.PromClient`` (None without credentials). The metrics are extra
    evidence: when there are none, or the store cannot be reached, the row is skipped with the
    reason and the cross-Pod test below, which reads LMCache's logs, decides."""
    stage = "metrics: tier hit rates"
    if not cfg.observability.enabled:
        return Check(stage, "skip", "observability.enabled is false: logs are used")
    try:
        prom = connect()
        if prom is None:
            return Check(stage, "skip", "no credentials to query the metrics store: logs are used")
        found = summary(cfg, prom, window, datetime.now(UTC))["endpoints"]
    except (OSError, RuntimeError, LookupError, ClientError, BotoCoreError) as exc:
        return Check(stage, "skip", f"metrics store not reachable ({exc}): logs are used")
    rates = found.get(f"{ref.namespace}/{ref.name}") or {}
    l2, rps = rates.get("l2_hit_rate"), rates.get("requests_per_second")
    if l2 is None:
        return Check(stage, "skip", f"no L2 samples in the last {window}: logs are used")

    def pct(key: str) -> str:
        value = rates.get(key)
        return "-" if value is None else f"{value:.0%}"

    ttft = rates.get("ttft_p95_seconds")
    detail = (
        f"last {window}: L0 {pct('l0_hit_rate')}, L1 {pct('l1_hit_rate')}, L2 {pct('l2_hit_rate')}"
        f"; TTFT p95 {'-' if ttft is None else f'{ttft * 1000:.0f} ms'}"
    )
    # Below the environment's floor (the alert's) while requests flow, the cross-Pod reuse is
    # not happening: a missing PYTHONHASHSEED, a mutation that did not apply, an unmounted
    # claim, a Tiered Storage that is off. An L1-only endpoint reads no L2 by design.
    floor = cfg.observability.l2_hit_rate_floor
    if ref.l2_backend != "none" and (rps or 0) > 0 and l2 < floor:
        return Check(
            stage,
            "fail",
            f"{detail}: L2 hit rate near zero while requests flow (below "
            f"observability.l2_hit_rate_floor {floor:g})",
            NEAR_ZERO_FIX.get(ref.l2_backend, MOUNTED_FIX),
        )
    return Check(stage, "pass", detail)


def metrics_client(cfg: AppConfig, clients: Clients) -> Any:
    """A signed client of the environment's metrics store, or None without credentials."""
    found = boto3.Session(region_name=cfg.region).get_credentials()
    if found is None:
        return None
    frozen = found.get_frozen_credentials()
    base = query_endpoint(cfg, clients.aws("amp"))
    return PromClient(
        base, cfg.region, Credentials(frozen.access_key, frozen.secret_key, frozen.token)
    )
