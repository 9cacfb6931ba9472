"""Schedules as the service that runs them reads them, so a schedule in the other dialect is
refused at synth instead of by the API server or EventBridge at deploy.

- A Kubernetes CronJob (``kvcache.curvine.evictor.schedule``): five fields, minute hour
  day-of-month month day-of-week, as the API server validates ``spec.schedule`` (the standard
  parser of robfig/cron v3): each field ``*``, ``?``, a value, a range ``a-b``, any of them with a
  step ``/n``, or a comma-separated list of those; months and weekdays also by their English
  three-letter names; or one of the descriptors ``@yearly``, ``@annually``, ``@monthly``,
  ``@weekly``, ``@daily``, ``@midnight``, ``@hourly`` and ``@every <duration>``. ``TZ=`` and
  ``CRON_TZ=`` are refused (the CronJob's ``timeZone`` field says it).
- An EventBridge schedule (``pipeline.nightly_schedule``): ``cron(...)`` with six fields (the
  last one the year) and ``?`` in exactly one of day-of-month and day-of-week, or
  ``rate(<n> <unit>)``.
"""

from __future__ import annotations

import re

from infra.config.errors import RuleViolation

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
# (field, lowest, highest, names from the lowest on)
_CRON_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _DAYS),
)
_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
# Go's time.ParseDuration: one or more <number><unit>, the unit ns, us, µs, ms, s, m or h.
_GO_DURATION = re.compile(r"(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|ms|s|m|h))+")
KUBERNETES_CRON = (
    "a Kubernetes CronJob schedule: five fields, minute hour day-of-month month day-of-week "
    "(e.g. */5 * * * *), or @hourly, @daily, @every 10m and the like"
)


class _Bad(ValueError):
    pass


def kubernetes_schedule(v: str, field: str) -> str:
    """``v`` as the API server validates a CronJob's ``spec.schedule``; RuleViolation if not."""
    try:
        _parse_standard(v)
    except _Bad as bad:
        raise RuleViolation(f"{KUBERNETES_CRON}: {bad}", _kubernetes_fix(v, field)) from None
    return v


def _kubernetes_fix(v: str, field: str) -> str:
    inner = re.fullmatch(r"\s*cron\((.*)\)\s*", v)
    if inner is not None:
        fields = inner.group(1).split()
        if len(fields) == 6:
            # EventBridge's minute hour day month weekday year, with ? for "any".
            five = " ".join("*" if f == "?" else f for f in fields[:5])
            return (
                f"write the five fields without cron( ) and the year, e.g. {five!r} (check a "
                f"day of week: EventBridge counts 1-7 from Sunday, a CronJob 0-6), in {field}"
            )
    return f"write {field} in five fields, e.g. '*/5 * * * *' for every five minutes"


def _parse_standard(spec: str) -> None:
    if "TZ" in spec:
        raise _Bad("a time zone is not written in the schedule (TZ= or CRON_TZ=)")
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return
        every = spec.removeprefix("@every ")
        if every != spec and _GO_DURATION.fullmatch(every.strip()):
            return
        raise _Bad(f"{spec!r} is not a descriptor the parser knows")
    fields = spec.split()
    if len(fields) != 5:
        raise _Bad(f"{len(fields)} fields")
    for text, (name, lo, hi, names) in zip(fields, _CRON_FIELDS, strict=True):
        for part in text.split(","):
            _range(part, name, lo, hi, names)


def _range(part: str, name: str, lo: int, hi: int, names: tuple[str, ...]) -> None:
    span, *step = part.split("/")
    if len(step) > 1:
        raise _Bad(f"{part!r} in the {name} field has more than one '/'")
    bounds = span.split("-")
    if span in ("*", "?"):
        start, end = lo, hi
    elif len(bounds) > 2:
        raise _Bad(f"{part!r} in the {name} field has more than one '-'")
    else:
        start = _value(bounds[0], name, lo, names)
        end = _value(bounds[1], name, lo, names) if len(bounds) == 2 else start
        if step and len(bounds) == 1:
            end = hi  # n/step runs from n to the field's end
    if step and (not step[0].isdigit() or int(step[0]) == 0):
        raise _Bad(f"the step of {part!r} in the {name} field is not a positive number")
    if start < lo or end > hi:
        raise _Bad(f"{part!r} is outside {lo}-{hi}, the {name} field's range")
    if start > end:
        raise _Bad(f"{part!r} in the {name} field starts after it ends")


def _value(text: str, name: str, lo: int, names: tuple[str, ...]) -> int:
    if text.lower() in names:
        return lo + names.index(text.lower())
    if not text.isdigit():
        raise _Bad(f"{text!r} is not a number in the {name} field")
    return int(text)


# --- EventBridge ----------------------------------------------------------------------------

_EVENTBRIDGE_FIELD = re.compile(r"[0-9A-Za-z*?/,#-]+")
_RATE = re.compile(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)")
EVENTBRIDGE = (
    "an EventBridge schedule: cron(minute hour day-of-month month day-of-week year) with ? in "
    "exactly one of the two day fields, e.g. cron(0 3 * * ? *), or rate(1 day)"
)


def eventbridge_schedule(v: str, field: str) -> str:
    """``v`` as EventBridge reads a rule's ScheduleExpression; RuleViolation if not."""
    rate = _RATE.fullmatch(v)
    if rate is not None:
        value, unit = int(rate.group(1)), rate.group(2)
        if value >= 1 and (value == 1) == (not unit.endswith("s")):
            return v
        raise RuleViolation(
            f"{EVENTBRIDGE}: a rate is a positive number and its unit, singular for 1",
            f"write {field} as e.g. rate(1 day) or rate(12 hours)",
        )
    cron = re.fullmatch(r"cron\((.*)\)", v)
    fields = cron.group(1).split() if cron is not None else []
    why = None
    if cron is None:
        why = "neither cron(...) nor rate(...)"
    elif len(fields) != 6:
        why = f"{len(fields)} fields inside cron( ), not 6"
    elif any(not _EVENTBRIDGE_FIELD.fullmatch(f) for f in fields):
        why = "a field with a character EventBridge does not take"
    elif (fields[2] == "?") == (fields[4] == "?"):
        why = "? in both or neither of day-of-month and day-of-week"
    if why is None:
        return v
    fix = f"write {field} as e.g. cron(0 3 * * ? *) (03:00 UTC every day)"
    if cron is None and len(v.split()) == 5:
        minute, hour, dom, month, dow = v.split()
        if dow in ("*", "?"):
            dow = "?"
        else:  # EventBridge counts weekdays 1-7 from Sunday, a CronJob 0-6
            dom = "?"
        fix = (
            f"write cron({minute} {hour} {dom} {month} {dow} *) in {field} (six fields, ? in "
            "one day field; weekdays count 1-7 from Sunday)"
        )
    raise RuleViolation(f"{EVENTBRIDGE}: {why}", fix)
