"""Long waits show progress: ``scripts.lib.progress.wait_for`` (plain timestamped lines off a
terminal, a rich line on one).

Doubles: a fake clock (nothing sleeps) and captured streams."""

from __future__ import annotations

import io
from typing import Any

import pytest

from scripts.lib.errors import OperationError
from scripts.lib.progress import CI_VARIABLES, Reporter, Steps, fmt_duration, wait_for
from tests.support.logs import assert_lines_say
from tests.support.progress import FakeClock, plain


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
    # Each line starts with its UTC time and names what it waits for: the limit first, then the
    # first state, the same state every 30 s, a change at once, and the time it took.
    assert_lines_say(
        lines,
        ["2027-01-15T08:00:00Z", "the cluster", "10m00s"],
        ["2027-01-15T08:00:00Z", "the cluster", "CREATING", "0s"],
        ["2027-01-15T08:00:30Z", "the cluster", "CREATING", "30s"],
        ["2027-01-15T08:01:00Z", "the cluster", "CREATING", "1m00s"],
        ["2027-01-15T08:01:10Z", "the cluster", "UPDATING", "1m10s"],
        ["2027-01-15T08:01:20Z", "the cluster", "done", "1m20s"],
    )
    assert all(line.startswith("2027-01-15T") for line in lines)


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


class _Terminal(io.StringIO):
    """A stream that says it is a terminal, as a CI runner's pseudo-terminal may."""

    def isatty(self) -> bool:
        return True


def _steps_output(fake: FakeClock, stream: io.StringIO) -> str:
    rep = Reporter(stream=stream, clock=fake.clock(), every_s=30.0)
    with Steps("bench compare", 4, show=rep) as steps:
        steps.phase("sweep on curvine")
        for i in range(4):
            fake.t += 20
            steps.advance(f"request {i}")
    return stream.getvalue()


def test_steps_on_a_terminal_draw_a_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in CI_VARIABLES:
        monkeypatch.delenv(key, raising=False)
    out = _steps_output(FakeClock(), _Terminal())
    assert "\x1b[" in out  # the bar's redraws
    assert out.rstrip().endswith("bench compare: 4/4 done")


@pytest.mark.parametrize("variable", CI_VARIABLES)
def test_steps_in_ci_print_plain_paced_lines_even_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    for key in CI_VARIABLES:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv(variable, "1" if variable == "CI" else "hpkv-nightly:1234")
    lines = _steps_output(FakeClock(), _Terminal()).splitlines()
    assert "\x1b[" not in "".join(lines)
    assert [line.split(" ", 1)[1] for line in lines] == [
        "bench compare: 4 steps",
        "bench compare: sweep on curvine (0/4)",
        "bench compare: 2/4 (request 1)",  # 40 s in: the first line after 30 s
        "bench compare: 4/4 (request 3)",  # 80 s: 40 s after the last line
        "bench compare: 4/4 done",
    ]
