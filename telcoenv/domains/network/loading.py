"""Loading the network domain's data: its intents (faults, resolutions, gold chains) and
blueprints (KPI ranges, context, fault overrides), with every rule that would otherwise only
fail at ``reset`` (see :mod:`telcoenv.catalog` for the domain-neutral half).

>>> catalog = network_catalog()
>>> len(catalog.intents), sum(len(b) for b in catalog.blueprints.values()), len(catalog.tools)
(20, 49, 16)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from telcoenv.catalog import (
    GENERIC_EVENT_KINDS,
    Catalog,
    check_events,
    check_gold_chain,
    check_intent_folder,
    check_template,
    load_blueprint_folder,
    load_intents,
    load_tools,
    parse_model,
    template_strings,
    validate_document,
)
from telcoenv.datafiles import cached_build, data_root, read_yaml
from telcoenv.domains.network.models import Blueprint, Intent, KPIConstraint
from telcoenv.errors import CatalogError, ToolError
from telcoenv.specs import ToolSpec

if TYPE_CHECKING:
    from telcoenv.domains.network.kpis import KPIInfo

# The rest of the network domain (kpis, parameters) is imported inside the functions that
# check against it: those modules need the catalogue this one loads.

#: The network's event kinds: the generic ones and a change to a cell the engineer did not
#: report (:func:`telcoenv.domains.network.verification.unrelated_changes`).
EVENT_KINDS = (*GENERIC_EVENT_KINDS, "unrelated_change")


# Names a gold-chain argument template may use; filled per episode (see NetworkDomain.gold_values).
GOLD_ARGUMENT_FIELDS = frozenset(
    {
        "cell_id",
        "cluster_id",
        "window",
        "slice_id",
        "config_id",
        "fix",
        "ticket_summary",
        "ticket_severity",
        "ticket_team",
    }
)


# Corrective values computed per episode (see telcoenv.domains.network.topology.gold_fix), and
# the parameter each one resolves: "$free_pci" the lowest PCI free in the neighbourhood,
# "$link_capacity" the capacity of the site's transport link (a shaper back at line rate).
RESOLVED_PARAMETER = {"$free_pci": "pci", "$link_capacity": "bh_shaper_mbps"}
HEALTHY_RESOLVERS = frozenset(RESOLVED_PARAMETER)
_RESOLVER_EXAMPLES = {"$free_pci": 1, "$link_capacity": 1000}


# Names a resolution template may use; a relation fault's also its neighbour's id.
RESOLUTION_FIELDS = frozenset(
    {"cell_id", "cluster_id", "window", "slice_id", "config_id", "changes"}
)
RELATION_FIELDS = frozenset({"neighbour_id"})
#: The neighbour of a relation fault in the examples that validate templates at load time.
_EXAMPLE_NEIGHBOUR = "NR-URB-MACRO-001"


def _example_gold_values(intent: Intent) -> dict[str, Any]:
    """Plausible episode values used to validate gold argument templates at load time."""
    # "$free_pci"-style resolvers are computed per episode: a legal value stands in here.
    fix: dict[str, Any] = {
        name: _RESOLVER_EXAMPLES.get(p.healthy, 1) if str(p.healthy).startswith("$") else p.healthy
        for name, p in intent.fault.parameters.items()
        if name != "operational_state"
    }
    if intent.fault.target == "relation":  # {neighbour id: offset}
        fix = {name: {_EXAMPLE_NEIGHBOUR: value} for name, value in fix.items()}
    return {
        "cell_id": "NR-URB-MACRO-000",  # the reserved examples of the specs (topology.py)
        "cluster_id": "CL-URB-000",
        "window": "3h",
        "slice_id": "SL-EMBB-00",
        "config_id": "CFG-NR-URB-MACRO-000-BASELINE",
        "fix": fix or {"tilt_deg": 6},
        "ticket_summary": "summary",
        "ticket_severity": intent.resolution.ticket.severity
        if intent.resolution.ticket
        else "minor",
        "ticket_team": intent.resolution.ticket.team
        if intent.resolution.ticket
        else "ran_optimization",
    }


def _check_templates(intent: Intent, file: str, index: int) -> None:
    where = f"intents.{index}"
    for step_no, step in enumerate(intent.gold_chain):
        field = f"{where}.gold_chain.{step_no}.arguments"
        for value in template_strings(step.arguments):
            check_template(value, GOLD_ARGUMENT_FIELDS, file, field)
    fields = RESOLUTION_FIELDS
    if intent.fault.target == "relation":
        fields |= RELATION_FIELDS
    for part in ("root_cause", "corrective_action"):
        for lang in ("en", "ar"):
            text = getattr(getattr(intent.resolution, part), lang)
            check_template(text, fields, file, f"{where}.resolution.{part}.{lang}")


def _parameter_schemas(tools: Mapping[str, ToolSpec]) -> dict[str, dict[str, Any]]:
    """JSON Schema of every parameter the corrective tools set (``optimize_cell.changes`` and
    ``optimize_slice.policy``): the legal values of faults and of KPI read-outs."""
    schemas: dict[str, dict[str, Any]] = {}
    for tool, group in (("optimize_cell", "changes"), ("optimize_slice", "policy")):
        if tool in tools:
            schemas.update(tools[tool].parameters["properties"][group]["properties"])
    return schemas


def _check_fault_values(
    values: list[Any], schema: Mapping[str, Any], file: str, field: str
) -> None:
    """Faulty values as the episode builder reads them (a ``[low, high]`` range of a numeric
    parameter, else a list of choices): every value it can draw must satisfy the parameter's
    spec, which the episode database enforces with CHECK constraints."""
    import jsonschema  # here, not at import: it costs start-up ~60 ms, cached catalogues skip it

    numeric = schema.get("type") in ("number", "integer") and "enum" not in schema
    positions: Iterable[tuple[int, Any]] = enumerate(values)
    if numeric and len(values) == 2 and all(isinstance(v, int | float) for v in values):
        low, high = values
        if low > high:
            raise CatalogError(file, field, f"reversed range [{low:g}, {high:g}]: low exceeds high")
        # Drawn values are rounded to the parameter's step: the ends need not be on it.
        schema = {key: value for key, value in schema.items() if key != "multipleOf"}
    validator = jsonschema.Draft202012Validator(schema)
    for position, value in positions:
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is not None:
            raise CatalogError(file, f"{field}.{position}", f"not a legal value: {error.message}")


def _accepted(values: list[Any], schema: Mapping[str, Any], parameter: Any) -> Any:
    """A value among faulty ``values`` (read as :func:`_check_fault_values` reads them) that
    the intent's ``accept`` band holds, or a ``[low, high]`` range overlapping it; None if none
    (or no band)."""
    if parameter.accept is None:
        return None
    numeric = schema.get("type") in ("number", "integer") and "enum" not in schema
    ranged = numeric and len(values) == 2 and all(isinstance(v, int | float) for v in values)
    if ranged and len(parameter.accept) == 2:
        (low, high), (band_low, band_high) = values, parameter.accept
        if (band_high is None or low <= band_high) and (band_low is None or high >= band_low):
            return [low, high]
        return None
    return next((v for v in values if parameter.accepts(v)), None)


def _check_outside_band(
    values: list[Any], schema: Mapping[str, Any], parameter: Any, file: str, field: str
) -> None:
    """A fault's values must lie outside what the verification accepts as the cause removed:
    an episode that starts inside the band is resolved by a diagnosis that changes nothing
    (the ping-pong blueprints once read a time-to-trigger of 80-320 ms out against an accepted
    320-1,024 ms: one episode in ten)."""
    found = _accepted(values, schema, parameter)
    if found is not None:
        raise CatalogError(
            file,
            field,
            f"{found} reaches the accepted band {list(parameter.accept)}: an episode would "
            "start with its cause already removed",
        )


def _check_states(values: list[Any], file: str, field: str) -> None:
    """Operational states a fault leaves the serving cell in must be known ones."""
    from telcoenv.domains.network.parameters import OPERATIONAL_STATES

    for position, value in enumerate(values):
        if value not in OPERATIONAL_STATES:
            raise CatalogError(
                file,
                f"{field}.{position}",
                f"unknown operational state {value!r}; known: {list(OPERATIONAL_STATES)}",
            )


def _check_fault(intent: Intent, tools: Mapping[str, ToolSpec], file: str, index: int) -> None:
    """Fault parameters must be settable through the corrective tool of their target, and their
    faulty and corrective values legal for it (the episode database refuses the others)."""
    import jsonschema  # here, not at import: it costs start-up ~60 ms, cached catalogues skip it

    if intent.fault.target in ("config",):
        return
    tool, group = (
        ("optimize_slice", "policy")
        if intent.fault.target == "slice"
        else ("optimize_cell", "changes")
    )
    settable = tools[tool].parameters["properties"][group]["properties"] if tool in tools else {}
    for name, parameter in intent.fault.parameters.items():
        field = f"intents.{index}.fault.parameters.{name}"
        if name == "operational_state":  # restored in the field, not through a tool
            if parameter.faulty is not None:
                _check_states(parameter.faulty, file, field + ".faulty")
            continue
        if name not in settable:
            raise CatalogError(
                file,
                field,
                f"{name!r} cannot be set with {tool}.{group}; settable: {sorted(settable)}",
            )
        schema = settable[name]
        if intent.fault.target == "relation":  # a map of neighbour ids to offsets
            schema = schema.get("additionalProperties")
            if not isinstance(schema, dict):
                raise CatalogError(
                    file, field, f"{tool}.{group}.{name} is no map of a cell's relations"
                )
        if parameter.faulty is not None:
            _check_fault_values(parameter.faulty, schema, file, field + ".faulty")
            _check_outside_band(parameter.faulty, schema, parameter, file, field + ".faulty")
        if isinstance(parameter.healthy, str) and parameter.healthy.startswith("$"):
            if parameter.healthy not in HEALTHY_RESOLVERS:
                raise CatalogError(
                    file,
                    field + ".healthy",
                    f"unknown resolver {parameter.healthy!r}; known: {sorted(HEALTHY_RESOLVERS)}",
                )
            if RESOLVED_PARAMETER[parameter.healthy] != name:
                raise CatalogError(
                    file,
                    field + ".healthy",
                    f"{parameter.healthy} resolves {RESOLVED_PARAMETER[parameter.healthy]}, "
                    f"not {name}",
                )
            continue
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(schema).iter_errors(parameter.healthy)
        )
        if error is not None:
            raise CatalogError(file, field + ".healthy", error.message)


def _check_context_kpis(intent: Intent, file: str, index: int) -> None:
    """The KPIs a fault leaves as sampled must be KPIs of the catalogue (kpis.yaml)."""
    from telcoenv.domains.network.kpis import kpi_definitions

    known = kpi_definitions().kpis
    for position, name in enumerate(intent.fault.context_kpis):
        if name not in known:
            raise CatalogError(
                file,
                f"intents.{index}.fault.context_kpis.{position}",
                f"unknown KPI {name!r}: a KPI of telcoenv/domains/network/kpis.yaml",
            )


def _dependency_cycle(constraints: Mapping[str, Any]) -> list[str] | None:
    for start in constraints:
        path, node = [start], constraints[start].parent
        while node is not None:
            if node in path:
                return [*path[path.index(node) :], node]
            path.append(node)
            node = constraints[node].parent if node in constraints else None
    return None


def _check_within(
    rule: KPIConstraint, low: float, high: float, file: str, field: str, what: str, note: str = ""
) -> None:
    """The rule's range must lie inside [low, high]; ``what`` and ``note`` word the message."""
    if rule.min < low or rule.max > high:
        bounds = f"[{low:g}, {high:g}]{note}"
        raise CatalogError(file, field, f"[{rule.min:g}, {rule.max:g}] {what} {bounds}")


