"""Preflight rows about the account: the zones it maps the config's AZ names and id to, and
whether each endpoint's SageMaker endpoint name is free.

Double: moto (EC2 DescribeAvailabilityZones answers from its recorded zone table; SageMaker
endpoints and CloudFormation stacks are created in it as a deploy would leave them), so the
requests and answers follow the service models.
"""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from infra.config import AppConfig
from scripts.lib.clients import Clients
from scripts.lib.preflight.account import (
    check_endpoint_names,
    check_renamed_endpoints,
    check_zones,
)
from tests.support.config import make_cfg


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


def _clients(region: str = "us-west-2") -> Clients:
    return Clients(region, aws_factory=lambda s: boto3.client(s, region_name=region))


def _endpoint(name: str, region: str = "us-west-2") -> None:
    sm = boto3.client("sagemaker", region_name=region)
    role = "arn:aws:iam::123456789012:role/sagemaker"
    image = "123456789012.dkr.ecr.us-west-2.amazonaws.com/m:1"
    sm.create_model(ModelName=name, ExecutionRoleArn=role, PrimaryContainer={"Image": image})
    variant = {
        "VariantName": "v",
        "ModelName": name,
        "InitialInstanceCount": 1,
        "InstanceType": "ml.g4dn.xlarge",
    }
    sm.create_endpoint_config(EndpointConfigName=name, ProductionVariants=[variant])
    sm.create_endpoint(EndpointName=name, EndpointConfigName=name)


def _stack(name: str) -> None:
    template = '{"Resources": {"T": {"Type": "AWS::SNS::Topic"}}}'
    boto3.client("cloudformation", region_name="us-west-2").create_stack(
        StackName=name, TemplateBody=template
    )


def test_a_free_name_passes(aws: None) -> None:
    (row,) = check_endpoint_names(_clients(), make_cfg())
    assert (row.stage, row.status) == ("SageMaker endpoint dev-qwen3-8b", "pass")


def test_a_name_another_deploy_holds_fails_with_the_fix(aws: None) -> None:
    _endpoint("dev-qwen3-8b")
    (row,) = check_endpoint_names(_clients(), make_cfg())
    assert row.status == "fail"
    assert "kvcache.endpoints.0.name" in (row.fix or "")
    assert "delete-endpoint --endpoint-name dev-qwen3-8b" in (row.fix or "")


def test_a_name_this_environment_deployed_passes(aws: None) -> None:
    cfg = make_cfg()
    _endpoint("dev-qwen3-8b")
    _stack(f"{cfg.stack_prefix}-endpoints")
    (row,) = check_endpoint_names(_clients(), cfg)
    assert row.status == "pass"


def test_another_environments_endpoint_of_the_same_name_does_not_collide(aws: None) -> None:
    _endpoint("test-qwen3-8b")
    (row,) = check_endpoint_names(_clients(), make_cfg())
    assert row.status == "pass"


def test_an_endpoint_deployed_under_its_name_before_the_rename_is_named_with_the_upgrade_step(
    aws: None,
) -> None:
    """This environment deployed its endpoint when SageMaker names did not carry the
    environment (``qwen3-8b``): the next deploy gives it ``dev-qwen3-8b``, and callers of the
    old name lose it. Preflight says so before the deploy, and names the one left over after."""
    cfg = make_cfg()
    _stack(f"{cfg.stack_prefix}-endpoints")
    _endpoint("qwen3-8b")
    (row,) = check_renamed_endpoints(_clients(), cfg)
    assert (row.stage, row.status) == ("SageMaker endpoint qwen3-8b (before dev-qwen3-8b)", "warn")
    assert "renames it to dev-qwen3-8b" in row.detail and "dev-qwen3-8b" in (row.fix or "")
    _endpoint("dev-qwen3-8b")  # deployed: the operator serves the new name
    (row,) = check_renamed_endpoints(_clients(), cfg)
    assert row.status == "warn" and "left over" in row.detail
    assert "delete-endpoint --endpoint-name qwen3-8b" in (row.fix or "")


def test_an_old_name_is_not_this_environments_without_its_endpoints_stack(aws: None) -> None:
    """Without this environment's endpoints stack, an endpoint under the bare name is another
    deploy's: nothing to rename. With the stack and no such endpoint: nothing to say."""
    cfg = make_cfg()
    _endpoint("qwen3-8b")
    assert check_renamed_endpoints(_clients(), cfg) == []
    boto3.client("sagemaker", region_name="us-west-2").delete_endpoint(EndpointName="qwen3-8b")
    _stack(f"{cfg.stack_prefix}-endpoints")
    assert check_renamed_endpoints(_clients(), cfg) == []


def _zones(cfg: AppConfig, az_id: str, names: tuple[str, str]) -> AppConfig:
    """``cfg`` in zones the published table allows but an account may lack."""
    subnet = cfg.network.hyperpod_subnet.model_copy(update={"az_id": az_id})
    network = cfg.network.model_copy(
        update={"hyperpod_subnet": subnet, "availability_zones": names}
    )
    return cfg.model_copy(update={"network": network})


def test_the_configs_zones_in_the_account_pass(aws: None) -> None:
    assert check_zones(_clients(), make_cfg()).status == "pass"


def test_an_az_name_this_account_does_not_map_fails(aws: None) -> None:
    """us-west-1 maps names per account: this one (moto's) has a and b, not c."""
    west1 = {
        "hyperpod_subnet": {"az_id": "usw1-az1"},
        "availability_zones": ["us-west-1a", "us-west-1b"],
    }
    cfg = _zones(
        make_cfg(region="us-west-1", network=west1), "usw1-az1", ("us-west-1a", "us-west-1c")
    )
    row = check_zones(_clients("us-west-1"), cfg)
    assert row.status == "fail" and "us-west-1c" in row.detail
    assert "us-west-1a, us-west-1b" in (row.fix or "")


def test_an_az_id_the_account_lacks_fails(aws: None) -> None:
    cfg = _zones(make_cfg(), "usw2-az7", ("us-west-2a", "us-west-2b"))
    row = check_zones(_clients(), cfg)
    assert row.status == "fail" and "usw2-az1, usw2-az2, usw2-az3, usw2-az4" in (row.fix or "")
