"""The live network of one episode: its rows in the network database, read and changed by tools.

:class:`NetworkState` loads an :class:`~telcoenv.domains.network.topology.InitialNetwork` into
the environment's :class:`~telcoenv.database.EpisodeDatabase` and offers the
queries and changes the tools, the causal model and the verification need. The database is the
one source of the current state; the initial network is kept as the starting state that
:meth:`NetworkState.diff` compares it with. The latest value of each KPI is also kept in Python
as samples are written (an undone change restores it), so that reading the current KPIs costs
the same at the first step and the hundredth.
"""

from __future__ import annotations

import datetime as dt
import json
import operator
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from telcoenv.database import EpisodeDatabase, Query
from telcoenv.domains.network.parameters import (
    BACKHAUL_PARAMETERS,
    CELL_PARAMETERS,
    RETENTION,
    SLICE_PARAMETERS,
)
from telcoenv.domains.network.schema import network_schema
from telcoenv.domains.network.topology import (
    FixSetting,
    InitialNetwork,
    baseline_id,
    derived_kpis,
    fix_settings,
    relation_id,
)
from telcoenv.errors import ToolError

if TYPE_CHECKING:
    from telcoenv.domains.network.simulation import EpisodeModel

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
ConfigKey = tuple[str, str]  # ("cell:<id>" | "slice:<id>" | "backhaul:<id>", parameter)
Configuration = dict[str, dict[str, Any]]  # object ("cell:<id>", ...) -> parameter -> value
Change = tuple[str, Any, Any]  # (parameter, old value, new value)
_OBJECT_TABLES = {
    "cell": ("cells", "cell_id"),
    "slice": ("slices", "slice_id"),
    "backhaul": ("transport_links", "link_id"),
    "relation": ("neighbour_relations", "relation_id"),
}

_CELL_COLUMNS = (
    "cell_id",
    "site_id",
    "technology",
    "role",
    "area",
    "band",
    "serving",
    "pci",
    "azimuth_deg",
    "operational_state",
    "prb_util",
    "kpi_seed",
    *CELL_PARAMETERS,
)
_BOOLEAN = frozenset().union(
    *(
        network_schema().plan.booleans[table]
        for table in ("cells", "config_baselines", "slices", "transport_links")
    )
)


class CellRow(NamedTuple):
    """A cell as stored now (a named tuple: rows are read often and must be cheap)."""

    cell_id: str
    site_id: str
    tech: str
    role: str
    area: str
    band: str
    serving: bool
    pci: int
    azimuth_deg: float
    operational_state: str
    load: float
    kpi_seed: int
    config: dict[str, Any]


class SliceRow(NamedTuple):
    slice_id: str
    service_type: str
    policy: dict[str, Any]


class LinkRow(NamedTuple):
    link_id: str
    site_id: str
    capacity_mbps: float
    config: dict[str, Any]


def _decode(names: tuple[str, ...], values: Iterable[Any]) -> dict[str, Any]:
    """A row as a dict; booleans come back from SQLite as 0/1."""
    row = dict(zip(names, values, strict=True))
    for name in _BOOLEANS_OF.get(names, ()):
        row[name] = bool(row[name])
    return row


_FIXED = _CELL_COLUMNS.index(CELL_PARAMETERS[0])
_BOOLEAN_CONFIG = {
    "cell": [n for n in CELL_PARAMETERS if n in _BOOLEAN],
    "slice": [n for n in SLICE_PARAMETERS if n in _BOOLEAN],
    "backhaul": [n for n in BACKHAUL_PARAMETERS if n in _BOOLEAN],
    "relation": [],
}
# The configuration columns of each table, after its key (see configuration()).
_CONFIGURATION = {
    "cells": ("cell", ("cell_id", "pci", "azimuth_deg", *CELL_PARAMETERS)),
    "slices": ("slice", ("slice_id", *SLICE_PARAMETERS)),
    "transport_links": ("backhaul", ("link_id", *BACKHAUL_PARAMETERS)),
    "neighbour_relations": ("relation", ("relation_id", "cio_db")),
}
# Configuration values in column order, from a parameter dict.
_CELL_CONFIG = operator.itemgetter(*CELL_PARAMETERS)
_SLICE_POLICY = operator.itemgetter(*SLICE_PARAMETERS)
_LINK_CONFIG = operator.itemgetter(*BACKHAUL_PARAMETERS)
_BOOLEANS_OF = {
    names: tuple(n for n in names if n in _BOOLEAN)
    for names in (CELL_PARAMETERS, SLICE_PARAMETERS, BACKHAUL_PARAMETERS)
}


