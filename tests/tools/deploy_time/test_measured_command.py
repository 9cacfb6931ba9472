"""`python -m tools.deploy_time measured`: measured create/delete minutes of the deployed stacks
beside the assumed ones.

Double: botocore's Stubber for CloudFormation DescribeStackEvents, not moto: moto creates and
deletes every resource in the same instant, so its events carry no durations to measure; the
Stubber returns recorded ones (and a stack that does not exist, as the API answers it)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from scripts.lib.environment import stack_names
from tests.support.config import make_cfg
from tools.deploy_time.__main__ import measured

CFG = make_cfg(environment="test")
STACKS = stack_names(CFG)  # teardown order, the order durations reads them in
KVCACHE, ADDONS, HYPERPOD = (f"{CFG.stack_prefix}-{s}" for s in ("kvcache", "addons", "hyperpod"))
T0 = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.UTC)


def _events(stack: str, *rows: tuple[str, str, int, str]) -> dict[str, Any]:
    """(logical id, type, minute, status) rows -> DescribeStackEvents, newest first."""
    events = [
        {
            "StackId": f"arn:aws:cloudformation:us-west-2:111122223333:stack/{stack}/x",
            "EventId": f"{logical}-{minute}-{status}",
            "StackName": stack,
            "Timestamp": T0 + dt.timedelta(minutes=minute),
            "LogicalResourceId": logical,
            "ResourceType": kind,
            "ResourceStatus": status,
        }
        for logical, kind, minute, status in rows
    ]
    return {"StackEvents": sorted(events, key=lambda e: e["Timestamp"], reverse=True)}


@pytest.fixture
def cfn() -> Any:
    client = boto3.client("cloudformation", region_name="us-west-2")
    stub = Stubber(client)
    operator = ("InferenceAddon", "AWS::EKS::Addon", "CREATE")
    addons = _events(
        ADDONS,
        (operator[0], operator[1], 0, "CREATE_IN_PROGRESS"),
        (operator[0], operator[1], 7, "CREATE_COMPLETE"),
    )
    hyperpod = _events(
        HYPERPOD,
        ("Cluster", "AWS::SageMaker::Cluster", 0, "CREATE_IN_PROGRESS"),
        ("Cluster", "AWS::SageMaker::Cluster", 24, "CREATE_COMPLETE"),
        ("Old", "AWS::SQS::Queue", 25, "DELETE_IN_PROGRESS"),
        ("Old", "AWS::SQS::Queue", 26, "DELETE_COMPLETE"),
    )
    for stack in STACKS:
        if stack == KVCACHE:
            stub.add_client_error(
                "describe_stack_events",
                "ValidationError",
                f"Stack [{KVCACHE}] does not exist",
                expected_params={"StackName": KVCACHE},
            )
            continue
        events = {ADDONS: addons, HYPERPOD: hyperpod}.get(stack, {"StackEvents": []})
        stub.add_response("describe_stack_events", events, {"StackName": stack})
    stub.activate()
    yield client
    stub.assert_no_pending_responses()


def _cdk_out(tmp: Path) -> Path:
    """A cloud assembly whose addons stack names the operator add-on (an override applies)."""
    template = {
        "Resources": {
            "InferenceAddon": {
                "Type": "AWS::EKS::Addon",
                "Properties": {"AddonName": "amazon-sagemaker-hyperpod-inference"},
            }
        }
    }
    (tmp / f"{ADDONS}.template.json").write_text(json.dumps(template))
    manifest = {
        "artifacts": {
            ADDONS: {
                "type": "aws:cloudformation:stack",
                "properties": {"templateFile": f"{ADDONS}.template.json"},
            }
        }
    }
    (tmp / "manifest.json").write_text(json.dumps(manifest))
    return tmp


def test_durations_json_with_the_overrides_of_cdk_out(
    cfn: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert measured(CFG, _cdk_out(tmp_path), True, cfn) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {(r["stack"], r["logical_id"], r["phase"]): r for r in data["rows"]}
    assert set(rows) == {
        (ADDONS, "InferenceAddon", "create"),
        (HYPERPOD, "Cluster", "create"),
        (HYPERPOD, "Old", "delete"),
    }
    # The override for the operator add-on (5 min), not the type's 1.5: cdk.out was read.
    operator = rows[(ADDONS, "InferenceAddon", "create")]
    assert (operator["assumed"], operator["measured"]) == (5.0, 7.0)
    cluster = rows[(HYPERPOD, "Cluster", "create")]
    assert (cluster["type"], cluster["assumed"], cluster["measured"]) == (
        "AWS::SageMaker::Cluster",
        20.0,
        24.0,
    )
    assert rows[(HYPERPOD, "Old", "delete")]["measured"] == 1.0
    assert data["missing_stacks"] == [KVCACHE]


def test_durations_table_without_cdk_out_uses_the_type_values(
    cfn: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert measured(CFG, tmp_path, False, cfn) == 0
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if "InferenceAddon" in x]
    assert line.split("\t")[3:] == ["create", "1.5", "7.0", "4.67"]  # no cdk.out: the type's 1.5
    assert f"note: stack {KVCACHE} does not exist" in out
