"""Schedules as values: cron expressions, fixed intervals and the original's plain-English forms.

    parse_schedule("*/15 9-17 * * mon-fri")
    parse_schedule("every 5 minutes")
    parse_schedule("every weekday at 09:00 in Europe/Prague")

`Schedule.next_after(t)` is the first run strictly after `t` (a Unix timestamp), computed in the
schedule's time zone; a wall-clock time that does not exist on a DST change is skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from think.errors import ConfigurationError

_MONTHS = {m: i for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
_DAY_NAMES = {**_DAYS, **{full: _DAYS[full[:3]] for full in
                         ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]}}


class ScheduleError(ConfigurationError):
    """A schedule string that does not parse, with the reason."""


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError(f"unknown time zone {name!r}") from exc


def _field(text: str, low: int, high: int, names: dict[str, int], what: str) -> frozenset[int]:
    values: set[int] = set()
    for item in text.lower().split(","):
        step = 1
        if "/" in item:
            item, _, step_text = item.partition("/")
            if not step_text.isdigit() or int(step_text) == 0:
                raise ScheduleError(f"bad step {step_text!r} in the {what} field")
            step = int(step_text)
        if item == "*":
            start, end = low, high
        elif "-" in item:
            a, _, b = item.partition("-")
            start, end = _value(a, names, what), _value(b, names, what)
        else:
            start = _value(item, names, what)
            end = high if step > 1 else start
        if not (low <= start <= high and low <= end <= high) or start > end:
            raise ScheduleError(f"{item!r} is out of range {low}-{high} in the {what} field")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def _value(text: str, names: dict[str, int], what: str) -> int:
    if text in names:
        return names[text]
    if not text.isdigit():
        raise ScheduleError(f"{text!r} is not a number or a name in the {what} field")
    return int(text)


@dataclass(frozen=True)
class Cron:
    """A five-field cron expression: minute hour day-of-month month day-of-week."""

    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool
    any_weekday: bool
    timezone: str = "UTC"

    @classmethod
    def parse(cls, expression: str, *, timezone: str = "UTC") -> Cron:
        fields = expression.split()
        if len(fields) != 5:
            raise ScheduleError(f"a cron expression has 5 fields (minute hour day month weekday), got {len(fields)}: "
                                f"{expression!r}")
        _zone(timezone)
        weekdays = _field(fields[4], 0, 7, _DAY_NAMES, "weekday")  # 0 and 7 both mean Sunday
        return cls(expression, _field(fields[0], 0, 59, {}, "minute"), _field(fields[1], 0, 23, {}, "hour"),
                   _field(fields[2], 1, 31, {}, "day-of-month"), _field(fields[3], 1, 12, _MONTHS, "month"),
                   frozenset(d % 7 for d in weekdays), fields[2] == "*", fields[4] == "*", timezone)

    def _day_matches(self, day: datetime) -> bool:
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = (day.isoweekday() % 7) in self.weekdays
        if self.any_day and self.any_weekday:
            return True
        if self.any_day:
            return dow
        if self.any_weekday:
            return dom
        return dom or dow  # cron's rule: both restricted means either matches

    def next_after(self, timestamp: float) -> float:
        zone = _zone(self.timezone)
        start = datetime.fromtimestamp(timestamp, zone).replace(second=0, microsecond=0) + timedelta(minutes=1)
        day = start.replace(hour=0, minute=0)
        for _ in range(366 * 8):  # leap-year Feb 29 patterns repeat within 8 years
            if self._day_matches(day):
                for hour in sorted(self.hours):
                    for minute in sorted(self.minutes):
                        local = day.replace(hour=hour, minute=minute)
                        if local < start:
                            continue
                        # Round-trip through UTC: a time skipped by a DST change does not exist.
                        utc = local.astimezone(UTC)
                        if utc.astimezone(zone).replace(tzinfo=None) != local.replace(tzinfo=None):
                            continue
                        return utc.timestamp()
            day = (day + timedelta(days=1)).replace(hour=0, minute=0)
        raise ScheduleError(f"{self.expression!r} never fires")


@dataclass(frozen=True)
class Interval:
    """Every `seconds`, aligned to the Unix epoch (so restarts do not shift it)."""

    seconds: int

    def next_after(self, timestamp: float) -> float:
        return (int(timestamp) // self.seconds + 1) * self.seconds


Schedule = Cron | Interval

_EVERY = re.compile(r"^every\s+(\d+)?\s*(minute|minutes|hour|hours)$")
_AT = re.compile(r"^every\s+(day|weekday|week\s+on\s+([a-z,\s]+?))\s+at\s+(\d{1,2}):(\d{2})$")


def parse_schedule(text: str, *, timezone: str | None = None) -> Schedule:
    """A cron expression, or `every N minutes|hours`, `every day|weekday at HH:MM`,
    `every week on monday,friday at HH:MM`, each optionally followed by `in <IANA zone>`."""
    if not isinstance(text, str) or not text.strip():
        raise ScheduleError("a schedule must be a non-empty string")
    spec = " ".join(text.strip().split())
    zone = timezone or "UTC"
    match = re.search(r"\s+in\s+([A-Za-z_]+(?:/[A-Za-z_+\-0-9]+)*)$", spec)
    if match and spec.lower().startswith("every"):
        zone = match.group(1)
        spec = spec[: match.start()]
    lower = spec.lower()
    if not lower.startswith("every"):
        return Cron.parse(spec, timezone=zone)
    if m := _EVERY.match(lower):
        count = int(m.group(1) or 1)
        if count <= 0:
            raise ScheduleError(f"{text!r}: the interval must be positive")
        return Interval(count * (60 if m.group(2).startswith("minute") else 3600))
    if m := _AT.match(lower):
        hour, minute = int(m.group(3)), int(m.group(4))
        if hour > 23 or minute > 59:
            raise ScheduleError(f"{text!r}: {hour:02d}:{minute:02d} is not a time of day")
        if m.group(1) == "day":
            days = "*"
        elif m.group(1) == "weekday":
            days = "1-5"
        else:
            names = [n.strip() for n in (m.group(2) or "").split(",") if n.strip()]
            unknown = [n for n in names if n not in _DAY_NAMES]
            if unknown or not names:
                raise ScheduleError(f"{text!r}: unknown day name(s) {unknown or names}")
            days = ",".join(str(_DAY_NAMES[n]) for n in names)
        return Cron.parse(f"{minute} {hour} * * {days}", timezone=zone)
    raise ScheduleError(f"{text!r} is not a schedule: use a cron expression or 'every 5 minutes', "
                        "'every day at 09:00 in Europe/Prague', 'every weekday at 08:30', "
                        "'every week on monday,friday at 10:00'")