def _check_physical_range(rule: KPIConstraint, info: KPIInfo, file: str, field: str) -> None:
    low, high = info.physical_range()
    low, high = -math.inf if low is None else low, math.inf if high is None else high
    what, note = "leaves the values the KPI can take,", f" (unit {info.unit!r})"
    _check_within(rule, low, high, file, field, what, note)


def _readout_values(rule: Any, schema: Mapping[str, Any]) -> list[Any]:
    """What a read-out KPI's range sets its parameter to: the legal values inside the range
    (sampled values snap to them), or for a continuous parameter the ``[min, max]`` range."""
    if "enum" in schema:
        return [v for v in schema["enum"] if rule.min <= v <= rule.max]
    return [rule.min, rule.max]


def _check_readouts(blueprint: Blueprint, schemas: Mapping[str, Any], file: str) -> None:
    """A KPI whose sampled value becomes a parameter value must yield legal values only."""
    from telcoenv.domains.network.parameters import KPI_READOUTS

    for kpi, parameter in KPI_READOUTS.items():
        rule = blueprint.constraints.get(kpi)
        if rule is None or parameter not in schemas:
            continue
        schema, field = schemas[parameter], f"constraints.{kpi}"
        if "enum" in schema:  # sampled values snap to the legal ones inside the range
            if not _readout_values(rule, schema):
                raise CatalogError(
                    file,
                    field,
                    f"[{rule.min:g}, {rule.max:g}] holds no legal {parameter} value; "
                    f"legal: {schema['enum']}",
                )
            continue
        low, high = schema.get("minimum", -math.inf), schema.get("maximum", math.inf)
        _check_within(rule, low, high, file, field, f"sets {parameter}, whose legal range is")


