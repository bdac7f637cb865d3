"""Schedule strings: cron expressions, intervals and the plain-English forms."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from think.scheduling import Cron, Interval, ScheduleError, parse_schedule


def ts(text: str, zone: str = "UTC") -> float:
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone)).timestamp()


def at(timestamp: float, zone: str = "UTC") -> str:
    return datetime.fromtimestamp(timestamp, ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M %a")


@pytest.mark.parametrize(("spec", "after", "expected"), [
    ("*/15 * * * *", "2026-11-29 10:07", "2026-11-29 10:15 Sun"),
    ("0 9 * * mon-fri", "2026-11-27 09:00", "2026-11-30 09:00 Mon"),  # Friday 09:00 → Monday
    ("30 8 1 * *", "2026-11-29 00:00", "2026-12-01 08:30 Tue"),
    ("0 0 29 2 *", "2026-03-01 00:00", "2028-02-29 00:00 Tue"),     # leap day
    ("0 12 13 * 5", "2026-11-29 00:00", "2026-12-04 12:00 Fri"),    # day-of-month OR weekday
    ("5 4 * * 7", "2026-11-29 05:00", "2026-12-06 04:05 Sun"),      # 7 is Sunday too
    ("0 10 * jan,jul *", "2026-11-29 00:00", "2027-01-01 10:00 Fri"),
])
def test_cron_next_run(spec: str, after: str, expected: str) -> None:
    assert at(Cron.parse(spec).next_after(ts(after))) == expected


def test_plain_english_schedules_in_a_time_zone() -> None:
    schedule = parse_schedule("every day at 09:00 in Europe/Prague")
    assert at(schedule.next_after(ts("2026-11-29 09:30", "Europe/Prague")), "Europe/Prague") == "2026-11-30 09:00 Mon"
    weekday = parse_schedule("every weekday at 08:30")
    assert at(weekday.next_after(ts("2026-11-28 12:00"))) == "2026-11-30 08:30 Mon"
    weekly = parse_schedule("every week on monday, friday at 10:00")
    assert at(weekly.next_after(ts("2026-12-01 00:00"))) == "2026-12-04 10:00 Fri"
    assert parse_schedule("every 5 minutes") == Interval(300)
    assert parse_schedule("every hour") == Interval(3600)
    assert Interval(300).next_after(ts("2026-11-29 10:07")) == ts("2026-11-29 10:10")


def test_a_time_skipped_by_daylight_saving_is_skipped() -> None:
    # 02:30 does not exist in Prague on 2027-03-28 (clocks jump from 02:00 to 03:00).
    schedule = Cron.parse("30 2 * * *", timezone="Europe/Prague")
    nxt = schedule.next_after(ts("2027-03-27 03:00", "Europe/Prague"))
    assert at(nxt, "Europe/Prague") == "2027-03-29 02:30 Mon"
    assert datetime.fromtimestamp(nxt, UTC).hour == 0


@pytest.mark.parametrize("bad", [
    "", "* * * *", "61 * * * *", "* 24 * * *", "*/0 * * * *", "0 9 * * funday", "every 0 minutes",
    "every day at 25:00", "every week on someday at 10:00", "every fortnight", "0 9 * * * in Mars/Base",
    "every day at 09:00 in Mars/Base", "5-1 * * * *",
])
def test_bad_schedules_are_clear_errors(bad: str) -> None:
    with pytest.raises(ScheduleError):
        parse_schedule(bad).next_after(0)
