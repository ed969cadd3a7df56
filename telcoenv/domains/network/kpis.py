"""The KPI catalogue (units, families, names) and KPI physics: couplings, background values, series.

Sampled blueprint KPIs are the ground truth of an episode. A cell also reports KPI families that
its blueprint does not sample; those *background* values are derived from the sampled ones with
the couplings of the domain reference (SINR drives BLER and throughput, load drives throughput and
latency), so that every tool output tells one coherent story.
"""

from __future__ import annotations

import math
from functools import cache, cached_property
from importlib import resources
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from telcoenv.datafiles import parse_yaml
from telcoenv.domains.network.sampling import Coupling
from telcoenv.errors import CatalogError
from telcoenv.specs import Bilingual, Language

Family = Literal[
    "DL",
    "UL",
    "BLER",
    "RLF",
    "latency",
    "HO",
    "PRB",
    "TA",
    "QoS",
    "RF",
    "beam",
    "backhaul",
    "slice",
    "availability",
    "config",
    "users",
    "coverage",
]


# Units of quantities that are never negative: throughput, times, distances and event rates.
_NON_NEGATIVE_UNITS = frozenset(
    {"Mbps", "ms", "m", "km", "hours", "per_hour", "per_min", "per_5min"}
)


class KPIInfo(BaseModel):
    """How one KPI is stored, quoted and judged."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    family: Family
    unit: str
    scale: float
    decimals: int
    worse: Literal["higher", "lower", "none"]
    healthy: float | None = None  # typical value of a well-running cell, in raw units
    name: Bilingual
    limits: tuple[float | None, float | None] | None = None  # physical [min, max], raw units

    def physical_range(self) -> tuple[float | None, float | None]:
        """The raw values the KPI can take (``None``: unbounded): ``limits`` when the definition
        gives them, else from the unit. A percentage is quoted in [0, 100], so its raw value
        lies in [0, 100 / scale]; throughput, times, distances and rates are never negative.

        >>> kpi_definitions().kpis["PRB_util"].physical_range()
        (0.0, 1.0)
        """
        if self.limits is not None:
            return self.limits
        if self.unit == "percent":
            return 0.0, 100.0 / self.scale
        if self.unit in _NON_NEGATIVE_UNITS:
            return 0.0, None
        return None, None


class KPIDefinitions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    units: dict[str, Bilingual]
    kpis: dict[str, KPIInfo]

    @cached_property
    def storage_digits(self) -> dict[str, int]:
        """Decimals each raw value is stored with, so that quoting it never needs rounding."""
        return {
            name: info.decimals + max(0, round(math.log10(info.scale)))
            for name, info in self.kpis.items()
        }

    def digits(self, name: str) -> int:
        return self.storage_digits[name]

    def quote(self, name: str, value: float, lang: Language) -> str:
        """A value as a person reads it, e.g. ``82%`` or ``7.1 Mbps`` (or its Arabic form)."""
        info = self.kpis[name]
        number = f"{value * info.scale:.{info.decimals}f}"
        unit = self.units[info.unit].in_lang(lang)
        if not unit:
            return number
        return f"{number}{unit}" if unit == "%" else f"{number} {unit}"

    def family(self, family: str) -> list[str]:
        return [name for name, info in self.kpis.items() if info.family == family]


@cache
def kpi_definitions() -> KPIDefinitions:
    """The packaged KPI catalogue (``kpis.yaml`` next to this module), validated once."""
    file = "telcoenv/domains/network/kpis.yaml"
    text = resources.files(__package__).joinpath("kpis.yaml").read_text("utf-8")
    try:
        definitions = KPIDefinitions.model_validate(parse_yaml(text, file))
    except ValidationError as exc:
        first = exc.errors()[0]
        raise CatalogError(file, ".".join(map(str, first["loc"])), first["msg"]) from exc
    for name, info in definitions.kpis.items():
        if info.unit not in definitions.units:
            raise CatalogError(file, f"kpis.{name}.unit", f"unknown unit {info.unit!r}")
        low, high = info.limits or (None, None)
        if low is not None and high is not None and low > high:
            raise CatalogError(file, f"kpis.{name}.limits", f"min ({low:g}) exceeds max ({high:g})")
    return definitions


_THROUGHPUT = ("DL_thr_Mbps", "throughput_p50_mbps", "p50_thr_mbps", "UL_thr_Mbps")
_LOAD = ("PRB_util", "prb_util")
_BLER = ("BLER", "bler")
_DELAY = ("sched_latency_p95_ms", "latency_ms")

#: Domain physics applied to KPIs whose blueprint declares no dependency (see sampling.py).
COUPLINGS: tuple[Coupling, ...] = (
    *((t, "sinr_dB", 1) for t in _THROUGHPUT),
    *((t, load, -1) for t in _THROUGHPUT for load in _LOAD),
    *((b, load, 1) for b in _BLER for load in _LOAD),
    *((d, load, 1) for d in _DELAY for load in _LOAD),
    ("sinr_dB", "rsrq_dB", 1),
    ("rsrq_dB", "rsrp_dBm", 1),
)

_AREA_TA_M = {"urban": 350.0, "suburban": 750.0, "rural": 2100.0, "indoor": 60.0, "stadium": 140.0}
_ROLE_USERS = {"macro": 160.0, "micro": 90.0, "pico": 40.0}


def _first(values: dict[str, float], names: tuple[str, ...], default: float) -> float:
    return next((values[n] for n in names if n in values), default)


def background_kpis(
    sampled: dict[str, float], area: str, role: str, rng: np.random.Generator
) -> dict[str, float]:
    """Coherent values for the KPI families the blueprint does not sample.

    Derived from the sampled KPIs (e.g. BLER from SINR, throughput from SINR and load) with a few
    percent of seeded jitter; a family the blueprint samples is never overridden.
    """
    definitions = kpi_definitions()
    sampled_families = {definitions.kpis[n].family for n in sampled}
    j = rng.uniform(0.97, 1.03, 8)  # one vector draw: this runs for every cell of every episode
    load = _first(sampled, _LOAD, 0.42 * j[0])
    rsrp = sampled.get("rsrp_dBm", (-92.0 if role == "macro" else -88.0) * j[1])
    rsrq = sampled.get("rsrq_dB", min(-6.0, -10.0 + (rsrp + 95.0) * 0.2) * j[2])
    sinr = sampled.get("sinr_dB", max(-5.0, min(25.0, 13.0 + 1.6 * (rsrq + 10.0))) * j[3])
    bler = _first(sampled, _BLER, min(0.3, 0.08 + 0.012 * max(0.0, 4.0 - sinr)))
    spectral = math.log2(1 + 10 ** (sinr / 10))
    throughput = max(0.5, 22.0 * spectral * (1 - load) * (1 - bler) * j[4])
    derived = {
        "PRB_util": load,
        "rsrp_dBm": rsrp,
        "rsrq_dB": rsrq,
        "sinr_dB": sinr,
        "BLER": bler,
        "throughput_p50_mbps": throughput,
        "UL_thr_Mbps": throughput * 0.3,
        "latency_ms": 12.0 + 45.0 * load**4 + 80.0 * max(0.0, bler - 0.1),
        "RLF_rate": 0.004 + 0.002 * max(0.0, -sinr),
        "HO_success": 0.985,
        "ho_fail_rate": 1.5 * j[5],
        "ping_pong_rate": 3.0 * j[6],
        "TA": _AREA_TA_M[area] * j[7],
        "QoS": 0.99,
        "users": _ROLE_USERS[role] * (load / 0.42) * j[4],
        "availability": 99.9,
        "coverage_gap_ratio": 2.0 * j[6],
        "beam_fail_rate": 0.6 * j[7],
        "bfr_events_per_hr": 3.0 * j[5],
    }
    digits = definitions.storage_digits
    return {
        name: round(float(value), digits[name])
        for name, value in derived.items()
        if definitions.kpis[name].family not in sampled_families
    }


def kpi_band(value: float, bounds: tuple[float, float] | None) -> tuple[float, float]:
    """Where a KPI's series may wander: its blueprint range, else a band around the value."""
    if bounds is not None:
        return bounds
    spread = max(abs(value) * 0.08, 0.5 if abs(value) >= 5 else abs(value) * 0.08)
    return value - spread, value + spread