def _cell(row: tuple[Any, ...]) -> CellRow:
    config = _decode(CELL_PARAMETERS, row[_FIXED:])
    return CellRow(*row[:6], bool(row[6]), *row[7:_FIXED], config)  # type: ignore[arg-type]


History = list[tuple[dt.datetime, dict[str, float]]]


def _regimes(rows: Iterable[tuple[str, str, float]]) -> History:
    """Group (measured at, KPI, value) rows, in time order, into regimes.

    A sample set after a change holds only the KPIs that moved; each regime carries the others
    forward from the one before, so every regime is complete.
    """
    regimes: dict[str, dict[str, float]] = {}
    for stamp, name, value in rows:
        regimes.setdefault(stamp, {})[name] = value
    history: History = []
    carried: dict[str, float] = {}
    for stamp, values in regimes.items():
        carried = {**carried, **values}
        history.append((dt.datetime.fromisoformat(stamp), carried))
    return history


def latest(history: History) -> dict[str, float]:
    """The current value of each KPI in a history (the latest regime)."""
    return dict(history[-1][1]) if history else {}


def _columns(table: str) -> tuple[str, ...]:
    return network_schema().plan.columns[table]


_CELLS = Query("cells", _CELL_COLUMNS)
_CELL = Query("cells", _CELL_COLUMNS, ("cell_id",))
_CELL_EXISTS = Query("cells", ("cell_id",), ("cell_id",))
_RELATIONS = Query("neighbour_relations", ("neighbour_id", "distance_km"), ("cell_id",))
_SLICES = Query("slices", ("slice_id", "service_type", *SLICE_PARAMETERS))
_LINK = Query("transport_links", ("link_id", "site_id", "capacity_mbps", *BACKHAUL_PARAMETERS))
_BASELINE = Query("config_baselines", ("cell_id", *CELL_PARAMETERS), ("config_id",))
_BASELINE_IDS = Query("config_baselines", ("config_id",))
_ALARMS = Query("alarms", ("alarm_id", "source", "name", "severity", "raised_at"))
# KPI samples in their primary key's order (no sort step).
_SAMPLES = Query(
    "kpi_samples", ("measured_at", "kpi", "value"), ("object_id",), ("measured_at", "kpi")
)
_CONFIG_QUERIES = {table: Query(table, columns) for table, (_, columns) in _CONFIGURATION.items()}
_CONFIG_COLUMNS = {table: frozenset(columns) for table, (_, columns) in _CONFIGURATION.items()}
_TICKETS = Query(
    "tickets", ("ticket_id", "status", "severity", "team", "cell_id", "summary", "created_at")
)
_CHANGE_LOG = Query(
    "change_log",
    (
        "change_id",
        "parameter",
        "step",
        "tool",
        "object_type",
        "object_id",
        "old_value",
        "new_value",
        "reason",
        "changed_at",
    ),
)
_TICKET_COUNT = Query("tickets", count="ticket_id")
_CHANGE_COUNT = Query("change_log", count="change_id")


