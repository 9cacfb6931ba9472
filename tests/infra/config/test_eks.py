"""The eks section: core add-on versions follow the cluster's Kubernetes minor
(infra/facts/versions.py) unless written out, and a version of another minor is refused in one line
(pure parsing, no double)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig, parse_config
from infra.config import eks as eks_config
from infra.config.eks import EksAddonVersions
from infra.config.errors import ConfigError
from infra.facts import versions
from tests.support.config import env_raw


def dev_raw(minor: str, **addons: str) -> dict[str, Any]:
    raw = env_raw()
    raw["eks"]["kubernetes_version"] = minor
    if addons:
        raw["eks"]["addons"] = addons
    return raw


def parse(raw: dict[str, Any]) -> AppConfig:
    return parse_config(raw, "config/dev.yaml", "dev")


def test_model_defaults_are_the_default_minors_table() -> None:
    # The README's configuration reference shows the model defaults: they must be the pins used.
    table = versions.CORE_ADDON_VERSIONS[versions.DEFAULT_KUBERNETES_VERSION]
    defaults = EksAddonVersions()
    assert {k: getattr(defaults, k) for k in EksAddonVersions.model_fields} == {
        k: getattr(table, k) for k in EksAddonVersions.model_fields
    }


def test_override_is_kept() -> None:
    config = parse(dev_raw("1.33", coredns="v1.12.1-eksbuild.2"))
    assert config.eks.addons.coredns == "v1.12.1-eksbuild.2"
    assert config.eks.addons.kube_proxy == versions.CORE_ADDON_VERSIONS["1.33"].kube_proxy


def test_kube_proxy_of_another_minor_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError) as raised:
        parse(dev_raw("1.33", kube_proxy="v1.34.1-eksbuild.2"))
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("config/dev.yaml: eks.addons.kube_proxy = 'v1.34.1-eksbuild.2': ")
    assert "v1.33.5-eksbuild.2" in message


def test_minor_without_a_table_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        eks_config,
        "CORE_ADDON_VERSIONS",
        {k: v for k, v in versions.CORE_ADDON_VERSIONS.items() if k != "1.33"},
    )
    with pytest.raises(ConfigError) as raised:
        parse(dev_raw("1.33"))
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("config/dev.yaml: eks.kubernetes_version = '1.33': allowed: ")
    assert "CORE_ADDON_VERSIONS" in message


NET = "203.0.113.0/24"


def _prod(**eks: Any) -> dict[str, Any]:
    raw = env_raw("dev")
    raw["environment"] = "prod"
    raw["eks"].pop("public_access_cidrs", None)
    raw["eks"].update(eks)
    return raw


def test_prod_refuses_a_public_endpoint_without_the_networks_it_admits() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(_prod(endpoint_access="public_and_private"), "config/prod.yaml", "prod")
    assert str(err.value) == (
        "config/prod.yaml: eks.public_access_cidrs = []: allowed: the CIDRs that may reach the "
        "public API endpoint (e.g. [203.0.113.0/24]), required in prod while "
        "eks.endpoint_access is public_and_private; fix: list the networks that deploy and run "
        "kubectl in eks.public_access_cidrs, or set eks.endpoint_access to private"
    )


@pytest.mark.parametrize(
    ("env", "eks"),
    [
        ("prod", {"endpoint_access": "public_and_private", "public_access_cidrs": [NET]}),
        ("prod", {"endpoint_access": "private"}),
        ("dev", {"endpoint_access": "public_and_private"}),  # open, with a synth warning
    ],
)
def test_the_public_cidrs_are_required_only_for_a_public_prod_endpoint(
    env: str, eks: dict[str, Any]
) -> None:
    raw = {**_prod(**eks), "environment": env}
    assert (
        parse_config(raw, f"config/{env}.yaml", env).eks.endpoint_access == eks["endpoint_access"]
    )


@pytest.mark.parametrize("block", ["10.20.0.0/16", "192.168.1.0/24", "100.64.0.0/10", "8.0.0.0/5"])
def test_a_private_or_reserved_public_cidr_is_refused_in_one_line(block: str) -> None:
    """A client reaches the public endpoint from its public address: a private block (a VPN's
    inside range, say) would admit nobody, and EKS refuses reserved blocks in publicAccessCidrs."""
    raw = _prod(endpoint_access="public_and_private", public_access_cidrs=[NET, block])
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "config/prod.yaml", "prod")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"config/prod.yaml: eks.public_access_cidrs = '{block}': allowed: ")
    assert "fix: " in message


def test_any_address_stays_the_explicit_open_setting() -> None:
    raw = _prod(endpoint_access="public_and_private", public_access_cidrs=["0.0.0.0/0"])
    assert parse_config(raw, "config/prod.yaml", "prod").eks.public_cidrs == ("0.0.0.0/0",)
