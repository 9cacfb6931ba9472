"""The observability section: defaults per environment and one-line errors."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from infra.config import ConfigError, load_config, parse_config
from infra.config.loader import CONFIG_DIR


def _dev(**observability: Any) -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load((CONFIG_DIR / "dev.yaml").read_text())
    raw["observability"] = {**raw.get("observability", {}), **observability}
    return raw


@pytest.mark.parametrize("env", ["dev", "test", "prod"])
def test_enabled_in_every_environment(env: str) -> None:
    assert load_config(env).observability.enabled


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"scrape_interval_seconds": 10}, "scrape_interval_seconds"),
        ({"alert_emails": ["not-an-address"]}, "alert_emails"),
        ({"log_retention_days": 10}, "log_retention_days"),
        ({"l2_hit_rate_floor": 1.5}, "l2_hit_rate_floor"),
        ({"query_endpoint": "http://example.com"}, "query_endpoint"),
        ({"alert_topic_name": "bad name"}, "alert_topic_name"),
    ],
)
def test_invalid_values_fail_with_one_line(values: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(_dev(**values), "config/dev.yaml", "dev")
    text = str(caught.value)
    assert "\n" not in text and f"observability.{field}" in text


EXISTING = {
    "eks_cluster_name": "team-eks", "hyperpod_cluster_name": "team-hyperpod",
    "hyperpod_cluster_arn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef123456",
    "kubectl_role_arn": "arn:aws:iam::111122223333:role/k",
    "oidc_provider_arn": "arn:aws:iam::111122223333:oidc-provider/x",
}  # fmt: skip
SUBNETS = ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]


@pytest.mark.parametrize(
    ("subnets", "field"),
    [
        # Two subnets once any is given (the managed collector needs two AZs).
        (SUBNETS[:1], "scraper_subnet_ids"),
        # Curvine's NetworkPolicies admit the collector by address: the subnets' CIDRs.
        (SUBNETS, "scraper_source_cidrs"),
    ],
)
def test_existing_cluster_collector_network(subnets: list[str], field: str) -> None:
    raw = _dev(scraper_subnet_ids=subnets, scraper_security_group_ids=["sg-0123456789abcdef0"])
    raw["existing_cluster"] = EXISTING
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, "config/dev.yaml", "dev")
    text = str(caught.value)
    assert "\n" not in text and f"observability.{field}" in text
