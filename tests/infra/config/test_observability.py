"""The observability section: defaults per environment and one-line errors."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from infra.config import ConfigError, load_config, parse_config
from infra.config.loader import CONFIG_DIR
from tests.support.config import existing_cluster, use_existing_cluster


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


EXISTING = existing_cluster()
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
    use_existing_cluster(raw, EXISTING)
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, "config/dev.yaml", "dev")
    text = str(caught.value)
    assert "\n" not in text and f"observability.{field}" in text


def _existing(**observability: Any) -> str | None:
    raw = _dev(**observability)
    use_existing_cluster(raw, EXISTING)
    try:
        parse_config(raw, "config/dev.yaml", "dev")
    except ConfigError as err:
        return str(err)
    return None


CIDRS = ["10.0.0.0/24", "10.0.1.0/24"]
SG = ["sg-0123456789abcdef0"]


def test_one_scraper_subnet_is_refused_with_the_command_that_lists_the_clusters() -> None:
    assert _existing(scraper_subnet_ids=SUBNETS[:1], scraper_security_group_ids=SG) == (
        f"config/dev.yaml: observability.scraper_subnet_ids = {SUBNETS[:1]!r}: allowed: two or "
        "more subnets in different AZs (the managed collector needs two AZs); fix: list the EKS "
        "cluster's subnets (aws eks describe-cluster --query cluster.resourcesVpcConfig.subnetIds)"
    )


def test_scraper_subnets_without_their_cidrs_are_refused_with_the_command_that_reads_them() -> None:
    assert _existing(scraper_subnet_ids=SUBNETS, scraper_security_group_ids=SG) == (
        "config/dev.yaml: observability.scraper_source_cidrs = []: allowed: the CIDRs of "
        "scraper_subnet_ids (Curvine's NetworkPolicies admit the collector's metrics scrapes from "
        "them); fix: aws ec2 describe-subnets --subnet-ids <ids> --query 'Subnets[].CidrBlock'"
    )


def test_scraper_subnets_without_a_security_group_are_refused() -> None:
    """Subnets alone are not "neither": the collector would have no way into the nodes."""
    assert _existing(scraper_subnet_ids=SUBNETS, scraper_source_cidrs=CIDRS) == (
        "config/dev.yaml: observability.scraper_security_group_ids = []: allowed: at least one "
        "security group that reaches the nodes; fix: use the cluster security group (aws eks "
        "describe-cluster --query cluster.resourcesVpcConfig.clusterSecurityGroupId)"
    )


def test_the_scraper_network_is_checked_only_for_an_enabled_collector_on_an_existing_cluster() -> (
    None
):
    """A new cluster's collector uses the stacks' own subnets and security group; a disabled
    collector is not deployed: neither reads the scraper settings."""
    one = {"scraper_subnet_ids": SUBNETS[:1], "scraper_security_group_ids": SG}
    parse_config(_dev(**one), "config/dev.yaml", "dev")
    assert _existing(enabled=False, **one) is None
    assert _existing() is None  # neither list: the collector is left out, with a synth warning
    full = {**one, "scraper_subnet_ids": SUBNETS, "scraper_source_cidrs": CIDRS}
    assert _existing(**full) is None


def test_the_workspace_defaults_to_amps_own_key() -> None:
    """The managed collector writes to it (a customer managed key would shut it out)."""
    assert load_config("dev").observability.workspace_encryption == "aws_owned"


@pytest.mark.parametrize("existing", [False, True])
def test_a_customer_managed_workspace_key_with_the_managed_collector_is_refused(
    existing: bool,
) -> None:
    """A new cluster always gets the collector; an existing one when its network is given."""
    raw = _dev(workspace_encryption="customer_managed")
    if existing:
        use_existing_cluster(raw, EXISTING)
        raw["observability"].update(
            scraper_subnet_ids=SUBNETS, scraper_security_group_ids=SG, scraper_source_cidrs=CIDRS
        )
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, "config/dev.yaml", "dev")
    text = str(caught.value)
    assert "\n" not in text
    assert "observability.workspace_encryption = 'customer_managed'" in text
    assert "managed collector" in text and "fix:" in text


def test_a_customer_managed_workspace_key_without_a_collector_is_accepted() -> None:
    assert _existing(workspace_encryption="customer_managed") is None
    assert _existing(workspace_encryption="customer_managed", enabled=False) is None
