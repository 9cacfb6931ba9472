"""The deploy-time model: exact schedules of a small hand-written assembly, the `needs` record
across stacks, the durations read from CloudFormation events (plain dicts, as boto3 returns
them: no double is needed), and the model over the real synthesized dev environment."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_cdk import CfnResource, Stack
from botocore.stub import Stubber

from infra.cdk.context import new_app
from infra.cdk.deps import NEEDS_METADATA, needs
from tests.support.assembly import write_assembly
from tests.support.synth import Synth
from tools.deploy_time.model import (
    Durations,
    as_deployed,
    floor,
    load_assembly,
    measured_minutes,
    measured_rows,
    report,
)

DURATIONS_TABLE = Durations.load()
DURATIONS = Durations(
    overhead=1.0,
    default={"create": 1.0, "delete": 1.0},
    types={"Slow": {"create": 10.0, "delete": 4.0}},
    overrides=[{"type": "Slow", "property": "Name", "equals": "slower", "create": 20, "delete": 5}],
)


@pytest.fixture
def two_stacks(tmp_path: Path) -> Path:
    """base: A (1 min) and Slow (10 min, independent). top depends on base; its T needs A only
    (through an import of A), which the stack dependency hides from CloudFormation."""
    base = {
        "A": {"Type": "Fast"},
        "S": {"Type": "Slow"},
    }
    top = {
        "T": {"Type": "Fast", "Properties": {"X": {"Fn::ImportValue": "base:A"}}},
        "U": {"Type": "Fast", "DependsOn": "T"},
    }
    out = write_assembly(tmp_path / "out", {"base": ([], base), "top": (["base"], top)})
    template = json.loads((out / "base.template.json").read_text())
    template["Outputs"] = {"A": {"Value": {"Ref": "A"}, "Export": {"Name": "base:A"}}}
    (out / "base.template.json").write_text(json.dumps(template))
    return out


def test_as_deployed_waits_for_whole_stacks_and_pays_each_overhead(two_stacks: Path) -> None:
    schedule = as_deployed(load_assembly(two_stacks), DURATIONS)
    # base: overhead 1, then A [1, 2] and S [1, 11]; top: starts at 11, overhead, T, U.
    assert schedule.stacks == {"base": (0.0, 11.0), "top": (11.0, 14.0)}
    assert schedule.minutes == 14.0
    path = [s.key for s in schedule.critical_path()]
    assert path == [("base", "S"), ("top", "T"), ("top", "U")]


def test_floor_waits_only_for_what_each_resource_needs(two_stacks: Path) -> None:
    schedule = floor(load_assembly(two_stacks), DURATIONS)
    # T needs A (through the import) and not S: [2, 3], then U [3, 4]; S still ends at 11.
    spans = {s.key: (s.start, s.end) for s in schedule.spans}
    assert spans[("top", "T")] == (2.0, 3.0) and spans[("top", "U")] == (3.0, 4.0)
    assert schedule.minutes == 11.0


def test_a_weak_reference_is_a_dependency_too(two_stacks: Path) -> None:
    """Fn::GetStackOutput (CDK's weak cross-stack reference) reads the producer's output."""
    template = json.loads((two_stacks / "top.template.json").read_text())
    template["Resources"]["T"]["Properties"]["X"] = {
        "Fn::GetStackOutput": {"StackName": "base", "OutputName": "A"}
    }
    (two_stacks / "top.template.json").write_text(json.dumps(template))
    assert load_assembly(two_stacks).resources[("top", "T")].needs == {("base", "A")}


def test_deletion_runs_the_graph_backwards(two_stacks: Path) -> None:
    schedule = as_deployed(load_assembly(two_stacks), DURATIONS, "delete")
    # top goes first (U, then T), then base (A and S in parallel; S takes 4).
    assert schedule.stacks == {"top": (0.0, 3.0), "base": (3.0, 8.0)}


def test_overrides_pick_one_resource_of_a_type(tmp_path: Path) -> None:
    out = write_assembly(
        tmp_path, {"s": ([], {"X": {"Type": "Slow", "Properties": {"Name": "slower"}}})}
    )
    assert as_deployed(load_assembly(out), DURATIONS).minutes == 21.0


def test_a_cycle_is_reported_by_name(tmp_path: Path) -> None:
    cyclic = {"A": {"Type": "Fast", "DependsOn": "B"}, "B": {"Type": "Fast", "DependsOn": "A"}}
    out = write_assembly(tmp_path, {"s": ([], cyclic)})
    with pytest.raises(ValueError, match="dependency cycle through s/"):
        floor(load_assembly(out), DURATIONS)


def test_needs_across_stacks_is_recorded_for_the_model(tmp_path: Path) -> None:
    app = new_app(str(tmp_path))  # as app.py makes it: the warnings-only validator off
    first, second = Stack(app, "first"), Stack(app, "second")
    gate = CfnResource(first, "Gate", type="Custom::Gate")
    CfnResource(first, "Other", type="Custom::Other")
    user = CfnResource(second, "User", type="Custom::User")
    needs(user, gate)
    app.synth()
    template = json.loads((tmp_path / "second.template.json").read_text())
    assert template["Resources"]["User"]["Metadata"][NEEDS_METADATA] == [
        {"stack": "first", "logicalId": "Gate"}
    ]
    assembly = load_assembly(tmp_path)
    assert assembly.stacks["second"] == {"first"}
    assert assembly.resources[("second", "User")].needs == {("first", "Gate")}


def test_measured_minutes_pair_in_progress_with_complete() -> None:
    t0 = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.UTC)

    def event(minute: float, logical: str, status: str) -> dict[str, Any]:
        return {
            "Timestamp": t0 + dt.timedelta(minutes=minute),
            "LogicalResourceId": logical,
            "ResourceType": "AWS::EKS::Cluster",
            "ResourceStatus": status,
        }

    events = [  # newest first, as DescribeStackEvents returns them
        event(30, "Cluster", "DELETE_COMPLETE"),
        event(22, "Cluster", "DELETE_IN_PROGRESS"),
        event(12.5, "Cluster", "CREATE_COMPLETE"),
        event(1, "Cluster", "CREATE_IN_PROGRESS"),
        event(0.5, "Cluster", "CREATE_IN_PROGRESS"),  # the first IN_PROGRESS counts
    ]
    assert measured_minutes(events) == {"Cluster": {"create": 12.0, "delete": 8.0}}


def test_model_of_the_dev_environment(dev: Synth, tmp_path: Path) -> None:
    figures = report(dev.outdir, Durations.load(), tmp_path / "gantt.png")
    deploy, destroy = figures["deploy"], figures["destroy"]
    for f in (deploy, destroy):
        assert f["floor_minutes"] <= f["as_deployed_minutes"]
        path = f["critical_path"]
        assert all(a["end"] <= b["start"] + 1e-6 for a, b in itertools.pairwise(path))
    # The HyperPod cluster needs the EKS cluster (through the stack's import of its ARN).
    types = [step["type"] for step in deploy["critical_path"]]
    assert types.index("AWS::EKS::Cluster") < types.index("AWS::SageMaker::Cluster")
    assert (tmp_path / "gantt.png").read_bytes().startswith(b"\x89PNG")


def test_measured_rows_sit_beside_the_assumed_values() -> None:
    """botocore's Stubber, not moto: moto creates every resource in the same instant, so its
    events carry no durations to measure; the Stubber returns recorded ones."""
    t0 = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.UTC)
    client = boto3.client("cloudformation", region_name="us-west-2")
    stub = Stubber(client)
    events = [
        {
            "StackId": "id",
            "EventId": str(i),
            "StackName": "s",
            "Timestamp": t0 + dt.timedelta(minutes=m),
            "LogicalResourceId": "Addon",
            "ResourceType": "AWS::EKS::Addon",
            "ResourceStatus": status,
        }
        for i, (m, status) in enumerate([(6, "CREATE_COMPLETE"), (0, "CREATE_IN_PROGRESS")])
    ]
    stub.add_response("describe_stack_events", {"StackEvents": events}, {"StackName": "s"})
    with stub:
        (row,) = measured_rows(client, ["s"], DURATIONS_TABLE)
    assert (row.logical_id, row.phase, row.measured) == ("Addon", "create", 6.0)
    assert row.assumed == DURATIONS_TABLE.types["AWS::EKS::Addon"]["create"]
    stub.assert_no_pending_responses()
