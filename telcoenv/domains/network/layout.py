"""A cluster's physical layout: what the radio model needs of its cells, and its user equipment.

Cells come from the generated network (:mod:`telcoenv.domains.network.topology`: sites, azimuths,
PCIs, configuration); this module adds what a planner knows of each by its role and area
(antenna height and panel, carrier, TR 38.901 scenario) and draws the UEs: where they are (most
in the serving cell's sector, the rest in the neighbours'), indoors or not and how deep. Every
site of the cluster has three sectors; the two the cluster does not report on
(:func:`sibling_sectors`) serve the ground beside and behind their site, and UEs are dropped
there too (:func:`draw_outer_ues`): a cell whose footprint grows (uptilt, offset, steering)
wins users beyond its neighbours that their own sectors served.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from telcoenv.domains.network.radio import Cells, Scenario, UEs

#: TR 38.901 scenario per area and role.
SCENARIO: dict[tuple[str, str], Scenario] = {
    ("urban", "macro"): "UMa",
    ("urban", "micro"): "UMi",
    ("urban", "pico"): "UMi",
    ("suburban", "macro"): "UMa",
    ("suburban", "micro"): "UMi",
    ("suburban", "pico"): "UMi",
    ("rural", "macro"): "RMa",
    ("rural", "micro"): "RMa",
    ("rural", "pico"): "RMa",
    ("indoor", "macro"): "InH",
    ("indoor", "micro"): "InH",
    ("indoor", "pico"): "InH",
    ("stadium", "macro"): "UMi",
    ("stadium", "micro"): "UMi",
    ("stadium", "pico"): "UMi",
}


@dataclass(frozen=True)
class Role:
    """What a cell of a role is: antenna height (m), panel gain (dBi) and vertical beamwidth
    (deg), carrier bandwidth (MHz) and its PRBs at 30 kHz, MIMO layers, mechanical tilt."""

    height_m: float
    gain_dbi: float
    v_beamwidth_deg: float
    bandwidth_mhz: int
    n_prb: int
    layers: int
    mech_tilt_deg: float


ROLES = {
    # 64T64R-class macro panel on a 25 m mast, n78 100 MHz (273 PRB at 30 kHz).
    "macro": Role(25.0, 17.0, 10.0, 100, 273, 4, 2.0),
    # Street-level micro, n78 40 MHz (106 PRB).
    "micro": Role(10.0, 12.0, 15.0, 40, 106, 2, 0.0),
    # Ceiling or lamp-post pico, n78 20 MHz (51 PRB).
    "pico": Role(4.0, 6.0, 30.0, 20, 51, 2, 0.0),
}
#: Rural macros sit higher (TR 38.901 RMa: 35 m).
RURAL_MACRO_HEIGHT_M = 35.0
CARRIER_GHZ = 3.5
SCS_KHZ = 30.0
#: Share of UEs indoors, per area.
INDOOR_SHARE = {"urban": 0.75, "suburban": 0.6, "rural": 0.4, "indoor": 1.0, "stadium": 0.15}
#: How far from its site a cell serves, per area and role (the UE drop radius), m.
SERVICE_RADIUS_M = {
    "urban": {"macro": 450.0, "micro": 180.0, "pico": 60.0},
    "suburban": {"macro": 900.0, "micro": 300.0, "pico": 80.0},
    "rural": {"macro": 3500.0, "micro": 800.0, "pico": 120.0},
    "indoor": {"macro": 80.0, "micro": 50.0, "pico": 30.0},
    "stadium": {"macro": 250.0, "micro": 120.0, "pico": 50.0},
}


def role_of(role: str) -> Role:
    return ROLES[role]


def cells_of(
    area: str,
    role: str,
    positions_m: Sequence[tuple[float, float]],
    azimuths_deg: Sequence[float],
    pcis: Sequence[int],
    configs: Sequence[Mapping[str, Any]],
    active: Sequence[bool],
) -> Cells:
    """The radio model's view of a cluster's cells (the serving cell first)."""
    spec = ROLES[role]
    n = len(positions_m)
    height = RURAL_MACRO_HEIGHT_M if (area, role) == ("rural", "macro") else spec.height_m
    xy = np.array(positions_m, dtype=float).reshape(n, 2)

    def column(name: str) -> np.ndarray:
        return np.array([float(c[name]) for c in configs])

    return Cells(
        x=xy[:, 0],
        y=xy[:, 1],
        height_m=np.full(n, height),
        azimuth_deg=np.array(azimuths_deg, dtype=float),
        mech_tilt_deg=np.full(n, spec.mech_tilt_deg),
        tilt_deg=column("tilt_deg"),
        beam_offset_deg=column("beam_azimuth_offset_deg"),
        tx_power_dbm=column("tx_power_dbm"),
        fc_ghz=np.full(n, CARRIER_GHZ),
        n_prb=np.full(n, float(spec.n_prb)),
        scs_khz=np.full(n, SCS_KHZ),
        v_beamwidth_deg=np.full(n, spec.v_beamwidth_deg),
        max_gain_dbi=np.full(n, spec.gain_dbi),
        pci=np.array(pcis, dtype=int),
        active=np.array(active, dtype=bool),
        scenario=SCENARIO[(area, role)],
    )


def draw_ues(
    area: str,
    role: str,
    cells: Cells,
    rng: np.random.Generator,
    count: int = 240,
    own_share: float = 0.6,
    start: int = 1,
) -> tuple[UEs, np.ndarray]:
    """``count`` UEs and the cell whose sector each was dropped in (its home): ``own_share`` of
    them in the serving cell's sector, the rest spread over the neighbours' sectors; in a
    sector, uniform in area over a 120° wedge around the cell's azimuth out to its service
    radius. Indoors with the area's share, then at ``d2D_in`` the smaller of two U(0, 25 m)
    draws (U(0, 10 m) rural) and on a floor 1-4 (urban high-rise: h_UT 1.5 + 3 (floor - 1))."""
    radius = SERVICE_RADIUS_M[area][role]
    own = round(count * own_share)
    home = np.concatenate(
        [np.zeros(own, dtype=int), rng.integers(start, max(cells.count, 2), count - own)]
    )
    if cells.count == 1:
        home[:] = 0
    # Uniform over the wedge's area (sqrt for the radius), not too close to the mast.
    r = radius * np.sqrt(rng.uniform(0.02, 1.0, count))
    bearing = np.radians(cells.azimuth_deg[home] + rng.uniform(-60.0, 60.0, count))
    x = cells.x[home] + r * np.sin(bearing)
    y = cells.y[home] + r * np.cos(bearing)
    indoor = rng.random(count) < INDOOR_SHARE[area]
    depth_max = 10.0 if area == "rural" else 25.0
    depth = np.minimum(rng.uniform(0, depth_max, count), rng.uniform(0, depth_max, count))
    floors = np.where(indoor & (area == "urban"), rng.integers(1, 5, count), 1)
    height = 1.5 + 3.0 * (floors - 1)
    ues = UEs(
        x=x,
        y=y,
        height_m=height.astype(float),
        indoor=indoor,
        indoor_depth_m=np.where(indoor, depth, 0.0),
    )
    return ues, home


#: UEs dropped in the sites' other sectors, beyond the cluster's own (:func:`draw_outer_ues`).
OUTER_UE_COUNT = 96


def sibling_sectors(cells: Cells) -> Cells:
    """Each site's two other sectors (``2 n`` cells for ``n`` one-sector sites, in site order):
    the site's antenna turned 120 degrees either way, with its power and tilt and the beam on
    boresight, on air; their PCIs (-1) take part in no collision the model counts."""
    index = np.repeat(np.arange(cells.count), 2)
    picked = {f.name: getattr(cells, f.name)[index] for f in fields(cells) if f.name != "scenario"}
    turn = np.tile([-120.0, 120.0], cells.count)
    return Cells(**picked, scenario=cells.scenario).with_(
        azimuth_deg=(cells.azimuth_deg[index] + turn) % 360.0,
        beam_offset_deg=np.zeros(index.size),
        active=np.ones(index.size, dtype=bool),
        pci=np.full(index.size, -1),
    )


def draw_outer_ues(
    area: str,
    role: str,
    siblings: Cells,
    first_home: int,
    rng: np.random.Generator,
    count: int = OUTER_UE_COUNT,
) -> tuple[UEs, np.ndarray]:
    """``count`` UEs spread evenly over the sibling sectors (as :func:`draw_ues` drops a
    neighbour's), each with its sector as home, numbered from ``first_home`` on."""
    ues, home = draw_ues(area, role, siblings, rng, count, own_share=0.0, start=0)
    return ues, home + first_home


def joined(first: UEs, second: UEs) -> UEs:
    """Two populations as one (``first``'s UEs first)."""
    return UEs(
        *(np.concatenate([getattr(first, f.name), getattr(second, f.name)]) for f in fields(UEs))
    )
