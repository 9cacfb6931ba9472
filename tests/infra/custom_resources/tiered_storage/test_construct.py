"""Synthesized template and asset of the Tiered Storage constructs (Provider and resource).

Double: none. A small app of our own, synthesized once for the module: one stack with a real
``CfnCluster`` (created-cluster mode: token name/ARN, dependency on the cluster) and one with
plain strings (existing-cluster mode). AwsSolutions checks (cdk-nag 3) run in the same synth, so
any unacknowledged finding fails the fixture. The bundled asset is read from the cloud assembly
and imported by a bare interpreter (``python -S``: no site-packages) to prove it is self-contained.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk.assertions import Match, Template

from infra.cdk.context import new_app
from infra.cdk.nag import enable_checks
from infra.config.tiered_storage import TieredStorageConfig
from infra.custom_resources.provider import pinned_versions
from infra.custom_resources.tiered_storage.construct import (
    DEADLINE_ENV,
    HANDLER_DEADLINE,
    QUERY_INTERVAL,
    TOTAL_TIMEOUT,
    TieredStorage,
    TieredStorageProvider,
    bundle,
)
from tests.support.synth import Synth as SynthResult

EXISTING_ARN = "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef012345"
ENV = cdk.Environment(account="111122223333", region="us-west-2")


@dataclass
class Synth:
    outdir: Path
    created: Template
    existing: Template
    cluster_logical_id: str


def _cluster(stack: cdk.Stack) -> sagemaker.CfnCluster:
    return sagemaker.CfnCluster(
        stack,
        "Cluster",
        cluster_name="hp-test",
        node_recovery="Automatic",
        instance_groups=[
            sagemaker.CfnCluster.ClusterInstanceGroupProperty(
                instance_group_name="gpu",
                instance_type="ml.g6e.4xlarge",
                instance_count=2,
                execution_role="arn:aws:iam::111122223333:role/hyperpod-nodes",
                life_cycle_config=sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
                    on_create="on_create.sh", source_s3_uri="s3://sagemaker-lifecycle/"
                ),
            )
        ],
    )


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    outdir = tmp_path_factory.mktemp("tiered-storage")
    app = new_app(str(outdir))
    created = cdk.Stack(app, "Created", env=ENV)
    cluster = _cluster(created)
    resource = TieredStorage(
        created,
        "TieredStorage",
        provider=TieredStorageProvider(created, "TieredStorageProvider"),
        # CfnCluster has no ClusterName attribute: the name is the configured string and the
        # ordering comes from the explicit dependency below; the ARN is a token.
        cluster_name=str(cluster.cluster_name),
        cluster_arn=cluster.attr_cluster_arn,
        config=TieredStorageConfig(instance_memory_allocation_percentage=30),
        instance_groups_hash="groups-v1",
        restore_on_delete=False,
    ).resource
    resource.node.add_dependency(cluster)
    existing = cdk.Stack(app, "Existing", env=ENV)
    TieredStorage(
        existing,
        "TieredStorage",
        provider=TieredStorageProvider(existing, "TieredStorageProvider"),
        cluster_name="their-cluster",
        cluster_arn=EXISTING_ARN,
        config=TieredStorageConfig(),
        instance_groups_hash="n/a",
        restore_on_delete=True,
    )
    enable_checks(app)  # the app's own cdk-nag wiring; raises on an unacknowledged finding
    app.synth()
    return Synth(
        outdir=outdir,
        created=Template.from_stack(created),
        existing=Template.from_stack(existing),
        cluster_logical_id=created.resolve(cluster.logical_id),
    )


def _one(template: Template, type_: str) -> dict[str, Any]:
    found: dict[str, dict[str, Any]] = template.find_resources(type_)  # type: ignore[assignment]
    assert len(found) == 1, found
    return next(iter(found.values()))


def _handlers(template: Template) -> dict[str, dict[str, Any]]:
    return template.find_resources(  # type: ignore[return-value]
        "AWS::Lambda::Function",
        {"Properties": {"Handler": Match.string_like_regexp(r"^tiered_storage\.index\.")}},
    )


def test_custom_resource_with_string_properties_depends_on_the_cluster(synth: Synth) -> None:
    resource = _one(synth.created, "Custom::HyperPodTieredStorage")
    assert resource["Properties"] == {
        "ServiceToken": resource["Properties"]["ServiceToken"],
        "ServiceTimeout": str(int(TOTAL_TIMEOUT.to_seconds())),
        "ClusterName": "hp-test",
        "Mode": "Enable",
        "InstanceMemoryAllocationPercentage": "30",
        "InstanceGroupsHash": "groups-v1",
        "RestoreOnDelete": "false",
    }
    assert synth.cluster_logical_id in resource["DependsOn"]
    token = resource["Properties"]["ServiceToken"]["Fn::GetAtt"]
    assert token[1] == "Arn"
    assert synth.created.to_json()["Resources"][token[0]]["Properties"]["Handler"] == (
        "framework.onEvent"
    )


def test_cluster_has_no_tiered_storage_config(synth: Synth) -> None:
    cluster = _one(synth.created, "AWS::SageMaker::Cluster")
    assert "TieredStorageConfig" not in cluster["Properties"]


def test_existing_mode_restores_on_delete(synth: Synth) -> None:
    resource = _one(synth.existing, "Custom::HyperPodTieredStorage")
    assert resource["Properties"]["ClusterName"] == "their-cluster"
    assert resource["Properties"]["RestoreOnDelete"] == "true"
    assert resource["Properties"]["InstanceMemoryAllocationPercentage"] == "20"


@pytest.mark.parametrize(
    ("stack", "arn"),
    [("created", {"Fn::GetAtt": ["CLUSTER", "ClusterArn"]}), ("existing", EXISTING_ARN)],
)
def test_handler_policy_is_scoped_to_the_cluster_arn(synth: Synth, stack: str, arn: Any) -> None:
    template: Template = getattr(synth, stack)
    if isinstance(arn, dict):
        arn = {"Fn::GetAtt": [synth.cluster_logical_id, "ClusterArn"]}
    statements = [
        s
        for policy in template.find_resources("AWS::IAM::Policy").values()
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if any(str(a).startswith("sagemaker:") for a in _list(s["Action"]))
    ]
    assert statements == [
        {
            "Action": ["sagemaker:DescribeCluster", "sagemaker:UpdateCluster"],
            "Effect": "Allow",
            "Resource": arn,
        }
    ]
    # Both handler functions run with the role holding that statement.
    roles = {json.dumps(fn["Properties"]["Role"]) for fn in _handlers(template).values()}
    assert len(roles) == 1
    holder = next(
        p
        for p in template.find_resources("AWS::IAM::Policy").values()
        if statements[0] in p["Properties"]["PolicyDocument"]["Statement"]
    )
    assert [
        json.dumps({"Fn::GetAtt": [r["Ref"], "Arn"]}) for r in holder["Properties"]["Roles"]
    ] == list(roles)


def test_no_pass_role_or_wildcard_sagemaker_action(synth: Synth) -> None:
    text = json.dumps(synth.created.to_json())
    assert "iam:PassRole" not in text
    assert '"sagemaker:*"' not in text


def test_handlers_runtime_timeouts_and_deadline(synth: Synth) -> None:
    handlers = _handlers(synth.created)
    assert sorted(f["Properties"]["Handler"] for f in handlers.values()) == [
        "tiered_storage.index.is_complete",
        "tiered_storage.index.on_event",
    ]
    for fn in handlers.values():
        props = fn["Properties"]
        assert props["Runtime"] in ("python3.12", "python3.13")
        assert props["Timeout"] <= 300
        assert props["Environment"]["Variables"][DEADLINE_ENV] == str(
            int(HANDLER_DEADLINE.to_seconds())
        )
        assert "LogGroup" in props["LoggingConfig"]
    # The handler gives up before CloudFormation's one-hour custom-resource limit.
    assert HANDLER_DEADLINE.to_seconds() < TOTAL_TIMEOUT.to_seconds() <= 3600


def test_provider_polls_within_a_bounded_total_timeout(synth: Synth) -> None:
    machine = _one(synth.created, "AWS::StepFunctions::StateMachine")
    definition = json.loads(_join(machine["Properties"]["DefinitionString"]))
    retry = definition["States"]["framework-isComplete-task"]["Retry"][0]
    assert retry["IntervalSeconds"] == QUERY_INTERVAL.to_seconds()
    assert retry["MaxAttempts"] * retry["IntervalSeconds"] == TOTAL_TIMEOUT.to_seconds()
    assert TOTAL_TIMEOUT.to_seconds() >= 3600
    assert machine["Properties"]["LoggingConfiguration"]["Level"] == "ALL"


def test_every_log_group_has_a_retention(synth: Synth) -> None:
    groups = synth.created.find_resources("AWS::Logs::LogGroup")
    assert len(groups) == 3
    assert all(g["Properties"]["RetentionInDays"] == 30 for g in groups.values())


def _asset_dir(synth: Synth) -> Path:
    keys = {f["Properties"]["Code"]["S3Key"] for f in _handlers(synth.created).values()}
    assert len(keys) == 1  # one bundle shared by on_event and is_complete
    return synth.outdir / f"asset.{keys.pop().removesuffix('.zip')}"


def test_asset_bundles_the_pinned_boto3_and_no_bytecode(synth: Synth) -> None:
    asset = _asset_dir(synth)
    pins = pinned_versions()
    for dist in ("boto3", "botocore"):
        assert (asset / f"{dist}-{pins[dist]}.dist-info" / "METADATA").is_file()
    for package in ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3"):
        assert (asset / package / "__init__.py").is_file(), package
    assert (asset / "six.py").is_file()
    assert (asset / "tiered_storage" / "index.py").is_file()
    # Only the SageMaker model of botocore's service data ships (the handler's only client).
    services = {p.name for p in (asset / "botocore" / "data").iterdir() if p.is_dir()}
    assert services == {"sagemaker"}
    assert not [p for p in asset.rglob("*") if p.name == "__pycache__" or p.suffix == ".pyc"]


def test_asset_imports_without_site_packages(synth: Synth) -> None:
    asset = _asset_dir(synth)
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import botocore, boto3; "
        "import tiered_storage.index as i; from tiered_storage.client import "
        "require_tiered_storage_api as r; "
        "c = boto3.client('sagemaker', region_name='us-west-2', aws_access_key_id='x', "
        "aws_secret_access_key='x'); r(c); print(botocore.__version__, botocore.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", script, str(asset)],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.environ.get("PATH", "")},
    ).stdout.split()
    assert out[0] == pinned_versions()["botocore"]
    assert Path(out[1]).is_relative_to(asset)


def test_bundle_is_deterministic(tmp_path: Path) -> None:
    # AssetHashType.OUTPUT hashes the bundle with this fingerprint: same bytes, same asset hash.
    first, second = tmp_path / "a", tmp_path / "b"
    bundle(first)
    bundle(second)
    assert cdk.FileSystem.fingerprint(str(first)) == cdk.FileSystem.fingerprint(str(second))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _join(value: Any) -> str:
    """Flatten an Fn::Join definition string, replacing intrinsics with a placeholder."""
    if isinstance(value, str):
        return value
    parts = value["Fn::Join"][1]
    return "".join(p if isinstance(p, str) else "X" for p in parts)


@pytest.mark.parametrize("mode", ["dev", "existing"])
def test_the_app_keeps_the_custom_resources_logical_id(
    mode: str, request: pytest.FixtureRequest
) -> None:
    """A new logical ID would replace the resource: CloudFormation creates the new one, then
    deletes the old one, whose Delete on an existing cluster puts back the setting recorded at
    its Create (tests in handler/test_index_delete.py), undoing what the new one enabled. The
    Provider is in the HyperPod stack, the resource (its construct's Default child) and its
    policy in the tiered-storage stack."""
    result: SynthResult = request.getfixturevalue(mode)
    resources = result.template_json("tiered-storage")["Resources"]
    custom = {k for k, v in resources.items() if v["Type"] == "Custom::HyperPodTieredStorage"}
    assert custom == {"TieredStorage"}
    assert resources["TieredStorage"]["Properties"]["RestoreOnDelete"] == (
        "true" if mode == "existing" else "false"
    )
    assert {v["Type"] for v in resources.values()} == {
        "Custom::HyperPodTieredStorage",
        "AWS::IAM::Policy",
    }
