"""Schedules read as the service that runs them reads them (pure parsing, no double): the
evictor's CronJob as the API server validates ``spec.schedule`` (robfig/cron's standard parser,
five fields or a descriptor), the nightly recreate as EventBridge reads ``cron(...)`` (six
fields) and ``rate(...)``. A schedule in the other dialect is refused at synth."""

from __future__ import annotations

import pytest

from tests.support.config import SOURCE, refusal

EVICTOR = "kvcache.curvine.evictor.schedule"
NIGHTLY = "pipeline.nightly_schedule"


@pytest.mark.parametrize(
    "schedule",
    [
        "*/5 * * * *",
        "0 3 * * *",
        "0,30 8-18 * * 1-5",
        "0 0 1 jan,jul *",
        "0 0 * * SUN-SAT",
        "15 */2 1-31/2 * ?",
        "5/10 * * * *",
        "59 23 31 12 6",
        "@hourly",
        "@daily",
        "@midnight",
        "@every 10m",
        "@every 1h30m",
    ],
)
def test_a_schedule_the_api_server_takes_is_taken(schedule: str) -> None:
    assert refusal({EVICTOR: schedule}) is None


@pytest.mark.parametrize(
    ("schedule", "why"),
    [
        ("cron(0 3 * * ? *)", "6 fields"),
        ("0 3 * * ? *", "6 fields"),
        ("*/5 * * *", "4 fields"),
        ("60 * * * *", "'60' is outside 0-59, the minute field's range"),
        ("0 24 * * *", "'24' is outside 0-23, the hour field's range"),
        ("0 0 0 * *", "'0' is outside 1-31, the day of month field's range"),
        ("0 0 * 13 *", "'13' is outside 1-12, the month field's range"),
        ("0 0 * * 7", "'7' is outside 0-6, the day of week field's range"),
        ("0 0 L * *", "'L' is not a number in the day of month field"),
        ("0 0 * * MON#2", "'MON#2' is not a number in the day of week field"),
        ("*/0 * * * *", "the step of '*/0' in the minute field is not a positive number"),
        ("5-1 * * * *", "'5-1' in the minute field starts after it ends"),
        ("1-2-3 * * * *", "'1-2-3' in the minute field has more than one '-'"),
        ("CRON_TZ=UTC 0 0 * * *", "a time zone is not written in the schedule"),
        ("@reboot", "'@reboot' is not a descriptor the parser knows"),
        ("@every 10 minutes", "'@every 10 minutes' is not a descriptor the parser knows"),
    ],
)
def test_a_schedule_the_api_server_refuses_is_refused_saying_why(schedule: str, why: str) -> None:
    message = refusal({EVICTOR: schedule})
    assert message is not None and message.startswith(f"{SOURCE}: {EVICTOR} = {schedule!r}: ")
    assert f"(e.g. */5 * * * *), or @hourly, @daily, @every 10m and the like: {why}" in message


def test_an_eventbridge_schedule_for_the_cronjob_is_rewritten_in_five_fields() -> None:
    message = refusal({EVICTOR: "cron(0 3 * * ? *)"})
    assert message is not None and message.endswith(
        "fix: write the five fields without cron( ) and the year, e.g. '0 3 * * *' (check a day "
        f"of week: EventBridge counts 1-7 from Sunday, a CronJob 0-6), in {EVICTOR}"
    )


@pytest.mark.parametrize(
    "schedule",
    [
        "cron(0 3 * * ? *)",
        "cron(0 3 ? * MON-FRI *)",
        "cron(15 10 ? * 6L 2026-2030)",
        "cron(0/15 * * * ? *)",
        "rate(1 day)",
        "rate(12 hours)",
        "rate(5 minutes)",
    ],
)
def test_a_schedule_eventbridge_takes_is_taken(schedule: str) -> None:
    assert refusal({NIGHTLY: schedule}) is None


@pytest.mark.parametrize(
    ("schedule", "why", "fix"),
    [
        ("0 3 * * *", "neither cron(...) nor rate(...)", f"write cron(0 3 * * ? *) in {NIGHTLY}"),
        ("0 3 * * 1", "neither cron(...) nor rate(...)", f"write cron(0 3 ? * 1 *) in {NIGHTLY}"),
        ("cron(0 3 * * *)", "5 fields inside cron( ), not 6", None),
        ("cron(0 3 * * 1 *)", "? in both or neither of day-of-month and day-of-week", None),
        ("cron(0 3 ? * ? *)", "? in both or neither of day-of-month and day-of-week", None),
        ("cron(0 3 * * ? * extra)", "7 fields inside cron( ), not 6", None),
        ("rate(1 days)", "a rate is a positive number and its unit, singular for 1", None),
        ("rate(0 hours)", "a rate is a positive number and its unit, singular for 1", None),
    ],
)
def test_a_schedule_eventbridge_refuses_is_refused_saying_why(
    schedule: str, why: str, fix: str | None
) -> None:
    message = refusal({NIGHTLY: schedule})
    assert message is not None and message.startswith(f"{SOURCE}: {NIGHTLY} = {schedule!r}: ")
    assert f"e.g. cron(0 3 * * ? *), or rate(1 day): {why}; fix: " in message
    if fix is not None:
        assert f"fix: {fix}" in message