def _check_fault_sources(
    blueprint: Blueprint, intent: Intent, schemas: Mapping[str, Any], file: str
) -> None:
    """Fault overrides hold legal values; a fault drawn from a KPI read-out has that KPI; a
    configuration drift changes one parameter or more."""
    from telcoenv.domains.network.parameters import KPI_READOUTS

    parameters = intent.fault.parameters
    for name, values in blueprint.fault.items():
        if name == "operational_state":
            _check_states(values, file, f"fault.{name}")
        elif name in schemas:
            _check_fault_values(values, schemas[name], file, f"fault.{name}")
            if name in parameters:
                _check_outside_band(values, schemas[name], parameters[name], file, f"fault.{name}")
    if intent.fault.target == "config":
        # topology._apply_fault drifts int(mismatch_count) parameters of the serving cell.
        rule = blueprint.constraints.get("mismatch_count")
        if rule is not None and rule.min < 1:
            raise CatalogError(
                file,
                "constraints.mismatch_count",
                f"min ({rule.min:g}) must be 1 or more: a configuration mismatch drifts "
                "that many parameters",
            )
        return
    for name, parameter in intent.fault.parameters.items():
        # The PCI conflict is planted by the episode builder, the others need a faulty value.
        if parameter.faulty is not None or name in ("pci", "operational_state"):
            continue
        sources = [kpi for kpi, target in KPI_READOUTS.items() if target == name]
        if name not in blueprint.fault and not set(sources) & set(blueprint.constraints):
            remedy = f"constrain {' or '.join(sources)} or " if sources else ""
            raise CatalogError(
                file,
                "constraints",
                f"{intent.key} has no faulty {name} value: {remedy}give fault.{name}",
            )
        if name in blueprint.fault or name not in schemas:
            continue  # the override is drawn, not the read-out
        for kpi in set(sources) & set(blueprint.constraints):
            values = _readout_values(blueprint.constraints[kpi], schemas[name])
            _check_outside_band(values, schemas[name], parameter, file, f"constraints.{kpi}")


