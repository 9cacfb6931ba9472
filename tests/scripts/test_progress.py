"""Long waits show progress: ``scripts.kube.wait_for`` (plain timestamped lines off a terminal, a
rich line on one) and the stack deletion poll of teardown.

Doubles: a fake clock (nothing sleeps) and captured streams; botocore's Stubber for
CloudFormation, because a deletion that stays DELETE_IN_PROGRESS over several polls and then ends
DELETE_FAILED with per-resource reasons cannot be produced by moto (its deletes finish at once)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from scripts.lib.clients import Clients
from scripts.lib.errors import OperationError
from scripts.lib.progress import Clock, Reporter, fmt_duration, wait_for
from scripts.lib.teardown.model import Timeouts
from scripts.lib.teardown.stacks import _delete_stack

START = 1_800_000_000.0  # 2027-01-15T08:00:00Z


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.t

    def wall(self) -> float:
        return START + self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds

    def clock(self) -> Clock:
        return Clock(self.monotonic, self.wall, self.sleep)


def plain(fake: FakeClock, every_s: float = 30.0) -> tuple[Reporter, io.StringIO]:
    stream = io.StringIO()
    return Reporter(stream=stream, clock=fake.clock(), tty=False, every_s=every_s), stream


def states(*items: tuple[bool, str]) -> Any:
    it = iter(items)
    return lambda: next(it)


def test_fmt_duration() -> None:
    assert [fmt_duration(s) for s in (0, 42, 307, 3723)] == ["0s", "42s", "5m07s", "1h02m03s"]


def test_plain_lines_are_timestamped_and_steady() -> None:
    fake = FakeClock()
    rep, stream = plain(fake)
    polls = [(False, "CREATING")] * 7 + [(False, "UPDATING"), (True, "InService")]
    waited = wait_for("the cluster", states(*polls), timeout_s=600, interval_s=10, show=rep)
    lines = stream.getvalue().splitlines()
    assert waited == 80
    assert fake.slept == [10] * 8  # the fake clock paced it: nothing really slept
    assert lines == [
        "2027-01-15T08:00:00Z waiting for the cluster (up to 10m00s)",
        "2027-01-15T08:00:00Z the cluster: CREATING (0s elapsed)",  # first state
        "2027-01-15T08:00:30Z the cluster: CREATING (30s elapsed)",  # steady: every 30 s
        "2027-01-15T08:01:00Z the cluster: CREATING (1m00s elapsed)",
        "2027-01-15T08:01:10Z the cluster: UPDATING (1m10s elapsed)",  # a change shows at once
        "2027-01-15T08:01:20Z the cluster: done after 1m20s",
    ]


def test_a_bool_check_still_reports_elapsed_time() -> None:
    fake = FakeClock()
    rep, stream = plain(fake, every_s=20)
    answers = iter([False, False, False, True])
    wait_for("Pods", lambda: next(answers), timeout_s=60, interval_s=10, show=rep)
    assert "Pods: waiting (20s elapsed)" in stream.getvalue()
    assert stream.getvalue().splitlines()[-1].endswith("Pods: done after 30s")


def test_timeout_names_what_and_the_last_state() -> None:
    fake = FakeClock()
    rep, _ = plain(fake)
    with pytest.raises(OperationError) as caught:
        wait_for("the rollout", lambda: (False, "1/2 Ready"), timeout_s=60, interval_s=25, show=rep)
    assert str(caught.value) == (
        "timed out after 1m00s waiting for the rollout (last state: 1/2 Ready)"
    )
    assert fake.t == 60  # the last sleep is cut to the deadline


def test_terminal_gets_a_rich_line_with_the_state_and_a_final_line() -> None:
    fake = FakeClock()
    stream = io.StringIO()
    rep = Reporter(stream=stream, clock=fake.clock(), tty=True)
    wait_for("the stack", states((False, "DELETE_IN_PROGRESS"), (True, "")), 600, 10, rep)
    text = stream.getvalue()
    assert "\x1b[" in text  # rich drew on the terminal
    assert "the stack: DELETE_IN_PROGRESS" in text
    assert "the stack: done after 10s" in text
    assert "waiting for the stack (up to" not in text  # no plain lines on a terminal


def test_disabled_reporter_writes_nothing() -> None:
    fake = FakeClock()
    stream = io.StringIO()
    rep = Reporter(stream=stream, clock=fake.clock(), enabled=False)
    wait_for("x", states((False, "a"), (True, "")), 60, 10, rep)
    assert stream.getvalue() == ""


def test_default_stream_is_stderr_at_call_time(capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeClock()
    wait_for("x", states((False, "a"), (True, "")), 60, 10, Reporter(clock=fake.clock()))
    captured = capsys.readouterr()
    assert captured.out == ""  # stdout stays free for --json
    assert "x: done after 10s" in captured.err


# ---- stack deletion ---------------------------------------------------------------------------

STACK = "hyperpod-kvcache-test-hyperpod"
STACK_ID = f"arn:aws:cloudformation:us-west-2:111122223333:stack/{STACK}/abc"
T0 = datetime(2027, 1, 15, 8, 0, tzinfo=UTC)


def _stack(status: str, reason: str = "") -> dict[str, Any]:
    stack = {
        "StackName": STACK,
        "StackId": STACK_ID,
        "StackStatus": status,
        "CreationTime": T0 - timedelta(days=1),
    }
    if reason:
        stack["StackStatusReason"] = reason
    return {"Stacks": [stack]}


def _event(
    logical: str, status: str, minute: int, reason: str = "", kind: str = "AWS::EC2::Subnet"
) -> dict[str, Any]:
    event = {
        "StackId": STACK_ID,
        "EventId": f"{logical}-{status}-{minute}",
        "StackName": STACK,
        "LogicalResourceId": logical,
        "PhysicalResourceId": f"{logical.lower()}-0123",
        "ResourceType": kind,
        "Timestamp": T0 + timedelta(minutes=minute),
        "ResourceStatus": status,
    }
    if reason:
        event["ResourceStatusReason"] = reason
    return event


def _stack_event(status: str, minute: int) -> dict[str, Any]:
    return {
        **_event(STACK, status, minute, kind="AWS::CloudFormation::Stack"),
        "PhysicalResourceId": STACK_ID,
    }


@pytest.fixture
def cfn() -> Any:
    client = boto3.client("cloudformation", region_name="us-west-2")
    with Stubber(client) as stub:
        client.stub = stub
        yield client
        stub.assert_no_pending_responses()


def _clients(cfn: Any) -> Clients:
    return Clients("us-west-2", aws_factory=lambda service: cfn)


def test_stack_deletion_shows_status_and_latest_event(cfn: Any) -> None:
    stub = cfn.stub
    stub.add_response("describe_stacks", _stack("CREATE_COMPLETE"), {"StackName": STACK})
    stub.add_response("delete_stack", {}, {"StackName": STACK})
    stub.add_response("describe_stacks", _stack("DELETE_IN_PROGRESS"), {"StackName": STACK_ID})
    events = [_event("Cluster", "DELETE_IN_PROGRESS", 2, kind="AWS::SageMaker::Cluster"),
              _stack_event("DELETE_IN_PROGRESS", 1)]  # fmt: skip
    stub.add_response("describe_stack_events", {"StackEvents": events}, {"StackName": STACK_ID})
    stub.add_response("describe_stacks", _stack("DELETE_COMPLETE"), {"StackName": STACK_ID})
    fake = FakeClock()
    rep, stream = plain(fake)
    steps: list[str] = []
    _delete_stack(_clients(cfn), STACK, Timeouts(stack_s=5400, interval_s=15), steps.append, rep)
    text = stream.getvalue()
    assert f"stack {STACK} to delete: DELETE_IN_PROGRESS; latest: Cluster DELETE_IN_PROGRESS" in (
        text
    )
    assert f"stack {STACK} to delete: done after 15s" in text
    assert steps == [
        f"stack {STACK}: delete requested (was CREATE_COMPLETE)",
        f"stack {STACK}: deleted",
    ]


def test_delete_failed_names_the_resource_and_its_reason(cfn: Any) -> None:
    stub = cfn.stub
    stub.add_response("describe_stacks", _stack("DELETE_FAILED"), {"StackName": STACK})
    stub.add_response("delete_stack", {}, {"StackName": STACK})
    reason = "The subnet 'subnet-0123' has dependencies and cannot be deleted."
    failed = _stack("DELETE_FAILED", "The following resource(s) failed to delete: [Subnet1].")
    stub.add_response("describe_stacks", failed, {"StackName": STACK_ID})
    events = [
        _stack_event("DELETE_FAILED", 40),
        _event("Subnet1", "DELETE_FAILED", 39, reason),
        _event("Subnet1", "DELETE_IN_PROGRESS", 20),
        _stack_event("DELETE_IN_PROGRESS", 10),  # this deletion started here
        _event("OldQueue", "DELETE_FAILED", 5, "from an earlier attempt", "AWS::SQS::Queue"),
    ]
    stub.add_response("describe_stack_events", {"StackEvents": events}, {"StackName": STACK_ID})
    fake = FakeClock()
    rep, _ = plain(fake)
    with pytest.raises(OperationError) as caught:
        _delete_stack(_clients(cfn), STACK, Timeouts(interval_s=15), lambda _: None, rep)
    message = str(caught.value)
    assert message == (
        f"stack {STACK}: DELETE_FAILED; failed to delete Subnet1 (AWS::EC2::Subnet "
        f"subnet1-0123): {reason}. Remove what holds it (or delete it by hand) and re-run teardown"
    )
    assert "OldQueue" not in message


def test_a_stack_already_gone_is_skipped(cfn: Any) -> None:
    cfn.stub.add_client_error(
        "describe_stacks",
        "ValidationError",
        f"Stack with id {STACK} does not exist",
        expected_params={"StackName": STACK},
    )
    steps: list[str] = []
    _delete_stack(_clients(cfn), STACK, Timeouts(), steps.append, False)
    assert steps == [f"stack {STACK}: not found, skipped"]
