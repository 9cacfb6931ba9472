"""``preflight`` on an existing cluster: the named EKS and HyperPod clusters exist and match config
(minor, access entries, OIDC provider, instance groups, a brought kubectl role), and each add-on's
mode against what EKS has installed, with the YAML to paste where config must change.

Doubles: moto for STS, IAM (roles, OIDC providers) and EC2
(subnets, route tables, NAT and internet gateways, VPC endpoints: all in moto's EC2);
botocore's Stubber for EKS (moto 5.2 has no ListAddons, DescribeAddon, DescribeAddonVersions,
DescribeClusterVersions or access-entry APIs, so DescribeCluster is stubbed with them) and
SageMaker DescribeCluster (moto's HyperPod model rejects ml.g6e types); a fake tool runner for
kubectl/helm/node."""

from __future__ import annotations

import json

import boto3
import yaml

from tests.support.preflight_existing import (
    OPERATOR_CONFIG,
    REGION,
    S3_ROLE,
    _addons,
    _cfg,
    _eks,
    _oidc,
    _run,
    _sagemaker,
)


def test_unknown_eks_cluster_fails(aws: None) -> None:
    eks, _ = _eks(found=False)
    checks = _run(_cfg(_oidc()), eks, _sagemaker())
    assert checks["EKS cluster"].status == "fail"
    assert "not found" in checks["EKS cluster"].detail


def test_quick_install_all_skip_passes_and_skips_quotas(aws: None) -> None:
    eks, stub = _eks()
    _addons(stub)
    stub.activate()
    addons = {
        k: {"mode": "skip"}
        for k in ("cert_manager", "metrics_server", "fsx_csi", "s3_csi", "inference_operator")
    }
    checks = _run(_cfg(_oidc(), addons=addons), eks, _sagemaker())
    assert checks["quotas"].status == "skip" and checks["AZ offerings"].status == "skip"
    assert not any(k.startswith("quota ml.") for k in checks)
    assert checks["OIDC provider"].status == "pass"
    assert checks["kubectl role"].status == "pass"
    assert checks["add-on aws-ebs-csi-driver"].status == "pass"  # not installed: create
    failed = {k: c for k, c in checks.items() if c.status == "fail"}
    assert not failed
    stub.assert_no_pending_responses()


def test_create_on_an_installed_addon_fails_with_the_yaml_to_paste(aws: None) -> None:
    eks, stub = _eks()
    _addons(stub)
    stub.activate()
    checks = _run(_cfg(_oidc()), eks, _sagemaker())  # every add-on on create
    s3 = checks["add-on aws-mountpoint-s3-csi-driver"]
    assert s3.status == "fail" and "create would fail" in s3.detail
    skip_block, adopt_block = s3.fix.split("(recommended; or take it over as it is:)")
    assert yaml.safe_load(skip_block.removeprefix("paste into config:\n")) == {
        "addons": {"s3_csi": {"mode": "skip"}}
    }
    pasted = yaml.safe_load(adopt_block.strip().removeprefix("paste into config:\n"))
    assert pasted == {
        "addons": {
            "s3_csi": {"mode": "adopt", "version": "v2.7.0-eksbuild.1", "adopted_role_arn": S3_ROLE}
        }
    }


def test_adopt_must_declare_the_installed_configuration(aws: None) -> None:
    eks, stub = _eks()
    _addons(stub)
    stub.activate()
    addons = {
        k: {"mode": "skip"} for k in ("cert_manager", "metrics_server", "fsx_csi", "s3_csi")
    } | {"inference_operator": {"mode": "adopt", "adopted_configuration": '{"other":1}'}}
    checks = _run(_cfg(_oidc(), addons=addons), eks, _sagemaker())
    operator = checks["add-on amazon-sagemaker-hyperpod-inference"]
    assert operator.status == "fail" and "adopted_configuration" in operator.detail
    pasted = yaml.safe_load(operator.fix.removeprefix("paste into config:\n"))
    assert pasted["addons"]["inference_operator"]["adopted_configuration"] == OPERATOR_CONFIG


def test_instance_group_count_mismatch_prints_the_group(aws: None) -> None:
    eks, stub = _eks()
    _addons(stub, {})
    stub.activate()
    checks = _run(_cfg(_oidc()), eks, _sagemaker(gpu_count=4))
    gpu = checks["instance group gpu_group"]
    assert gpu.status == "fail"
    assert yaml.safe_load(gpu.fix.removeprefix("paste into config:\n")) == {
        "hyperpod": {
            "gpu_group": {
                "name": "worker-group-1",
                "instance_type": "ml.g6e.4xlarge",
                "instance_count": 4,
            }
        }
    }
    assert checks["instance group system_group"].status == "pass"


def test_oidc_provider_of_another_cluster_fails(aws: None) -> None:
    other = boto3.client("iam", region_name=REGION).create_open_id_connect_provider(
        Url="https://oidc.eks.us-west-2.amazonaws.com/id/OTHER",
        ClientIDList=["sts.amazonaws.com"],
        ThumbprintList=["b" * 40],
    )["OpenIDConnectProviderArn"]
    eks, stub = _eks()
    _addons(stub, {})
    stub.activate()
    checks = _run(_cfg(other), eks, _sagemaker())
    assert checks["OIDC provider"].status == "fail"


def test_a_brought_kubectl_role_is_checked(aws: None) -> None:
    iam = boto3.client("iam", region_name=REGION)
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "sts:AssumeRole",
                "Principal": {"Service": "ec2.amazonaws.com"},
            }
        ],
    }
    arn = iam.create_role(RoleName="team-kubectl", AssumeRolePolicyDocument=json.dumps(trust))[
        "Role"
    ]["Arn"]
    eks, stub = _eks()
    stub.add_client_error(
        "list_associated_access_policies", "ResourceNotFoundException", http_status_code=404
    )
    _addons(stub, {})
    stub.activate()
    checks = _run(_cfg(_oidc(), existing={"kubectl_role_arn": arn}), eks, _sagemaker())
    assert checks["kubectl role trust"].status == "fail"
    entry = checks["kubectl access entry"]
    assert entry.status == "fail" and "aws eks create-access-entry" in entry.fix


def test_config_map_only_authentication_fails(aws: None) -> None:
    eks, stub = _eks(mode="CONFIG_MAP")
    _addons(stub, {})
    stub.activate()
    checks = _run(_cfg(_oidc()), eks, _sagemaker())
    assert checks["access entries"].status == "fail"


def test_an_addon_to_create_that_eks_does_not_offer_for_the_clusters_minor_fails(
    aws: None,
) -> None:
    eks, stub = _eks()
    _addons(stub, offered={"aws-ebs-csi-driver": ["v1.99.0-eksbuild.1"]})
    stub.activate()
    addons = {
        k: {"mode": "skip"}
        for k in ("cert_manager", "metrics_server", "fsx_csi", "s3_csi", "inference_operator")
    }
    checks = _run(_cfg(_oidc(), addons=addons), eks, _sagemaker())
    stub.assert_no_pending_responses()
    row = checks["aws-ebs-csi-driver v1.54.0-eksbuild.1"]
    assert row.status == "fail" and row.detail.startswith(
        "addons.ebs_csi.version = v1.54.0-eksbuild.1: not offered for Kubernetes 1.34"
    )
    assert row.fix == "set addons.ebs_csi.version to one of v1.99.0-eksbuild.1"
    assert [c for c in checks.values() if c.status == "fail"] == [row]
    assert checks["Kubernetes 1.34"].status == "pass"
