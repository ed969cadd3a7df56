"""Time in the network model: the daily cycle of demand, and when the fault began.

Demand follows a daily profile by area (:data:`PROFILES`: relative to the day's peak hour,
from operators' published busy-hour shapes: a commuter city peaks in the evening with a
morning shoulder, an office/mall building is busy in opening hours, a stadium is quiet until
the event on the episode's day), a little lower at weekends where people commute. Every value
of a KPI series is the model's at that moment's demand: coupled KPIs (load, throughput,
latency, SINR through the neighbours' load) move together through the day.

The fault begins at :attr:`Timeline.onset`, inside the window the engineer reports (the first
complaints came after it); before it, the cells ran with their normal configuration.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np

#: Relative demand per hour of the day (0-23), 1.0 at the busiest hour.
PROFILES: dict[str, tuple[float, ...]] = {
    "urban": (
        0.30, 0.20, 0.15, 0.12, 0.12, 0.16, 0.30, 0.55, 0.75, 0.78, 0.76, 0.78,
        0.82, 0.80, 0.78, 0.80, 0.85, 0.92, 0.98, 1.00, 0.96, 0.85, 0.65, 0.45,
    ),
    "suburban": (
        0.25, 0.16, 0.12, 0.10, 0.10, 0.14, 0.28, 0.48, 0.55, 0.55, 0.55, 0.58,
        0.62, 0.60, 0.58, 0.62, 0.72, 0.85, 0.95, 1.00, 0.98, 0.88, 0.62, 0.40,
    ),
    "rural": (
        0.25, 0.18, 0.14, 0.12, 0.12, 0.18, 0.35, 0.55, 0.62, 0.65, 0.66, 0.68,
        0.70, 0.68, 0.66, 0.68, 0.74, 0.84, 0.94, 1.00, 0.95, 0.82, 0.58, 0.38,
    ),
    "indoor": (
        0.06, 0.05, 0.05, 0.05, 0.05, 0.06, 0.10, 0.25, 0.50, 0.70, 0.82, 0.90,
        0.96, 0.94, 0.88, 0.86, 0.88, 0.94, 1.00, 0.98, 0.90, 0.70, 0.35, 0.12,
    ),
    "stadium": (
        0.10, 0.08, 0.06, 0.05, 0.05, 0.06, 0.10, 0.16, 0.20, 0.22, 0.22, 0.24,
        0.26, 0.26, 0.25, 0.26, 0.30, 0.36, 0.40, 0.42, 0.40, 0.34, 0.25, 0.16,
    ),
}  # fmt: skip
#: On the event day a stadium fills from 17:00 to 23:00: demand at each of those hours.
EVENT_HOURS = {17: 0.55, 18: 0.80, 19: 0.95, 20: 1.00, 21: 0.98, 22: 0.75, 23: 0.40}
#: Demand at weekends relative to weekdays, per area.
WEEKEND = {"urban": 0.85, "suburban": 1.0, "rural": 0.95, "indoor": 1.1, "stadium": 1.0}


def _hourly(area: str, moment: np.datetime64, event_day: np.datetime64 | None) -> float:
    day = moment.astype("datetime64[D]")
    hour = int((moment - day).astype("timedelta64[h]").astype(int))
    value = PROFILES[area][hour]
    if event_day is not None and day == event_day and hour in EVENT_HOURS:
        value = EVENT_HOURS[hour]
    weekday = int((day.astype(int) + 3) % 7)  # 1970-01-01 was a Thursday (3, Monday = 0)
    return value * (WEEKEND[area] if weekday >= 5 else 1.0)


def demand_at(area: str, moments: np.ndarray, event_day: np.datetime64 | None) -> np.ndarray:
    """Relative demand at each moment (``datetime64``), linear between hour centres."""
    seconds = moments.astype("datetime64[s]").astype(np.int64) - 1800  # values hold mid-hour
    hours = seconds // 3600
    frac = (seconds - hours * 3600) / 3600.0
    unique, inverse = np.unique(np.concatenate([hours, hours + 1]), return_inverse=True)
    values = np.array(
        [_hourly(area, np.datetime64(int(h) * 3600, "s"), event_day) for h in unique.tolist()]
    )[inverse]
    low, high = values[: len(hours)], values[len(hours) :]
    return low + (high - low) * frac


@dataclass(frozen=True)
class Timeline:
    """The episode's clock: the time of the report, when the fault began, and the demand
    profile that scales every user's traffic (1.0 at the time of the report)."""

    area: str
    now: dt.datetime
    onset: dt.datetime
    event_day: bool  # a stadium's event is on the day of the report

    def _np(self, moment: dt.datetime) -> np.datetime64:
        return np.datetime64(moment.replace(tzinfo=None), "s")

    def scale(self, moments: np.ndarray) -> np.ndarray:
        """Each moment's demand relative to the demand at the time of the report."""
        event = self._np(self.now).astype("datetime64[D]") if self.event_day else None
        reference = demand_at(self.area, np.array([self._np(self.now)]), event)[0]
        return demand_at(self.area, moments, event) / reference

    def scale_at(self, moment: dt.datetime) -> float:
        return float(self.scale(np.array([self._np(moment)]))[0])


def draw_onset(now: dt.datetime, window: dt.timedelta, rng: np.random.Generator) -> dt.datetime:
    """When the fault began: 55-90 % of the reported window before the report, on a 5-minute
    boundary (the complaints came after it, inside the window)."""
    back = window * float(rng.uniform(0.55, 0.9))
    onset = now - back
    return onset - dt.timedelta(minutes=onset.minute % 5, seconds=onset.second)