def check_blueprint(
    blueprint: Blueprint,
    file: str,
    intents: Mapping[str, Intent],
    known_kpis: Iterable[str] | None = None,
    *,
    tools: Mapping[str, ToolSpec],
) -> None:
    """Semantic checks of one blueprint (ranges, dependencies, intent, fault overrides) and of
    every value an episode stores from it (``tools``: the catalogue's tool specs, which give
    the parameters' legal values). ``known_kpis`` defaults to the packaged KPI catalogue."""
    from telcoenv.domains.network.kpis import kpi_definitions
    from telcoenv.domains.network.parameters import parse_window

    if blueprint.intent not in intents:
        raise CatalogError(file, "intent", f"unknown intent {blueprint.intent!r}")
    definitions = kpi_definitions().kpis
    known = set(known_kpis) if known_kpis is not None else set(definitions)
    for name, rule in blueprint.constraints.items():
        field = f"constraints.{name}"
        if name not in known:
            raise CatalogError(file, field, f"unknown KPI {name!r}: add it to the KPI catalogue")
        if not rule.min < rule.max:
            raise CatalogError(file, field, f"min ({rule.min:g}) must be below max ({rule.max:g})")
        if name in definitions:
            _check_physical_range(rule, definitions[name], file, field)
        if rule.mode is not None and not rule.min <= rule.mode <= rule.max:
            raise CatalogError(
                file, field + ".mode", f"mode {rule.mode:g} is outside [{rule.min:g}, {rule.max:g}]"
            )
        if rule.dist == "mixture":
            for part in ("hi", "lo"):
                low, high = getattr(rule, f"{part}_min"), getattr(rule, f"{part}_max")
                if not rule.min <= low < high <= rule.max:
                    raise CatalogError(
                        file,
                        f"{field}.{part}_min",
                        f"the {part} component [{low:g}, {high:g}] must be an increasing range "
                        f"inside [{rule.min:g}, {rule.max:g}]",
                    )
        parent = rule.parent
        if parent is not None and parent not in blueprint.constraints:
            key = "depends_on" if rule.depends_on else "corr_with"
            raise CatalogError(file, f"{field}.{key}", f"{parent!r} is not a KPI of this blueprint")
        if parent == name:
            raise CatalogError(file, field, "a KPI cannot depend on itself")
    cycle = _dependency_cycle(blueprint.constraints)
    if cycle:
        raise CatalogError(file, "constraints", "dependency cycle: " + " -> ".join(cycle))
    for prior, weights in blueprint.priors.items():
        if sum(weights.values()) <= 0:
            raise CatalogError(file, f"priors.{prior}", "weights must not all be zero")
    intent = intents[blueprint.intent]
    fault = intent.fault.parameters
    for name in blueprint.fault:
        if name not in fault:
            raise CatalogError(
                file,
                f"fault.{name}",
                f"not a fault parameter of {blueprint.intent}; known: {sorted(fault)}",
            )
    try:
        parse_window(blueprint.context.time_window)
    except ToolError as exc:
        raise CatalogError(file, "context.time_window", str(exc)) from exc
    schemas = _parameter_schemas(tools)
    _check_readouts(blueprint, schemas, file)
    _check_fault_sources(blueprint, intent, schemas, file)


