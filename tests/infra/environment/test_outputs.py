"""A deployed stack's outputs are read in the environment's Region, whatever Region the shell
sets: ``make manifests`` run from a shell left on another Region must find the stacks the
environment deployed, and must not take another Region's stack of the same name for them.

Double: moto's CloudFormation, one account with stacks in two Regions."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from infra.config import AppConfig, load_config
from infra.environment.amp_workspace import (
    WORKSPACE_ID_OUTPUT,
    deployed_workspace,
    observability_stack_name,
)
from infra.environment.fsx import (
    DNS_OUTPUT,
    ID_OUTPUT,
    MOUNT_OUTPUT,
    FileSystemUnknown,
    deployed_file_system,
    kvcache_stack_name,
)
from infra.environment.outputs import stack_outputs

SHELL_REGION = "eu-central-1"


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch) -> Iterator[AppConfig]:
    """dev (us-west-2), from a shell whose default Region is another."""
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", SHELL_REGION)
    monkeypatch.setenv("AWS_REGION", SHELL_REGION)
    loaded = load_config("dev")
    assert loaded.region != SHELL_REGION
    with mock_aws():
        yield loaded


def _deploy(region: str, stack: str, outputs: dict[str, str]) -> None:
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {k: {"Value": v} for k, v in outputs.items()},
    }
    boto3.client("cloudformation", region_name=region).create_stack(
        StackName=stack, TemplateBody=json.dumps(template)
    )


def test_the_outputs_are_the_environments_regions_not_the_shells(config: AppConfig) -> None:
    stack = kvcache_stack_name(config)
    _deploy(config.region, stack, {"Where": "environment"})
    _deploy(SHELL_REGION, stack, {"Where": "shell"})
    assert stack_outputs(config, stack, "deploy it") == {"Where": "environment"}


def test_the_file_system_is_found_where_the_environment_deployed_it(config: AppConfig) -> None:
    outputs = {ID_OUTPUT: "fs-0abc", DNS_OUTPUT: "fs-0abc.fsx.example", MOUNT_OUTPUT: "m1"}
    _deploy(config.region, kvcache_stack_name(config), outputs)
    assert deployed_file_system(config).file_system_id == "fs-0abc"


def test_a_stack_of_the_same_name_in_the_shells_region_is_not_the_environments(
    config: AppConfig,
) -> None:
    outputs = {ID_OUTPUT: "fs-0abc", DNS_OUTPUT: "fs-0abc.fsx.example", MOUNT_OUTPUT: "m1"}
    _deploy(SHELL_REGION, kvcache_stack_name(config), outputs)
    with pytest.raises(FileSystemUnknown, match=f"\\({config.region}\\): the stack does not"):
        deployed_file_system(config)


def test_the_workspace_is_addressed_in_the_environments_region(config: AppConfig) -> None:
    """KEDA queries the workspace at its Region's endpoint: the shell's would not know it."""
    _deploy(config.region, observability_stack_name(config), {WORKSPACE_ID_OUTPUT: "ws-0abc"})
    workspace = deployed_workspace(config)
    assert workspace.query_address == (
        f"https://aps-workspaces.{config.region}.amazonaws.com/workspaces/ws-0abc"
    )
