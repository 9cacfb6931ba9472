"""Assertions on the synthesized network, EKS and HyperPod stacks of the default environment.

The templates come from one synth per session (tests/conftest.py); nothing here talks to AWS.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match

from infra.cdk.deps import NEEDS_METADATA
from infra.config import load_config, parse_config
from tests.support.synth import Synth, synth


def only(resources: dict[str, dict[str, Any]]) -> dict[str, Any]:
    assert len(resources) == 1, list(resources)
    return next(iter(resources.values()))


# --- network ---------------------------------------------------------------------------------


def test_hyperpod_subnet_is_pinned_by_az_id_on_the_secondary_cidr(dev: Synth) -> None:
    template = dev.template("network")
    template.has_resource_properties(
        "AWS::EC2::VPCCidrBlock", {"CidrBlock": dev.config.network.hyperpod_subnet.cidr}
    )
    template.has_resource_properties(
        "AWS::EC2::Subnet",
        {
            "AvailabilityZoneId": "usw2-az2",
            "CidrBlock": "10.1.0.0/16",
            "MapPublicIpOnLaunch": False,
            "Tags": Match.array_with([{"Key": "kubernetes.io/role/internal-elb", "Value": "1"}]),
        },
    )


def test_private_subnets_in_two_azs_carry_the_internal_elb_tag(dev: Synth) -> None:
    subnets = dev.resources("network", "AWS::EC2::Subnet")
    tagged = [
        s["Properties"]
        for s in subnets.values()
        if {"Key": "kubernetes.io/role/internal-elb", "Value": "1"} in s["Properties"]["Tags"]
        and "AvailabilityZone" in s["Properties"]
    ]
    assert sorted(s["AvailabilityZone"] for s in tagged) == ["us-west-2a", "us-west-2b"]


def test_hyperpod_subnet_routes_through_nat(dev: Synth) -> None:
    routes = dev.resources("egress", "AWS::EC2::Route")
    hyperpod = [r for k, r in routes.items() if k.startswith("EgressHyperPodDefaultRoute")]
    assert only(dict(enumerate(hyperpod)))["Properties"]["NatGatewayId"] == {
        "Ref": "EgressNatGateway15ED35778"
    }


def test_nat_gateways_and_private_default_routes_are_the_egress_stacks(dev: Synth) -> None:
    network = {v["Type"] for v in dev.template_json("network")["Resources"].values()}
    assert not network & {"AWS::EC2::NatGateway", "AWS::EC2::EIP"}
    # The network stack keeps only the public subnets' routes to the internet gateway.
    for route in dev.resources("network", "AWS::EC2::Route").values():
        assert "GatewayId" in route["Properties"] and "NatGatewayId" not in route["Properties"]
    nats = dev.resources("egress", "AWS::EC2::NatGateway")
    assert len(nats) == dev.config.network.nat_gateways
    assert len(dev.resources("egress", "AWS::EC2::EIP")) == len(nats)
    routes = dev.resources("egress", "AWS::EC2::Route").values()
    # Both EKS subnets and the HyperPod subnet, each to the internet through a NAT gateway.
    assert len(routes) == 3
    assert all(r["Properties"]["DestinationCidrBlock"] == "0.0.0.0/0" for r in routes)
    assert all(r["Properties"]["NatGatewayId"]["Ref"] in nats for r in routes)
    # Tagged as ec2.Vpc tags the NAT gateways of its public subnets.
    public = f"{dev.config.stack_prefix}-network/Network/Vpc/publicSubnet1"
    for type_ in ("AWS::EC2::NatGateway", "AWS::EC2::EIP"):
        (first, *_) = dev.resources("egress", type_).values()
        tags = {t["Key"]: t["Value"] for t in first["Properties"]["Tags"]}
        assert (tags["Name"], tags["kubernetes.io/role/elb"]) == (public, "1")


def test_s3_gateway_endpoint_serves_eks_and_hyperpod_route_tables(dev: Synth) -> None:
    # With the NAT gateways in the egress stack, not in the network stack the EKS cluster waits for.
    assert not dev.resources("network", "AWS::EC2::VPCEndpoint")
    endpoint = only(dev.resources("egress", "AWS::EC2::VPCEndpoint"))["Properties"]
    assert endpoint["VpcEndpointType"] == "Gateway"
    tables = json.dumps(endpoint["RouteTableIds"])
    assert "NetworkHyperPodRoutes2C046771" in tables
    assert len(endpoint["RouteTableIds"]) == 3


def test_cluster_security_group_rules_for_efa(dev: Synth) -> None:
    template = dev.template("network")
    self_ref = {"Fn::GetAtt": ["NetworkClusterSecurityGroup6FC78C02", "GroupId"]}
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {"IpProtocol": "-1", "GroupId": self_ref, "SourceSecurityGroupId": self_ref},
    )
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupEgress",
        {"IpProtocol": "-1", "GroupId": self_ref, "DestinationSecurityGroupId": self_ref},
    )
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupEgress",
        {"IpProtocol": "-1", "GroupId": self_ref, "CidrIp": "0.0.0.0/0"},
    )
    sg = only(dev.resources("network", "AWS::EC2::SecurityGroup"))["Properties"]
    https = [r for r in sg["SecurityGroupIngress"] if r["FromPort"] == 443]
    assert sorted(r["CidrIp"] for r in https) == ["10.1.0.0/16", "10.192.0.0/16"]


def test_flow_logs_go_to_a_log_group_with_retention(dev: Synth) -> None:
    template = dev.template("network")
    template.has_resource_properties(
        "AWS::EC2::FlowLog", {"ResourceType": "VPC", "TrafficType": "ALL"}
    )
    template.has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 30})


# --- EKS -------------------------------------------------------------------------------------


def test_eks_cluster_properties(dev: Synth) -> None:
    cluster = only(dev.resources("eks", "AWS::EKS::Cluster"))["Properties"]
    assert cluster["Name"] == "hyperpod-kvcache-dev"
    assert cluster["Version"] == "1.34"
    assert cluster["AccessConfig"]["AuthenticationMode"] == "API"
    assert cluster["BootstrapSelfManagedAddons"] is False
    assert sorted(t["Type"] for t in cluster["Logging"]["ClusterLogging"]["EnabledTypes"]) == [
        "api",
        "audit",
        "authenticator",
        "controllerManager",
        "scheduler",
    ]
    assert cluster["EncryptionConfig"][0]["Resources"] == ["secrets"]
    assert cluster["ResourcesVpcConfig"]["EndpointPublicAccess"] is True
    assert cluster["ResourcesVpcConfig"]["EndpointPrivateAccess"] is True


def test_secrets_key_rotates(dev: Synth) -> None:
    key = only(dev.resources("eks", "AWS::KMS::Key"))["Properties"]
    assert key["EnableKeyRotation"] is True


def test_native_oidc_provider(dev: Synth) -> None:
    provider = only(dev.resources("eks", "AWS::IAM::OIDCProvider"))["Properties"]
    assert provider["ClientIdList"] == ["sts.amazonaws.com"]


def test_core_addons_pinned_and_coredns_waits_for_nodes(dev: Synth) -> None:
    addons = {
        a["Properties"]["AddonName"]: a["Properties"]["AddonVersion"]
        for a in dev.resources("eks", "AWS::EKS::Addon").values()
    }
    versions = dev.config.eks.addons
    assert addons == {
        "vpc-cni": versions.vpc_cni,
        "kube-proxy": versions.kube_proxy,
        "eks-pod-identity-agent": versions.pod_identity_agent,
    }
    coredns = dev.template_json("nodes")["Resources"]["CoreDns"]
    assert coredns["Properties"]["AddonVersion"] == versions.coredns
    # After the node readiness gate, which itself follows the cluster.
    assert coredns["DependsOn"] == ["NodesReadyGate"]


def test_kubectl_provider_uses_the_pinned_layer(dev: Synth) -> None:
    layers = dev.resources("eks", "AWS::Lambda::LayerVersion")
    assert any(
        "kubectl" in (layer["Properties"].get("Description") or "").lower()
        for layer in layers.values()
    )


@pytest.fixture(scope="module")
def variant(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """One synth for the non-default options: existing VPC, private endpoint, admin entries."""
    config = parse_config(
        {
            "account": "111122223333",
            "network": {
                "existing_vpc": {
                    "vpc_id": "vpc-0abc1234def567890",
                    "vpc_cidr": "10.50.0.0/16",
                    "private_subnet_ids": ["subnet-0aaa1111bbb22222a", "subnet-0ccc3333ddd44444b"],
                    "nat_gateway_id": "nat-0eee5555fff66666c",
                }
            },
            "eks": {
                "endpoint_access": "private",
                "admin_principal_arns": ["arn:aws:iam::111122223333:role/PlatformAdmin"],
            },
        },
        "inline",
        "dev",
    )
    return synth(config, tmp_path_factory.mktemp("variant"))


def test_admin_access_entries_from_config(variant: Synth) -> None:
    result = variant
    cluster = only(result.resources("eks", "AWS::EKS::Cluster"))["Properties"]
    assert cluster["ResourcesVpcConfig"]["EndpointPublicAccess"] is False
    entries = [
        e["Properties"]
        for e in result.resources("eks", "AWS::EKS::AccessEntry").values()
        if e["Properties"]["PrincipalArn"] == "arn:aws:iam::111122223333:role/PlatformAdmin"
    ]
    policies = only(dict(enumerate(entries)))["AccessPolicies"]
    assert policies[0]["AccessScope"] == {"Type": "cluster"}
    assert "AmazonEKSClusterAdminPolicy" in str(policies[0]["PolicyArn"])
    handler = [
        f["Properties"]
        for k, f in result.resources("eks", "AWS::Lambda::Function").items()
        if "KubectlProviderHandler" in k
    ]
    assert "VpcConfig" in only(dict(enumerate(handler)))


# --- HyperPod --------------------------------------------------------------------------------


def test_hyperpod_cluster(dev: Synth) -> None:
    cluster = only(dev.resources("hyperpod", "AWS::SageMaker::Cluster"))["Properties"]
    assert cluster["ClusterName"] == "hyperpod-kvcache-dev"
    assert "Fn::ImportValue" in cluster["Orchestrator"]["Eks"]["ClusterArn"]
    assert cluster["NodeRecovery"] == "Automatic"
    assert cluster["NodeProvisioningMode"] == "Continuous"
    assert "TieredStorageConfig" not in cluster
    gpu, system = cluster["InstanceGroups"]
    assert (gpu["InstanceType"], gpu["InstanceCount"]) == ("ml.g6e.4xlarge", 2)
    assert (system["InstanceType"], system["InstanceCount"]) == ("ml.c5.4xlarge", 1)
    assert gpu["InstanceStorageConfigs"] == [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}]
    assert gpu["KubernetesConfig"]["Labels"] == {"hyperpod-kvcache/node-role": "gpu-inference"}
    assert gpu["LifeCycleConfig"]["OnCreate"] == "on_create.sh"
    assert gpu["ThreadsPerCore"] == 1
    assert len(cluster["VpcConfig"]["Subnets"]) == 1


def test_hyperpod_cluster_waits_for_chart_scripts_and_role(dev: Synth) -> None:
    resources = dev.template_json("hyperpod")["Resources"]
    depends = set(resources["HyperPodCluster11759092"]["DependsOn"])
    charts = [k for k, v in resources.items() if v["Type"] == "Custom::AWSCDK-EKS-HelmChart"]
    assert len(charts) == 1
    assert charts[0] in depends
    assert "LifecycleUploadCustomResource42C2FEB7" in depends
    assert "ExecutionRoleCDF74862" in depends
    chart = resources[charts[0]]["Properties"]
    assert (chart["Release"], chart["Namespace"]) == ("hyperpod-dependencies", "kube-system")
    # The add-ons stack owns these; the chart must not install a second copy.
    values = json.loads(chart["Values"])
    assert values["cert-manager"] == {"enabled": False}
    assert values["inferenceOperators"] == {"enabled": False}


def test_tiered_storage_resource_follows_the_cluster(dev: Synth) -> None:
    resources = dev.template_json("tiered-storage")["Resources"]
    tiered = [(k, v) for k, v in resources.items() if v["Type"] == "Custom::HyperPodTieredStorage"]
    assert len(tiered) == 1
    _, resource = tiered[0]
    # In its own stack: the cluster is another stack's, recorded for the deploy-time model.
    needs = {n["logicalId"] for n in resource["Metadata"][NEEDS_METADATA]}
    assert "HyperPodCluster11759092" in needs
    props = resource["Properties"]
    assert props["ClusterName"] == "hyperpod-kvcache-dev"
    assert (props["Mode"], str(props["InstanceMemoryAllocationPercentage"])) == ("Enable", "20")
    assert props["InstanceGroupsHash"]


def test_existing_vpc_gets_the_hyperpod_subnet_and_no_new_vpc(variant: Synth) -> None:
    result = variant
    resources = result.template_json("network")["Resources"]
    types = [r["Type"] for r in resources.values()]
    assert "AWS::EC2::VPC" not in types and "AWS::EC2::NatGateway" not in types
    subnet = next(r for r in resources.values() if r["Type"] == "AWS::EC2::Subnet")
    assert subnet["Properties"]["VpcId"] == "vpc-0abc1234def567890"
    route = next(r for r in resources.values() if r["Type"] == "AWS::EC2::Route")
    assert route["Properties"]["NatGatewayId"] == "nat-0eee5555fff66666c"
    assert "AWS::EC2::FlowLog" in types
    endpoint = next(r for r in resources.values() if r["Type"] == "AWS::EC2::VPCEndpoint")
    assert endpoint["Properties"]["RouteTableIds"] == [{"Ref": "NetworkHyperPodRoutes2C046771"}]
    cluster = only(result.resources("eks", "AWS::EKS::Cluster"))["Properties"]
    assert cluster["ResourcesVpcConfig"]["SubnetIds"] == [
        "subnet-0aaa1111bbb22222a",
        "subnet-0ccc3333ddd44444b",
    ]


def test_lifecycle_bucket_is_private_encrypted_tls_only_and_logged(dev: Synth) -> None:
    buckets = dev.resources("hyperpod", "AWS::S3::Bucket")
    for bucket in buckets.values():
        props = bucket["Properties"]
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }
        assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        assert bucket["DeletionPolicy"] == "Delete"
    logged = [b for b in buckets.values() if "LoggingConfiguration" in b["Properties"]]
    assert len(logged) == 1
    dev.template("hyperpod").has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            }
        },
    )


def test_execution_role_is_scoped(dev: Synth) -> None:
    role = dev.template_json("hyperpod")["Resources"]["ExecutionRoleCDF74862"]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "sagemaker.amazonaws.com"
    }
    assert "AmazonSageMakerClusterInstanceRolePolicy" in str(role["ManagedPolicyArns"])
    policy = dev.template_json("hyperpod")["Resources"]["ExecutionRoleInlineEA84E257"]
    statements = {s.get("Sid"): s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    create = statements["CreateEnisInHyperPodSubnet"]
    assert len(create["Resource"]) == 3
    assert all("*" not in str(r) or "network-interface/*" in str(r) for r in create["Resource"])
    read = statements["ReadLifecycleScripts"]
    assert "LifecycleStorageBucket" in str(read["Resource"])


def test_lifecycle_script_keeps_nvme_for_curvine(repo_root: Any) -> None:
    script = (repo_root / "assets" / "lifecycle" / "on_create.sh").read_text()
    assert "/opt/dlami/nvme/curvine-data" in script or "$NVME_MOUNT/curvine-data" in script
    assert "mkfs" not in script and "rm -rf" not in script
    assert "/opt/sagemaker/containerd" in script or "$EBS_MOUNT/containerd" in script


def test_missing_chart_warns_and_is_left_out(tmp_path_factory: pytest.TempPathFactory) -> None:
    result = synth(
        load_config("dev"),
        tmp_path_factory.mktemp("nochart"),
        chart_dir=tmp_path_factory.mktemp("empty"),
    )
    resources = result.template_json("hyperpod")["Resources"]
    assert not [v for v in resources.values() if v["Type"] == "Custom::AWSCDK-EKS-HelmChart"]
    tree = (result.outdir / "hyperpod-kvcache-dev-hyperpod.metadata.json").read_text()
    assert "HyperPod dependencies chart not found" in tree


# --- existing-cluster mode -------------------------------------------------------------------


def test_existing_cluster_mode_creates_no_cluster(existing: Synth) -> None:
    names = sorted(p.name for p in existing.outdir.glob("*.template.json"))
    assert "hyperpod-kvcache-dev-network.template.json" not in names
    assert "hyperpod-kvcache-dev-eks.template.json" not in names
    resources = existing.template_json("hyperpod")["Resources"]
    types = {v["Type"] for v in resources.values()}
    assert "AWS::SageMaker::Cluster" not in types
    assert "AWS::EKS::Cluster" not in types
    tiered = [
        v
        for v in existing.template_json("tiered-storage")["Resources"].values()
        if v["Type"] == "Custom::HyperPodTieredStorage"
    ]
    assert len(tiered) == 1