def load_blueprints(
    folder: Path,
    intents: tuple[Intent, ...],
    known_kpis: Iterable[str] | None = None,
    *,
    tools: Mapping[str, ToolSpec],
) -> dict[str, tuple[Blueprint, ...]]:
    """Load ``<folder>/<INTENT>/*.yaml`` files; every intent needs at least one blueprint."""
    by_key = {intent.key: intent for intent in intents}
    known = list(known_kpis) if known_kpis is not None else None
    return load_blueprint_folder(
        folder, intents, lambda path: load_blueprint(path, by_key, known, tools=tools)
    )


def _parse_intent(tools: Mapping[str, ToolSpec]) -> Callable[[dict[str, Any], str, int], Intent]:
    def parse(raw: dict[str, Any], file: str, index: int) -> Intent:
        intent = parse_model(Intent, raw, file)
        _check_templates(intent, file, index)
        _check_fault(intent, tools, file, index)
        _check_context_kpis(intent, file, index)
        values = _example_gold_values(intent)
        check_gold_chain(intent, tools, file, index, values)
        check_events(intent, tools, file, index, values, EVENT_KINDS)
        return intent

    return parse


def load_blueprint(
    path: Path,
    intents: Mapping[str, Intent],
    known_kpis: Iterable[str] | None = None,
    *,
    tools: Mapping[str, ToolSpec],
    document: Any = None,
) -> Blueprint:
    """Load and check one blueprint file that sits in its intent's folder (``document``: its
    content already parsed, e.g. after repairing its YAML)."""
    file = str(path)
    if document is None:
        document = read_yaml(path)
    validate_document(document, "blueprint.schema.json", file)
    blueprint = parse_model(Blueprint, document, file)
    check_intent_folder(blueprint, path)
    check_blueprint(blueprint, file, intents, known_kpis, tools=tools)
    return blueprint


def load_catalog(
    intents_path: str | Path | None = None,
    blueprints_dir: str | Path | None = None,
    tools_dir: str | Path | None = None,
    known_kpis: Iterable[str] | None = None,
) -> Catalog:
    """Load a catalogue; paths left out come from the packaged data.

    Users point telcoenv at their own intents or blueprints with these arguments and get the same
    validation as the packaged files. ``known_kpis`` (the KPI names blueprints may constrain)
    defaults to the packaged KPI catalogue, which the network domain samples from.
    """
    root = data_root()
    tools = load_tools(Path(tools_dir) if tools_dir else root / "tools")
    categories, intents = load_intents(
        Path(intents_path) if intents_path else root / "intents.yaml",
        "network",
        _parse_intent(tools),
    )
    blueprints = load_blueprints(
        Path(blueprints_dir) if blueprints_dir else root / "blueprints",
        intents,
        known_kpis,
        tools=tools,
    )
    return Catalog(categories=categories, intents=intents, blueprints=blueprints, tools=tools)


@cache
def network_catalog() -> Catalog:
    """The packaged catalogue, validated once per process and shared (and cached on disk
    until a packaged file changes: see :func:`telcoenv.datafiles.cached_build`)."""
    from telcoenv.domains.network.kpis import kpi_definitions

    return cached_build("network_catalog", lambda: load_catalog(known_kpis=kpi_definitions().kpis))
