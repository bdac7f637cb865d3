"""Durable schedules: run an agent method later, or on a recurring schedule."""

from think.scheduling.cron import Cron, Interval, ScheduleError, parse_schedule
from think.scheduling.schedules import ScheduledTask

__all__ = ["Cron", "Interval", "ScheduleError", "ScheduledTask", "parse_schedule"]
