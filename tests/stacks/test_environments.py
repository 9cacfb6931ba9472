"""Every environment file synthesizes, validates and behaves as configured on destroy.

test: everything destroyable and buckets emptied; prod: stateful resources retained and
termination protection on. Each environment is synthesized once per run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

from infra.cdk.validation import templates_in
from infra.config import load_config
from k8s.render import render
from tests.support import background
from tests.support.synth import Synth, synth_once

ENVIRONMENTS = ["test", "prod"]
# Properties that give a resource a fixed physical name (a retained one would collide on
# recreate with "already exists").
NAME_PROPERTIES = {
    "BucketName",
    "LogGroupName",
    "RoleName",
    "FunctionName",
    "TableName",
    "AliasName",
    "Name",
    "ClusterName",
    "QueueName",
    "TopicName",
    "StateMachineName",
    "PolicyName",
    "GroupName",
    "KeyPolicyName",
    "ProjectName",
}


@pytest.fixture(scope="session", params=ENVIRONMENTS)
def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Synth:
    result = synth_once(request.param, load_config(request.param), tmp_path_factory)
    background.lint_soon(result.outdir, result.config.region)
    return result


def all_resources(result: Synth) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for path in templates_in(result.outdir):
        stack = path.name.removesuffix(".template.json")
        for logical_id, resource in result.template_json(
            stack.removeprefix(result.config.stack_prefix + "-")
        )["Resources"].items():
            out.append((stack, logical_id, resource))
    return out


@pytest.mark.background
def test_cfn_lint_has_no_errors(env: Synth) -> None:
    for template in templates_in(env.outdir):
        errors = background.lint_errors(template, env.config.region)
        assert errors == [], f"{template.name}: {errors}"


def test_termination_protection_as_configured(env: Synth) -> None:
    for stack in env.stacks.stacks:
        assert stack.termination_protection is env.config.termination_protection


def test_stateful_resources_follow_the_removal_policy(env: Synth) -> None:
    expected = "Retain" if env.config.retain_stateful_resources else "Delete"
    stateful = {"AWS::S3::Bucket", "AWS::KMS::Key"}
    found = [r for _, _, r in all_resources(env) if r["Type"] in stateful]
    assert found
    for resource in found:
        assert resource.get("DeletionPolicy") == expected, resource["Type"]
    if not env.config.retain_stateful_resources:
        # Buckets are emptied first so the delete succeeds.
        assert any(r["Type"] == "Custom::S3AutoDeleteObjects" for _, _, r in all_resources(env))


def test_no_fixed_name_on_a_retained_resource(env: Synth) -> None:
    for stack, logical_id, resource in all_resources(env):
        if resource.get("DeletionPolicy") != "Retain":
            continue
        named = NAME_PROPERTIES & set(resource.get("Properties", {}))
        assert not named, f"{stack}/{logical_id} is retained but named by {named}"


def test_every_taggable_resource_carries_the_environment_tag(env: Synth) -> None:
    for stack, logical_id, resource in all_resources(env):
        type_ = resource["Type"]
        if type_.startswith("Custom::") or type_ == "AWS::CloudFormation::CustomResource":
            continue
        schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema(env.config.region, type_)
        if "Tags" not in schema.schema.get("properties", {}):
            continue
        tags = resource.get("Properties", {}).get("Tags")
        assert tags, f"{stack}/{logical_id} ({type_}) has no tags"
        values = {t.get("Key"): t.get("Value") for t in tags} if isinstance(tags, list) else tags
        assert values.get("environment") == env.config.environment, f"{stack}/{logical_id}"
        assert values.get("project") == env.config.project, f"{stack}/{logical_id}"


def test_prod_is_private_and_test_is_not(env: Synth) -> None:
    cluster = next(r for _, _, r in all_resources(env) if r["Type"] == "AWS::EKS::Cluster")
    public = cluster["Properties"]["ResourcesVpcConfig"]["EndpointPublicAccess"]
    assert public is (env.config.eks.endpoint_access != "private")


def test_dist_manifests_render_for_every_environment(env: Synth, tmp_path: Path) -> None:
    written = render(env.config.environment, tmp_path, lock_dir=tmp_path / "locks")
    assert written[0].name == "00-namespaces.yaml"


def test_each_eks_subnet_egresses_through_a_nat_gateway_of_the_egress_stack(env: Synth) -> None:
    """One NAT gateway per configured count (prod: two, one per AZ), each EKS subnet's default
    route to the NAT gateway of its own AZ when there is one."""
    nats = env.resources("egress", "AWS::EC2::NatGateway")
    assert len(nats) == env.config.network.nat_gateways
    network = env.template_json("network")
    subnets, outputs = network["Resources"], network["Outputs"]

    def imported(value: dict[str, Any]) -> dict[str, Any]:
        export = value["Fn::ImportValue"].split(":", 1)[1]
        return subnets[outputs[export]["Value"]["Ref"]]

    nat_az = {
        k: imported(n["Properties"]["SubnetId"])["Properties"]["AvailabilityZone"]
        for k, n in nats.items()
    }
    assert len(set(nat_az.values())) == len(nats)
    routes = [
        r["Properties"]
        for k, r in env.resources("egress", "AWS::EC2::Route").items()
        if k.startswith("EgressPrivateSubnet")
    ]
    assert len(routes) == 2
    if len(nats) == 2:
        assert len({r["NatGatewayId"]["Ref"] for r in routes}) == 2
