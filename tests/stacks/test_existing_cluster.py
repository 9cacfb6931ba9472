"""Existing-cluster mode through the whole app: a Quick-Install-shaped cluster behind a private
endpoint (the stack creates the kubectl handler's role and access entry) next to the shared
``existing`` fixture (a kubectl role the team brings, public endpoint).

Double: none; the templates are the real synthesized output (one synth for this module).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.config import (
    QUICK_INSTALL_CLUSTER,
    QUICK_INSTALL_OPERATOR_CONFIGURATION,
    QUICK_INSTALL_PRIVATE,
    QUICK_INSTALL_S3_ROLE,
    all_skip_config,
    quick_install_private_config,
)
from tests.support.synth import Synth, synth

HANDLER_DESCRIPTION = "onEvent handler for EKS kubectl resource provider"


@pytest.fixture(scope="module")
def quick_install(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synth(
        quick_install_private_config(),
        tmp_path_factory.mktemp("quick-install-private"),
        chart_dir=None,
    )


@pytest.fixture(scope="module")
def all_skip(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synth(all_skip_config(), tmp_path_factory.mktemp("all-skip"), chart_dir=None)


def _of_type(resources: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in resources.items() if v["Type"] == type_}


def _kubectl_handler(resources: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    found = [
        (k, v)
        for k, v in _of_type(resources, "AWS::Lambda::Function").items()
        if v["Properties"].get("Description") == HANDLER_DESCRIPTION
    ]
    assert len(found) == 1
    return found[0]


def test_private_endpoint_puts_every_kubectl_function_in_the_subnets(quick_install: Synth) -> None:
    resources = quick_install.template_json("hyperpod")["Resources"]
    functions = {
        k: v
        for k, v in _of_type(resources, "AWS::Lambda::Function").items()
        if k.startswith("KubectlProvider")
    }
    assert len(functions) == 2  # the kubectl handler and the provider framework's onEvent
    for function in functions.values():
        assert function["Properties"]["VpcConfig"] == {
            "SubnetIds": QUICK_INSTALL_PRIVATE["kubectl_subnet_ids"],
            "SecurityGroupIds": [QUICK_INSTALL_PRIVATE["kubectl_security_group_id"]],
        }


def test_the_stack_creates_the_handler_role_with_what_the_handler_needs(
    quick_install: Synth,
) -> None:
    resources = quick_install.template_json("hyperpod")["Resources"]
    _, handler = _kubectl_handler(resources)
    role_id = handler["Properties"]["Role"]["Fn::GetAtt"][0]
    role = resources[role_id]
    assert role["Type"] == "AWS::IAM::Role"
    (trust,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "lambda.amazonaws.com"}
    managed = str(role["Properties"]["ManagedPolicyArns"])
    assert "service-role/AWSLambdaBasicExecutionRole" in managed  # logs
    assert "service-role/AWSLambdaVPCAccessExecutionRole" in managed  # ENIs in the subnets
    policies = [
        p
        for p in _of_type(resources, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
    ]
    statements = [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]]
    describe = [s for s in statements if s["Action"] == "eks:DescribeCluster"]
    assert len(describe) == 1
    assert ":cluster/hyperpod-cluster-eks" in str(describe[0]["Resource"])


def test_the_handler_role_gets_a_cluster_admin_entry_removed_on_destroy(
    quick_install: Synth,
) -> None:
    resources = quick_install.template_json("hyperpod")["Resources"]
    _, handler = _kubectl_handler(resources)
    role_id = handler["Properties"]["Role"]["Fn::GetAtt"][0]
    (_, entry), *rest = _of_type(resources, "AWS::EKS::AccessEntry").items()
    assert not rest
    assert entry["Properties"]["ClusterName"] == QUICK_INSTALL_CLUSTER["eks_cluster_name"]
    assert entry["Properties"]["PrincipalArn"] == {"Fn::GetAtt": [role_id, "Arn"]}
    (policy,) = entry["Properties"]["AccessPolicies"]
    assert policy["AccessScope"] == {"Type": "cluster"}
    assert "cluster-access-policy/AmazonEKSClusterAdminPolicy" in str(policy["PolicyArn"])
    assert entry.get("DeletionPolicy", "Delete") == "Delete"


def test_kubectl_calls_wait_for_the_access_entry(quick_install: Synth) -> None:
    """Manifests reach the handler through the framework function's ARN (the service token):
    both functions must depend on the entry, or the first apply can run before it exists (and
    on destroy the entry could go before the last delete)."""
    resources = quick_install.template_json("hyperpod")["Resources"]
    (entry_id,) = _of_type(resources, "AWS::EKS::AccessEntry")
    for key, function in _of_type(resources, "AWS::Lambda::Function").items():
        if key.startswith("KubectlProvider"):
            assert entry_id in function.get("DependsOn", []), key


def test_a_kubectl_role_from_config_is_used_as_it_is(existing: Synth) -> None:
    resources = existing.template_json("hyperpod")["Resources"]
    assert not _of_type(resources, "AWS::EKS::AccessEntry")
    _, handler = _kubectl_handler(resources)
    assert handler["Properties"]["Role"] == "arn:aws:iam::111122223333:role/team-kubectl"
    assert "VpcConfig" not in handler["Properties"]


# --- adopt: take the installed add-on over as it is -------------------------------------------


def _addons(synth_: Synth) -> dict[str, dict[str, Any]]:
    resources = synth_.template_json("addons")["Resources"]
    return {
        v["Properties"]["AddonName"]: v for v in _of_type(resources, "AWS::EKS::Addon").values()
    }


def test_adopted_addons_declare_the_installed_values_only(quick_install: Synth) -> None:
    addons = _addons(quick_install)
    cfg = quick_install.config.addons
    expected = {
        "cert-manager": {},
        "metrics-server": {},
        "aws-fsx-csi-driver": {},
        "aws-mountpoint-s3-csi-driver": {"ServiceAccountRoleArn": QUICK_INSTALL_S3_ROLE},
        "amazon-sagemaker-hyperpod-inference": {
            "ConfigurationValues": QUICK_INSTALL_OPERATOR_CONFIGURATION
        },
    }
    versions = {
        "cert-manager": cfg.cert_manager.version,
        "metrics-server": cfg.metrics_server.version,
        "aws-fsx-csi-driver": cfg.fsx_csi.version,
        "aws-mountpoint-s3-csi-driver": cfg.s3_csi.version,
        "amazon-sagemaker-hyperpod-inference": cfg.inference_operator.version,
    }
    for name, extra in expected.items():
        addon = addons[name]
        assert addon["Properties"] == {
            "AddonName": name,
            "AddonVersion": versions[name],
            "ClusterName": "hyperpod-cluster-eks",
            "ResolveConflicts": "PRESERVE",
            **extra,
        }, name
        # Auto-import needs Retain; destroy leaves the owner's add-on where it was.
        assert addon["DeletionPolicy"] == "Retain"
        assert addon["UpdateReplacePolicy"] == "Retain"


def test_adopting_creates_no_role_bucket_or_association(quick_install: Synth) -> None:
    resources = quick_install.template_json("addons")["Resources"]
    types = {v["Type"] for v in resources.values()}
    assert "AWS::S3::Bucket" not in types  # no TLS bucket of ours
    assert "AWS::EKS::PodIdentityAssociation" not in types
    roles = [
        k
        for k, v in _of_type(resources, "AWS::IAM::Role").items()
        # CDK's CfnJson provider (it renders EBS CSI's trust condition) is not an add-on role.
        if "lambda.amazonaws.com" not in str(v["Properties"]["AssumeRolePolicyDocument"])
    ]
    # The only add-on role is EBS CSI's (on create): nothing for the adopted add-ons.
    assert len(roles) == 1 and roles[0].startswith("AddonsEbsCsiDriver")
    assert addons_on_create(quick_install) == {"aws-ebs-csi-driver"}


def addons_on_create(synth_: Synth) -> set[str]:
    return {k for k, v in _addons(synth_).items() if "DeletionPolicy" not in v}


def test_all_skip_has_no_addons_stack(all_skip: Synth) -> None:
    """With nothing to manage there is no add-ons stack (an empty template cannot deploy), and
    the Kubernetes layer waits only for the HyperPod and nodes stacks."""
    assert all_skip.stacks.addons is None
    assert not (all_skip.outdir / "hyperpod-kvcache-dev-addons.template.json").exists()
    for path in all_skip.outdir.glob("*.template.json"):
        resources = json.loads(path.read_text()).get("Resources", {})
        assert not _of_type(resources, "AWS::EKS::Addon"), path.name
    kvcache = all_skip.stacks.kvcache
    assert sorted(s.stack_name for s in kvcache.dependencies) == [
        "hyperpod-kvcache-dev-hyperpod",
        "hyperpod-kvcache-dev-nodes",
    ]


# --- the instance groups of a cluster the app did not create -----------------------------------