def series_batch(
    values: list[float],
    bounds: list[tuple[float, float]],
    digits: list[int],
    points: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Time series, one row per KPI: row ``i`` has mean ``values[i]`` (up to rounding to
    ``digits[i]``) and every point inside ``bounds[i]``.

    Shape: a random walk, centred on zero, scaled so that no point leaves its band; the walks of
    all KPIs are drawn and shaped in one go.
    """
    walks = np.cumsum(rng.standard_normal((len(values), points)), axis=1)
    walks -= walks.mean(axis=1, keepdims=True)
    peaks = np.abs(walks).max(axis=1)
    peaks[peaks == 0] = 1.0
    centre = np.array(values)
    low, high = np.array(bounds).T
    room = np.maximum(np.minimum(np.minimum(centre - low, high - centre), 0.15 * (high - low)), 0)
    factor = 10.0 ** np.array(digits)[:, None]  # np.round's own method, one factor per row
    raw = centre[:, None] + (room * 0.9 / peaks)[:, None] * walks
    rounded = np.clip(np.rint(raw * factor) / factor, low[:, None], high[:, None])
    # Re-centre after rounding: push the residual onto the point nearest the band's middle.
    sums = rounded.sum(axis=1)
    for i, places in enumerate(digits):
        residual = round(values[i] * points - float(sums[i]), places)
        if residual:
            row = rounded[i]
            index = int(np.argmin(np.abs(row - (low[i] + high[i]) / 2)))
            row[index] = min(max(round(float(row[index]) + residual, places), low[i]), high[i])
    return rounded
