"""EKS add-on versions follow the cluster's Kubernetes minor; the VPC CNI enforces NetworkPolicies.

The rendered versions on real synth output (the shared ``dev`` synth for 1.34 and one extra synth
of the same environment at 1.33); the config rules behind them are in
tests/infra/config/test_eks.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.config import parse_config
from infra.facts import versions
from tests.support.config import env_raw
from tests.support.synth import Synth, synth

ADDON_KEYS = {
    "vpc-cni": "vpc_cni",
    "kube-proxy": "kube_proxy",
    "coredns": "coredns",
    "eks-pod-identity-agent": "pod_identity_agent",
}


def dev_raw(minor: str) -> dict[str, Any]:
    raw = env_raw()
    raw["eks"]["kubernetes_version"] = minor
    return raw


@pytest.fixture(scope="module")
def minor_133(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    config = parse_config(dev_raw("1.33"), "config/dev.yaml", "dev")
    return synth(config, tmp_path_factory.mktemp("k8s133"))


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
