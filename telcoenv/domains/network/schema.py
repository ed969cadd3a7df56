"""SQLAlchemy models of the operator's network and operations data.

One database holds any number of episodes: every table is keyed by ``episode_id`` first, so a
shared inspection database (``database_url=`` a PostgreSQL or SQLite-file URL) keeps each
episode's network apart. Configuration columns are typed, and constrained by ``CHECK`` clauses,
from the tool specs (``tools/optimize_cell.json``, ``tools/optimize_slice.json``): the spec is
the one source of a parameter's legal range, and the database refuses what the spec forbids.

Tables: ``sites``, ``cells`` (identity, location via the site, PCI, azimuth, load and the
configuration columns), ``neighbour_relations``, ``slices`` (with their policy),
``transport_links`` (backhaul), ``alarms``, ``kpi_samples`` (one row per object, KPI and
measurement time: a new set after every change, so series continue after it),
``config_baselines`` (approved configurations, for configuration-mismatch checks and
``push_config``), ``change_log`` (one row per parameter changed) and ``tickets``.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from telcoenv.database import Schema
from telcoenv.domains.network.parameters import (
    BACKHAUL_PARAMETERS,
    CELL_PARAMETERS,
    SLICE_PARAMETERS,
    change_schemas,
)

if TYPE_CHECKING:  # imported when the schema is built: a cached one needs no SQLAlchemy
    from sqlalchemy import Column, MetaData

_ID = 80  # length of identifier columns


def _parameter_columns(names: tuple[str, ...], table: str) -> list[Any]:
    """Typed, NOT NULL columns for configuration parameters, with CHECKs from their spec."""
    from sqlalchemy import Boolean, CheckConstraint, Column, Float, Integer, String, or_

    types = {"number": Float, "integer": Integer, "string": String(_ID), "boolean": Boolean}
    items: list[Any] = []
    for name in names:
        schema = change_schemas()[name]
        column = Column(name, types[schema["type"]], nullable=False)
        items.append(column)
        if "enum" in schema:
            # An OR chain, not IN: SQLite builds a temporary table for every IN list it checks,
            # which tripled the cost of inserting a cell row.
            check = or_(*(column == value for value in schema["enum"]))
        elif "minimum" in schema:
            check = column.between(schema["minimum"], schema["maximum"])
        else:
            continue
        items.append(CheckConstraint(check, name=f"{table}_{name}_range"))
    return items


def _relation_offset() -> list[Any]:
    """The relation's ``cio_db`` column, in the range optimize_cell's ``neighbour_cio_db``
    allows."""
    from sqlalchemy import CheckConstraint, Column, Float

    schema = change_schemas()["neighbour_cio_db"]["additionalProperties"]
    column = Column("cio_db", Float, nullable=False)
    check = column.between(schema["minimum"], schema["maximum"])
    return [column, CheckConstraint(check, name="neighbour_relations_cio_db_range")]


def _episode_key() -> Column[str]:
    from sqlalchemy import Column, String

    return Column("episode_id", String(_ID), primary_key=True)


@cache
def network_metadata() -> MetaData:
    """The schema, built once per process from the packaged tool specs.

    On SQLite the tables are WITHOUT ROWID: rows live in their primary key's B-tree, which
    made an episode's inserts about a fifth cheaper.
    """
    from sqlalchemy import (
        BigInteger,
        Boolean,
        CheckConstraint,
        Column,
        Float,
        ForeignKeyConstraint,
        Integer,
        MetaData,
        String,
        Table,
        Text,
    )

    metadata = MetaData(info={"name": "network", "system": "the network"})
    Table(
        "sites",
        metadata,
        _episode_key(),
        Column("site_id", String(_ID), primary_key=True),
        Column("cluster_id", String(_ID), nullable=False),
        Column("area", String(20), nullable=False),
        Column("latitude", Float, nullable=False),
        Column("longitude", Float, nullable=False),
    )
    Table(
        "cells",
        metadata,
        _episode_key(),
        Column("cell_id", String(_ID), primary_key=True),
        Column("site_id", String(_ID), nullable=False),
        Column("technology", String(10), nullable=False),
        Column("band", String(40), nullable=False),
        Column("role", String(10), nullable=False),
        Column("area", String(20), nullable=False),
        Column("serving", Boolean, nullable=False),
        Column("pci", Integer, CheckConstraint("pci BETWEEN 0 AND 1007"), nullable=False),
        Column("azimuth_deg", Float, CheckConstraint("azimuth_deg BETWEEN 0 AND 359")),
        Column("operational_state", String(20), nullable=False),
        Column("prb_util", Float, nullable=False),
        Column("kpi_seed", BigInteger, nullable=False),
        *_parameter_columns(CELL_PARAMETERS, "cells"),
        ForeignKeyConstraint(["episode_id", "site_id"], ["sites.episode_id", "sites.site_id"]),
    )
    Table(
        "neighbour_relations",
        metadata,
        _episode_key(),
        Column("cell_id", String(_ID), primary_key=True),
        Column("neighbour_id", String(_ID), primary_key=True),
        Column("distance_km", Float, nullable=False),
        Column("status", String(20), nullable=False),
        # The relation as a configuration owner ("<cell id>-><neighbour id>") and its offset.
        Column("relation_id", String(2 * _ID + 2), nullable=False),
        *_relation_offset(),
    )
    Table(
        "slices",
        metadata,
        _episode_key(),
        Column("slice_id", String(_ID), primary_key=True),
        Column("cell_id", String(_ID), nullable=False),
        Column("service_type", String(10), nullable=False),
        *_parameter_columns(SLICE_PARAMETERS, "slices"),
    )
    Table(
        "transport_links",
        metadata,
        _episode_key(),
        Column("link_id", String(_ID), primary_key=True),
        Column("site_id", String(_ID), nullable=False),
        Column("capacity_mbps", Float, nullable=False),
        *_parameter_columns(BACKHAUL_PARAMETERS, "transport_links"),
    )
    Table(
        "alarms",
        metadata,
        _episode_key(),
        Column("alarm_id", String(_ID), primary_key=True),
        Column("source", String(_ID), nullable=False),
        Column("name", String(200), nullable=False),
        Column("severity", String(20), nullable=False),
        Column("raised_at", String(20), nullable=False),
    )
    Table(
        "kpi_samples",
        metadata,
        _episode_key(),
        Column("object_id", String(_ID), primary_key=True),
        Column("measured_at", String(20), primary_key=True),
        Column("kpi", String(60), primary_key=True),
        Column("value", Float, nullable=False),
    )
    Table(
        "config_baselines",
        metadata,
        _episode_key(),
        Column("config_id", String(_ID), primary_key=True),
        Column("cell_id", String(_ID), nullable=False),
        *_parameter_columns(CELL_PARAMETERS, "config_baselines"),
    )
    Table(
        "change_log",
        metadata,
        _episode_key(),
        Column("change_id", String(_ID), primary_key=True),
        # One change may set the same parameter on several objects (a cell's relations).
        Column("object_id", String(2 * _ID + 2), primary_key=True),
        Column("parameter", String(60), primary_key=True),
        Column("step", Integer, nullable=False),
        Column("tool", String(60), nullable=False),
        Column("object_type", String(20), nullable=False),
        Column("old_value", Text, nullable=False),  # JSON
        Column("new_value", Text, nullable=False),  # JSON
        Column("reason", Text, nullable=False),
        Column("changed_at", String(20), nullable=False),
    )
    Table(
        "tickets",
        metadata,
        _episode_key(),
        Column("ticket_id", String(_ID), primary_key=True),
        Column("status", String(20), nullable=False),
        Column("severity", String(20), nullable=False),
        Column("team", String(40), nullable=False),
        Column("cell_id", String(_ID), nullable=False),
        Column("summary", Text, nullable=False),
        Column("created_at", String(20), nullable=False),
        Column("step", Integer, nullable=False),
    )
    for table in metadata.tables.values():
        table.dialect_options["sqlite"]["with_rowid"] = False
    return metadata


@cache
def network_schema() -> Schema:
    """The schema as environments use it: its plan from the user's cache, its ``MetaData``
    (:func:`network_metadata`) built only when a statement must be compiled."""
    return Schema("network", network_metadata)