class NetworkState:
    """Everything the tools of one episode can read or change, held in the network database."""

    def __init__(
        self,
        db: EpisodeDatabase,
        initial: InitialNetwork,
        episode_id: str,
        model: EpisodeModel | None = None,
    ) -> None:
        self.db, self.initial, self.episode_id = db, initial, episode_id
        # The network model behind the counters (None: the blueprint's causal model, dynamics.py).
        self.model = model
        self.now: dt.datetime = initial.now  # the episode's clock: a change takes time
        self.cluster_id = initial.cluster_id
        self.serving_id = initial.serving.cell_id
        self.cell_ids = [cell.cell_id for cell in initial.cells]  # serving, then by distance
        self.link_id = initial.backhaul.link_id
        self.fault_slice_id = initial.fault_slice_id
        self.window = initial.window
        self.kpi_bounds = initial.kpi_bounds
        self.start = initial.configuration()
        self._owners: dict[str, str] = {}  # object id -> "cell:<id>" etc.
        self.collection_start = initial.now - RETENTION  # when the first KPI samples were taken
        # The latest sample of each KPI per measured object, as kpi_samples holds them, kept
        # as they are written (an undone change restores them): reading the current KPIs
        # would otherwise scan an object's whole history, which grows with every change.
        self._current: dict[str, dict[str, float]] = {}
        # The configuration as last read, until a change: the KPI model and verification read
        # it after every change, and only this state's changes write it.
        self._configuration: Configuration | None = None
        db.start_episode(self._load, episode_id)

    # --- loading ------------------------------------------------------------------------------

    def _load(self, db: EpisodeDatabase) -> None:
        """Insert the initial network (tuples in each table's column order: see schema.py)."""
        net, episode = self.initial, self.episode_id
        cells = net.cells
        db.insert_values(
            "sites",
            [(episode, c.site_id, net.cluster_id, c.area, c.latitude, c.longitude) for c in cells],
        )
        db.insert_values(
            "cells",
            [
                (
                    episode,
                    c.cell_id,
                    c.site_id,
                    c.tech,
                    c.band,
                    c.role,
                    c.area,
                    c is net.serving,
                    c.pci,
                    c.azimuth_deg,
                    c.operational_state,
                    c.load,
                    c.kpi_seed,
                    *_CELL_CONFIG(c.config),
                )
                for c in cells
            ],
        )
        db.insert_values("neighbour_relations", self._relations())
        db.insert_values(
            "slices",
            [
                (episode, s.slice_id, net.serving.cell_id, s.service_type, *_SLICE_POLICY(s.policy))
                for s in net.slices.values()
            ],
        )
        link = net.backhaul
        db.insert_values(
            "transport_links",
            [
                (
                    episode,
                    link.link_id,
                    link.site_id,
                    link.capacity_mbps,
                    *_LINK_CONFIG(link.config),
                )
            ],
        )
        db.insert_values(
            "alarms",
            [(episode, a.alarm_id, a.source, a.name, a.severity, a.raised_at) for a in net.alarms],
        )
        db.insert_values(
            "config_baselines",
            [
                (episode, config_id, cell_id, *_CELL_CONFIG(params))
                for config_id, (cell_id, params) in net.baselines.items()
            ],
        )
        assert net.serving.measured is not None
        start = self.collection_start
        measured = {net.serving.cell_id: net.serving.measured, link.link_id: link.kpis}
        measured.update({s.slice_id: s.kpis for s in net.slices.values()})
        samples = []
        for owner, kpis in measured.items():
            samples += self._sample_rows(owner, kpis, start)
        db.insert_values("kpi_samples", samples)
        self._current = {}
        self._remember(measured)

    def _relations(self) -> list[tuple[Any, ...]]:
        offsets = self.initial.relation_cio_db
        return [
            (
                self.episode_id,
                cell.cell_id,
                other.cell_id,
                km,
                "active",
                relation_id(cell.cell_id, other.cell_id),
                offsets.get((cell.cell_id, other.cell_id), 0.0),
            )
            for cell, other, km in self.initial.relation_pairs()
        ]

    def _sample_rows(
        self, owner: str, kpis: dict[str, float], at: dt.datetime
    ) -> list[tuple[Any, ...]]:
        """kpi_samples rows, in column order: episode, object, measured at, KPI, value."""
        stamp, episode = at.strftime(TIME_FORMAT), self.episode_id
        return [(episode, owner, stamp, name, value) for name, value in kpis.items()]

    # --- reads --------------------------------------------------------------------------------

    def _fetch(self, query: Query, *keys: Any) -> list[Any]:
        return self.db.select(query, (self.episode_id, *keys))

    def cells(self) -> list[CellRow]:
        """Every cell of the cluster: the serving cell first, then neighbours by distance."""
        rows = {row[0]: _cell(row) for row in self._fetch(_CELLS)}
        return [rows[cell_id] for cell_id in self.cell_ids]

    def cell(self, cell_id: str) -> CellRow:
        """The cell with this id, or a ToolError listing the cells of the cluster."""
        rows = self._fetch(_CELL, cell_id)
        if rows:
            return _cell(rows[0])
        raise ToolError(
            f"unknown cell_id {cell_id!r}: no such cell in cluster {self.cluster_id} "
            f"(cells: {', '.join(self.cell_ids)})",
            kind="not_found",
        )

    def require_cell(self, cell_id: str) -> bool:
        """Whether ``cell_id`` is the serving cell; a ToolError if the cluster has no such cell."""
        if not self._fetch(_CELL_EXISTS, cell_id):
            self.cell(cell_id)  # raises the not-found error
        return cell_id == self.serving_id

    @property
    def serving(self) -> CellRow:
        return self.cell(self.serving_id)

    def neighbours_of(self, cell_id: str) -> list[tuple[str, float]]:
        """(neighbour id, distance in km) of a cell's neighbour relations, nearest first."""
        rows = self._fetch(_RELATIONS, cell_id)
        return sorted(rows, key=lambda row: (row[1], row[0]))

    def fix_settings(self, target: str, fix: dict[str, Any]) -> list[FixSetting]:
        """Where a fault's corrective values go in this episode (topology.fix_settings)."""
        return fix_settings(target, fix, self.serving_id, self.link_id, self.fault_slice_id)

    def relation_offsets(
        self, cell_id: str, config: Configuration | None = None
    ) -> dict[str, float]:
        """Each of a cell's neighbour relations' cell individual offset (dB), by neighbour id
        (from ``config`` when the caller has just read the configuration)."""
        prefix = f"relation:{cell_id}->"
        return {
            owner.removeprefix(prefix): float(params["cio_db"])
            for owner, params in (config if config is not None else self.configuration()).items()
            if owner.startswith(prefix)
        }

    def slices(self) -> list[SliceRow]:
        rows = self._fetch(_SLICES)
        return sorted(
            (SliceRow(r[0], r[1], _decode(SLICE_PARAMETERS, r[2:])) for r in rows),
            key=lambda s: s.slice_id,
        )

    def slice(self, slice_id: str) -> SliceRow:
        for network_slice in self.slices():
            if network_slice.slice_id == slice_id:
                return network_slice
        known = ", ".join(s.slice_id for s in self.slices())
        raise ToolError(
            f"unknown slice_id {slice_id!r}; slices on {self.serving_id}: {known}",
            kind="not_found",
        )

    def backhaul(self) -> LinkRow:
        row = self._fetch(_LINK)[0]
        return LinkRow(row[0], row[1], row[2], _decode(BACKHAUL_PARAMETERS, row[3:]))

    def baseline(self, config_id: str) -> tuple[str, dict[str, Any]] | None:
        """(cell id, parameters) of a stored configuration, or None."""
        rows = self._fetch(_BASELINE, config_id)
        return (rows[0][0], _decode(CELL_PARAMETERS, rows[0][1:])) if rows else None

    def baseline_ids(self) -> list[str]:
        rows = self._fetch(_BASELINE_IDS)
        return sorted(row[0] for row in rows)

    def baseline_of(self, cell_id: str) -> dict[str, Any]:
        found = self.baseline(baseline_id(cell_id))
        assert found is not None, cell_id
        return found[1]

    def alarms(self, sources: set[str]) -> list[dict[str, Any]]:
        rows = sorted(self._fetch(_ALARMS), key=lambda row: (row[4], row[0]))
        return [dict(zip(_ALARMS.columns, r, strict=True)) for r in rows if r[1] in sources]

    def kpi_history(self, object_id: str) -> History:
        """The KPI regimes of an object: (measured from, KPI values), oldest first.

        A neighbour's counters are collected on the first request (seeded by the cell).
        """
        rows = self._fetch(_SAMPLES, object_id)
        if not rows and object_id in self.cell_ids:
            kpis = self._first_counters(object_id)
            with self.db.change():
                self.db.insert_values(
                    "kpi_samples", self._sample_rows(object_id, kpis, self.collection_start)
                )
                self._remember({object_id: kpis})
            return [(self.collection_start, kpis)]
        return _regimes(rows)

    def uncollected_kpis(self, cell_id: str) -> dict[str, float] | None:
        """The KPIs a neighbour's first request would collect, without collecting them: None
        once they are collected, or for an id that is not a cell of the cluster. For a tool
        that may still refuse the call, which must then leave the network as it was."""
        if cell_id in self._current or cell_id not in self.cell_ids:
            return None
        return self._first_counters(cell_id)

    def _first_counters(self, cell_id: str) -> dict[str, float]:
        """A neighbour's counters as first collected: the model's now, or derived from its
        load with its own seed."""
        if self.model is not None:
            return self.model_kpis(cell_id)
        cell = self.cell(cell_id)
        return derived_kpis(cell.load, cell.area, cell.role, cell.kpi_seed)

    def model_kpis(self, object_id: str, config: Configuration | None = None) -> dict[str, float]:
        """What the network model shows for an object now (the configuration as it is)."""
        assert self.model is not None
        config = self.configuration() if config is None else config
        baseline = self.baseline_of(object_id) if object_id in self.cell_ids else None
        return self.model.kpis(object_id, config, self.now, baseline=baseline)

    def latest_kpis(self) -> dict[str, dict[str, float]]:
        """The current KPIs of every object measured so far (copies, by object id)."""
        return {owner: dict(self._current[owner]) for owner in sorted(self._current)}

    def kpis(self, object_id: str) -> dict[str, float]:
        """The current KPI values of a cell, slice or link (the latest sample of each KPI)."""
        current = self._current.get(object_id)
        return dict(current) if current else latest(self.kpi_history(object_id))

    def kpi_value(self, object_id: str, kpi: str) -> float | None:
        """The current value of one KPI of an object (its latest sample), or None."""
        return self._current.get(object_id, {}).get(kpi)

    def _remember(self, samples: dict[str, dict[str, float]]) -> None:
        """Note new samples as the current KPIs, in the order kpi_samples gives them back
        (measurement time, then KPI name); an undone change restores what was before."""
        before = {owner: self._current.get(owner) for owner in samples}
        for owner, kpis in samples.items():
            if kpis:
                merged = dict(self._current.get(owner) or {})
                merged.update(sorted(kpis.items()))
                self._current[owner] = merged
        self.db.on_undo(lambda: self._restore(before))

    def _restore(self, before: dict[str, dict[str, float] | None]) -> None:
        for owner, kpis in before.items():
            if kpis is None:
                self._current.pop(owner, None)
            else:
                self._current[owner] = kpis

    def configuration(self) -> Configuration:
        """Every configurable value now, per object, like ``InitialNetwork.configuration``
        (a copy the caller may change)."""
        if self._configuration is None:
            self._configuration = self._read_configuration()
        return {owner: dict(params) for owner, params in self._configuration.items()}

    def _read_configuration(self) -> Configuration:
        values: Configuration = {}
        for table, (kind, columns) in _CONFIGURATION.items():
            names, booleans = columns[1:], _BOOLEAN_CONFIG[kind]
            for row in self._fetch(_CONFIG_QUERIES[table]):
                owner = self._owners.get(row[0])
                if owner is None:
                    owner = self._owners[row[0]] = f"{kind}:{row[0]}"
                params = values[owner] = dict(zip(names, row[1:], strict=True))
                for name in booleans:  # SQLite returns booleans as 0/1
                    params[name] = bool(params[name])
        return values

    def diff(self, now: Configuration | None = None) -> list[tuple[ConfigKey, Any, Any]]:
        """(key, value at the start, value now) of every configuration value that changed.

        ``now`` is the current configuration when the caller has just read it.
        """
        now = now if now is not None else self.configuration()
        changed = []
        for owner, start in self.start.items():
            current = now[owner]
            if current != start:
                changed += [
                    ((owner, name), before, current[name])
                    for name, before in start.items()
                    if current[name] != before
                ]
        return changed

    def tickets(self) -> list[dict[str, Any]]:
        rows = sorted(self._fetch(_TICKETS))
        return [dict(zip(_TICKETS.columns, row, strict=True)) for row in rows]

    def change_log(self) -> list[dict[str, Any]]:
        rows = sorted(self._fetch(_CHANGE_LOG))
        entries = [dict(zip(_CHANGE_LOG.columns, row, strict=True)) for row in rows]
        for entry in entries:
            entry["old_value"] = json.loads(entry["old_value"])
            entry["new_value"] = json.loads(entry["new_value"])
        return entries

    def ticket_count(self) -> int:
        return int(self._fetch(_TICKET_COUNT)[0][0])

    # --- changes ------------------------------------------------------------------------------

    def apply(
        self, tool: str, step: int, reason: str, targets: list[tuple[str, str, list[Change]]]
    ) -> str:
        """Set ``(parameter, old, new)`` changes on objects and log them, all or nothing.

        ``targets`` holds ``(object type, object id, changes)`` with object type ``cell``,
        ``slice`` or ``backhaul``. Parameter names must be columns of the object's table; a
        value the schema's CHECK constraints refuse raises a ToolError and changes nothing.
        Returns the change id.
        """
        change_id = f"CHG-{self.now:%Y%m%d}-{int(self._fetch(_CHANGE_COUNT)[0][0]) + 1:04d}"
        stamp = self.now.strftime(TIME_FORMAT)
        log = []
        with self.db.change():
            for object_type, object_id, changes in targets:
                self._update(object_type, object_id, {n: new for n, _, new in changes})
                log += [
                    {
                        "episode_id": self.episode_id,
                        "change_id": change_id,
                        "parameter": name,
                        "step": step,
                        "tool": tool,
                        "object_type": object_type,
                        "object_id": object_id,
                        "old_value": json.dumps(old),
                        "new_value": json.dumps(new),
                        "reason": reason,
                        "changed_at": stamp,
                    }
                    for name, old, new in changes
                ]
            self.db.insert("change_log", log)
        return change_id

    def _update(self, object_type: str, object_id: str, values: dict[str, Any]) -> None:
        table, key = _OBJECT_TABLES[object_type]
        if not _CONFIG_COLUMNS[table].isdisjoint(values):  # a load is no configuration
            self._configuration = None  # read again after the change, or after it is undone
            self.db.on_undo(self._forget_configuration)
        columns = _columns(table)
        unknown = sorted(n for n in values if n not in columns or n in ("episode_id", key))
        if unknown:
            raise ToolError(f"a {object_type} has no parameter(s) {unknown}", kind="bad_args")
        for name, value in values.items():
            changed = self.db.update_column(
                table, name, value, episode_id=self.episode_id, key=key, key_value=object_id
            )
            if changed != 1:
                raise ToolError(f"unknown {object_type} {object_id!r}", kind="not_found")

    def _forget_configuration(self) -> None:
        self._configuration = None

    def add_ticket(
        self, summary: str, severity: str, team: str, cell_id: str, step: int
    ) -> dict[str, Any]:
        ticket = {
            "ticket_id": f"TT-{self.now:%Y%m%d}-{self.ticket_count() + 1:04d}",
            "status": "open",
            "severity": severity,
            "team": team,
            "cell_id": cell_id,
            "summary": summary,
            "created_at": self.now.strftime(TIME_FORMAT),
            "step": step,
        }
        with self.db.change():
            self.db.insert("tickets", [{"episode_id": self.episode_id, **ticket}])
        return ticket

    def record_kpis(self, samples: dict[str, dict[str, float]], at: dt.datetime) -> None:
        """New KPI samples per object id, measured from ``at`` (a new regime)."""
        rows = [
            row for owner, kpis in samples.items() for row in self._sample_rows(owner, kpis, at)
        ]
        with self.db.change():
            self.db.insert_values("kpi_samples", rows)
            self._remember(samples)

    def set_load(self, cell_id: str, load: float) -> None:
        with self.db.change():
            self._update("cell", cell_id, {"prb_util": load})
