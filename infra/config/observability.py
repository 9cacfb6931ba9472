"""Metrics, dashboards and alerts for the three cache tiers (``observability`` in config).

Collection is Amazon Managed Service for Prometheus with its agentless collector
(``AWS::APS::Scraper``); see docs/observability.md for why this path and what it costs.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import Field, field_validator

from infra.config.base import Section
from infra.config.errors import RuleViolation
from infra.config.fields import is_aws_id, retention_days

TOPIC_NAME = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
# Qwen3-8B in bf16: 36 layers x 8 KV heads x 128 head dim x 2 (K and V) x 2 bytes.
QWEN3_8B_KV_BYTES_PER_TOKEN = 36 * 8 * 128 * 2 * 2


class ObservabilityConfig(Section):
    enabled: bool = False
    """Create the metrics store (AMP workspace), the managed scraper, the alert rules and the
    SNS alert topic, and set ``PROMETHEUS_MULTIPROC_DIR`` in the model container so LMCache's
    ``lmcache:`` metrics appear on vLLM's /metrics."""
    scrape_interval_seconds: int = Field(default=30, ge=30, le=300)
    """Scrape interval of the managed collector, in seconds (AMP accepts 30 or more)."""
    alert_topic_name: str | None = None
    """Name of the SNS topic alerts go to (KMS-encrypted, created by the observability stack).
    null: ``<project>-<environment>-kvcache-alerts``."""
    alert_emails: tuple[str, ...] = ()
    """E-mail addresses subscribed to the alert topic (each must confirm once)."""
    ttft_p95_bound_seconds: float = Field(default=2.0, gt=0, le=600)
    """Alert when an endpoint's TTFT p95 stays above this for 10 minutes, in seconds."""
    l2_hit_rate_floor: float = Field(default=0.01, gt=0, lt=1)
    """Alert when the L2 (cross-Pod) hit rate stays below this share of looked-up tokens for
    30 minutes while requests flow (missing PYTHONHASHSEED, failed mutation, unmounted PVC);
    `hpkv verify`'s metrics row fails below it too."""
    l2_failed_load_ratio: float = Field(default=0.05, gt=0, lt=1)
    """Alert when, for 10 minutes, more than this share of the KV tokens LMCache's lookup found
    (in L1 or L2) fails to load: L2 reads failing (docs/observability.md says what the alert
    can and cannot see)."""
    l2_high_water_minutes: int = Field(default=15, ge=5, le=1440)
    """Alert when L2 stays above the evictor's high-water mark this long, in minutes."""
    kv_bytes_per_token: int = Field(default=QWEN3_8B_KV_BYTES_PER_TOKEN, ge=1024)
    """KV-cache bytes of one token as LMCache stores it (layers x KV heads x head dim x 2 x
    dtype bytes; default Qwen3-8B bf16). Turns L2 read bytes into L2 hit tokens."""
    workspace_encryption: Literal["aws_owned", "customer_managed"] = "aws_owned"
    """Key that encrypts the AMP workspace at rest. ``aws_owned`` (the default): AMP's own key,
    which the managed collector can write to. ``customer_managed``: the stack's KMS key; the AMP
    user guide ("Encryption at rest") says such a workspace cannot take a managed collector, so
    it is refused whenever the stack creates one (a new cluster; an existing cluster with
    ``scraper_subnet_ids``). The choice is fixed at creation: AMP cannot convert a workspace
    between the two. The alert topic is encrypted with the stack's key either way."""
    log_retention_days: int = 30
    """Retention of the workspace's log group (rule and alert manager errors), in days."""
    query_endpoint: str | None = None
    """Prometheus query URL of the workspace for ``hpkv report``
    (``https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>/``). null: found by the
    workspace alias with DescribeWorkspace."""
    scraper_subnet_ids: tuple[str, ...] = ()
    """Existing-cluster mode only: subnets (two AZs or more) for the collector's network
    interfaces; use the cluster's subnets."""
    scraper_security_group_ids: tuple[str, ...] = ()
    """Existing-cluster mode only: security groups of the collector's interfaces; use one that
    reaches the nodes (the cluster security group)."""
    scraper_source_cidrs: tuple[str, ...] = ()
    """Existing-cluster mode only: the CIDRs of ``scraper_subnet_ids``. Curvine's
    NetworkPolicies admit its metrics ports from them (the collector connects from its network
    interfaces, not from a Pod). A cluster this app creates uses the VPC's CIDR."""

    @field_validator("alert_topic_name")
    @classmethod
    def _topic(cls, v: str | None) -> str | None:
        if v is not None and not TOPIC_NAME.match(v):
            raise RuleViolation("1-256 letters, digits, '-' and '_'", "rename the topic")
        return v

    @field_validator("alert_emails")
    @classmethod
    def _emails(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for address in v:
            if not EMAIL.match(address):
                raise RuleViolation("e-mail addresses (ops@example.com)", f"fix {address!r}")
        return v

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, v: int) -> int:
        return retention_days(v, "observability.log_retention_days")

    @field_validator("query_endpoint")
    @classmethod
    def _endpoint(cls, v: str | None) -> str | None:
        if v is not None and not re.match(
            r"^https://aps-workspaces\.[a-z0-9-]+\.amazonaws\.com"
            r"/workspaces/ws-[0-9a-f-]+/?$",
            v,
        ):
            raise RuleViolation(
                "https://aps-workspaces.<region>.amazonaws.com/workspaces/ws-<id>/",
                "copy prometheusEndpoint from `aws amp describe-workspace`, or remove it",
            )
        return v

    @field_validator("scraper_subnet_ids")
    @classmethod
    def _subnets(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for s in v:
            if not is_aws_id(s, "subnet"):
                raise RuleViolation("subnet ids (subnet-0abc...)", f"fix {s!r}")
        return v

    @field_validator("scraper_source_cidrs")
    @classmethod
    def _cidrs(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for c in v:
            try:
                ipaddress.IPv4Network(c, strict=True)
            except ValueError:
                raise RuleViolation("IPv4 CIDRs (10.0.0.0/24)", f"fix {c!r}") from None
        return v

    @field_validator("scraper_security_group_ids")
    @classmethod
    def _groups(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for s in v:
            if not is_aws_id(s, "sg"):
                raise RuleViolation("security group ids (sg-0abc...)", f"fix {s!r}")
        return v
