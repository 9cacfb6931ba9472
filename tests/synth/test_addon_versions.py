"""EKS add-on versions follow the cluster's Kubernetes minor; the VPC CNI enforces NetworkPolicies.

Config rules are checked on the parsed config; the rendered versions on real synth output (the
shared ``dev`` synth for 1.34 and one extra synth of the same environment at 1.33).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from infra import versions
from infra.config import AppConfig, parse_config
from infra.config.errors import ConfigError
from infra.config.loader import CONFIG_DIR
from infra.config.model import EksAddonVersions
from tests.synth_support import Synth, synth

ADDON_KEYS = {
    "vpc-cni": "vpc_cni",
    "kube-proxy": "kube_proxy",
    "coredns": "coredns",
    "eks-pod-identity-agent": "pod_identity_agent",
}


def dev_raw(minor: str, **addons: str) -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load((CONFIG_DIR / "dev.yaml").read_text())
    raw["eks"]["kubernetes_version"] = minor
    if addons:
        raw["eks"]["addons"] = addons
    return raw


def parse(raw: dict[str, Any]) -> AppConfig:
    return parse_config(raw, "config/dev.yaml", "dev")


@pytest.fixture(scope="module")
def minor_133(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synth(parse(dev_raw("1.33")), tmp_path_factory.mktemp("k8s133"))


def rendered_addons(result: Synth) -> dict[str, dict[str, Any]]:
    found = {}
    for suffix in ("eks", "nodes"):
        for logical_id, r in result.template_json(suffix)["Resources"].items():
            if r["Type"] == "AWS::EKS::Addon" and r["Properties"]["AddonName"] in ADDON_KEYS:
                found[r["Properties"]["AddonName"]] = {"id": f"{suffix}/{logical_id}", **r}
    return found


def minor_bound_violations(result: Synth) -> list[str]:
    cluster = next(iter(result.resources("eks", "AWS::EKS::Cluster").values()))
    minor = cluster["Properties"]["Version"]
    table = versions.CORE_ADDON_VERSIONS[minor]
    violations = []
    for name, addon in rendered_addons(result).items():
        version = addon["Properties"]["AddonVersion"]
        if name == "kube-proxy" and versions.addon_minor(version) != minor:
            violations.append(
                f"{addon['id']} (AWS::EKS::Addon kube-proxy) = {version} on a {minor} cluster: "
                "rule: kube-proxy's minor must equal the cluster's"
            )
        expected = getattr(table, ADDON_KEYS[name])
        if version != expected:
            violations.append(
                f"{addon['id']} (AWS::EKS::Addon {name}) = {version}, table for {minor} says "
                f"{expected}: rule: add-on versions come from CORE_ADDON_VERSIONS[{minor!r}]"
            )
    return violations


@pytest.mark.parametrize("mode", ["dev", "minor_133"])
def test_rendered_addon_versions_follow_the_minor(
    mode: str, request: pytest.FixtureRequest
) -> None:
    result: Synth = request.getfixturevalue(mode)
    assert set(rendered_addons(result)) == set(ADDON_KEYS)
    violations = minor_bound_violations(result)
    assert not violations, "\n".join(violations)


def test_vpc_cni_enforces_network_policies(dev: Synth) -> None:
    cni = rendered_addons(dev)["vpc-cni"]["Properties"]
    assert json.loads(cni["ConfigurationValues"]) == {"enableNetworkPolicy": "true"}
    # The network policy agent ships with vpc-cni 1.14.0 and later.
    major, minor_, _ = (int(x) for x in cni["AddonVersion"][1:].split("-")[0].split("."))
    assert (major, minor_) >= (1, 14)


def test_every_supported_minor_has_a_table() -> None:
    assert set(versions.SUPPORTED_KUBERNETES) <= set(versions.CORE_ADDON_VERSIONS)
    for minor, table in versions.CORE_ADDON_VERSIONS.items():
        assert versions.addon_minor(table.kube_proxy) == minor


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
    import infra.config.model as model

    monkeypatch.setattr(
        model,
        "CORE_ADDON_VERSIONS",
        {k: v for k, v in versions.CORE_ADDON_VERSIONS.items() if k != "1.33"},
    )
    with pytest.raises(ConfigError) as raised:
        parse(dev_raw("1.33"))
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("config/dev.yaml: eks.kubernetes_version = '1.33': allowed: ")
    assert "CORE_ADDON_VERSIONS" in message
