"""Load and validate intents.yaml, blueprints/ and tools/ into an immutable :class:`Catalog`.

Every file is checked against a JSON Schema shipped in ``telcoenv/schemas`` and then against the
rules a schema cannot express (a dependency names an existing KPI, a gold chain only uses known
tools with valid arguments, ...). Any problem raises :class:`~telcoenv.errors.CatalogError`
naming the file, the field and what is wrong.

>>> catalog = default_catalog()
>>> len(catalog.intents), sum(len(b) for b in catalog.blueprints.values()), len(catalog.tools)
(20, 49, 16)
"""

from __future__ import annotations

import json
import math
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema
import yaml
from pydantic import ValidationError

from telcoenv.errors import CatalogError, ToolError, UnknownIntentError
from telcoenv.specs import Blueprint, CareIntent, Intent, KPIConstraint, ToolSpec

if TYPE_CHECKING:
    from telcoenv.domains.network.kpis import KPIInfo

# The network domain's vocabulary (telcoenv.domains.network) is imported inside the functions
# that check against it: that package imports this module.

# Names a gold-chain argument template may use; filled per episode (see telcoenv.scenario).
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
# Corrective values computed per episode (see telcoenv.domains.network.topology.gold_fix).
HEALTHY_RESOLVERS = frozenset({"$free_pci"})
# Template fields of customer-care gold chains and answers, with a plausible value each (used
# to validate the templates against the BSS tool specs at load time).
CARE_EXAMPLE_VALUES: dict[str, Any] = {
    "msisdn": "966512345678",
    "customer_id": "C000001",
    "account_id": "A000002",
    "group_id": "FG000040",
    "period": "2026-09",
    "plan_id": "POST-PLUS",
    "addon_id": "ROAM-EU-14",
    "zone": "EUROPE",
    "start_date": "2026-12-05",
    "subscription_id": "SUB000001",
    "email": "new.address@mail.example.sa",
    "ticket_summary": "Billing run fired twice for the period.",
    "roaming_charge": 117.2,
    "duplicate_amount": 414.0,
    "failure_reason": "card expired",
    "average_data_gb": 22.83,
    "family_data_gb": 61.4,
    "balance": 467.94,
    "months": 12,
    "destination": "France",
    "need_gb": 4,
    "budget": 150,
}
# Names a resolution template may use.
RESOLUTION_FIELDS = frozenset(
    {"cell_id", "cluster_id", "window", "slice_id", "config_id", "changes"}
)


def data_root() -> Path:
    """Folder that holds intents.yaml, blueprints/ and tools/.

    An installed wheel carries them in ``telcoenv/_data``; a source checkout has them next to the
    package.
    """
    package_dir = Path(__file__).resolve().parent
    packaged = package_dir / "_data"
    return packaged if (packaged / "intents.yaml").is_file() else package_dir.parent


@cache
def _schema_validator(name: str) -> jsonschema.protocols.Validator:
    schema = json.loads(resources.files("telcoenv.schemas").joinpath(name).read_text("utf-8"))
    return jsonschema.Draft202012Validator(schema)


def _field(path: Iterable[Any]) -> str:
    return ".".join(str(p) for p in path)


def validate_document(document: Any, schema: str, file: str) -> None:
    """Check ``document`` against a packaged JSON Schema; raise CatalogError on the first error."""
    errors = sorted(
        _schema_validator(schema).iter_errors(document),
        key=lambda e: (list(map(str, e.absolute_path)), e.message),
    )
    if errors:
        error = errors[0]
        raise CatalogError(file, _field(error.absolute_path), error.message)


def read_yaml(path: Path) -> Any:
    """Parse a YAML file; a syntax error becomes a CatalogError with the line and column."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogError(str(path), "", f"cannot read file: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise CatalogError(
            str(path), f"byte {exc.start}", "not UTF-8 text: save the file as UTF-8"
        ) from exc
    return parse_yaml(text, str(path))


def parse_yaml(text: str, file: str) -> Any:
    """Parse YAML text; a syntax error becomes a CatalogError with the line and column."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise CatalogError(file, where, f"invalid YAML: {getattr(exc, 'problem', exc)}") from exc


def parse_model(model: type, data: Any, file: str) -> Any:
    """Validate ``data`` as ``model``; the first error becomes a CatalogError naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise CatalogError(file, _field(first["loc"]), first["msg"]) from exc


def template_fields(template: str) -> set[str]:
    """The ``{name}`` fields of a str.format template (raises ValueError when malformed)."""
    return {
        name.split(".")[0].split("[")[0]
        for _, name, _, _ in string.Formatter().parse(template)
        if name is not None
    }


@dataclass(frozen=True)
class Catalog:
    """The validated data of a domain: categories, intents, blueprints per intent and tools.

    Instances are immutable and shared by every environment that uses them.
    """

    categories: Mapping[str, Any]
    intents: tuple[Intent, ...]
    blueprints: Mapping[str, tuple[Blueprint, ...]]
    tools: Mapping[str, ToolSpec]

    def intent(self, name: str) -> Intent:
        """Look an intent up by key (``BEAM_MISALIGNMENT``) or env name (``beam_misalignment``)."""
        for intent in self.intents:
            if name in (intent.key, intent.env_name):
                return intent
        valid = ", ".join(i.env_name for i in self.intents)
        raise UnknownIntentError(f"unknown intent {name!r}; valid intents: {valid}")

    def blueprint(self, blueprint_id: str) -> Blueprint:
        for family in self.blueprints.values():
            for blueprint in family:
                if blueprint.blueprint_id == blueprint_id:
                    return blueprint
        valid = ", ".join(b.blueprint_id for f in self.blueprints.values() for b in f)
        raise UnknownIntentError(f"unknown blueprint {blueprint_id!r}; valid blueprints: {valid}")

    def openai_tools(self) -> list[dict[str, Any]]:
        """All tool specs (core, distractor and submit_resolution) in OpenAI format, by name."""
        return [self.tools[name].openai() for name in sorted(self.tools)]


def load_tools(tools_dir: Path, domain: str = "network") -> dict[str, ToolSpec]:
    """Load and validate every ``*.json`` tool spec of a folder; keep those of ``domain``.

    Every spec is validated, whatever its domain; a spec without ``x-telcoenv.domain`` belongs
    to the network domain, one with ``"all"`` (``submit_resolution``) to every domain.
    """
    if not tools_dir.is_dir():
        raise CatalogError(str(tools_dir), "", "tools folder not found")
    tools: dict[str, ToolSpec] = {}
    for path in sorted(tools_dir.glob("*.json")):
        file = str(path)
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise CatalogError(
                file, f"line {exc.lineno}, column {exc.colno}", f"invalid JSON: {exc.msg}"
            ) from exc
        validate_document(document, "tool.schema.json", file)
        function = document["function"]
        if function["name"] != path.stem:
            raise CatalogError(
                file,
                "function.name",
                f"{function['name']!r} does not match the file name {path.stem!r}",
            )
        try:
            jsonschema.Draft202012Validator.check_schema(function["parameters"])
        except jsonschema.SchemaError as exc:
            raise CatalogError(
                file,
                "function.parameters." + _field(exc.absolute_path),
                f"not a valid JSON Schema: {exc.message}",
            ) from exc
        spec = ToolSpec(
            name=path.stem,
            description=function["description"],
            parameters=function["parameters"],
            **document["x-telcoenv"],
        )
        if spec.domain in (domain, "all"):
            tools[path.stem] = spec
    if not tools:
        raise CatalogError(str(tools_dir), "", f"no {domain} tool spec (*.json) found")
    return tools


def _fill_gold_arguments(value: Any, sample: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        if value.startswith("{") and value.endswith("}") and value[1:-1] in sample:
            return sample[value[1:-1]]
        return value.format_map(sample)
    if isinstance(value, dict):
        return {k: _fill_gold_arguments(v, sample) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill_gold_arguments(v, sample) for v in value]
    return value


def fill_gold_arguments(arguments: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """Fill a gold step's argument templates with episode values.

    A string that is exactly ``"{name}"`` takes the value itself (any type); other strings are
    formatted.

    >>> fill_gold_arguments({"cell_id": "{cell_id}", "kpi": "DL", "note": "on {cell_id}"},
    ...                     {"cell_id": "NR-URB-MACRO-1"})
    {'cell_id': 'NR-URB-MACRO-1', 'kpi': 'DL', 'note': 'on NR-URB-MACRO-1'}
    """
    return _fill_gold_arguments(dict(arguments), values)


def _example_gold_values(intent: Intent) -> dict[str, Any]:
    """Plausible episode values used to validate gold argument templates at load time."""
    # "$free_pci"-style resolvers are computed per episode: any legal value stands in here.
    fix = {
        name: 1 if str(p.healthy).startswith("$") else p.healthy
        for name, p in intent.fault.parameters.items()
        if name != "operational_state"
    }
    return {
        "cell_id": "NR-URB-MACRO-1",
        "cluster_id": "CL-URB-001",
        "window": "3h",
        "slice_id": "SL-EMBB-01",
        "config_id": "CFG-NR-URB-MACRO-1-BASELINE",
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
        for value in template_strings(step.arguments):
            try:
                bad = template_fields(value) - GOLD_ARGUMENT_FIELDS
            except ValueError as exc:
                raise CatalogError(
                    file,
                    f"{where}.gold_chain.{step_no}.arguments",
                    f"malformed template {value!r}: {exc}",
                ) from exc
            if bad:
                raise CatalogError(
                    file,
                    f"{where}.gold_chain.{step_no}.arguments",
                    f"unknown template field(s) {sorted(bad)}; allowed: "
                    f"{sorted(GOLD_ARGUMENT_FIELDS)}",
                )
    for part in ("root_cause", "corrective_action"):
        for lang in ("en", "ar"):
            text = getattr(getattr(intent.resolution, part), lang)
            try:
                bad = template_fields(text) - RESOLUTION_FIELDS
            except ValueError as exc:
                raise CatalogError(
                    file, f"{where}.resolution.{part}.{lang}", f"malformed template {text!r}: {exc}"
                ) from exc
            if bad:
                raise CatalogError(
                    file,
                    f"{where}.resolution.{part}.{lang}",
                    f"unknown template field(s) {sorted(bad)}; allowed: "
                    f"{sorted(RESOLUTION_FIELDS)}",
                )


def template_strings(value: Any) -> Iterable[str]:
    """Every string inside a nested argument structure (where templates may be)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from template_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from template_strings(v)


def _check_gold_chain(
    intent: Intent | CareIntent,
    tools: Mapping[str, ToolSpec],
    file: str,
    index: int,
    values: Mapping[str, Any],
) -> None:
    for step_no, step in enumerate(intent.gold_chain):
        field = f"intents.{index}.gold_chain.{step_no}"
        spec = tools.get(step.tool)
        if spec is None:
            raise CatalogError(
                file, field + ".tool", f"unknown tool {step.tool!r}; known tools: {sorted(tools)}"
            )
        if spec.kind != "core":
            raise CatalogError(
                file,
                field + ".tool",
                f"{step.tool!r} is a {spec.kind} tool, a gold chain may only use core tools",
            )
        arguments = fill_gold_arguments(step.arguments, values)
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(spec.parameters).iter_errors(arguments)
        )
        if error is not None:
            raise CatalogError(
                file,
                field + ".arguments." + _field(error.absolute_path),
                f"does not match the {step.tool} spec: {error.message}",
            )


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
        if parameter.faulty is not None:
            _check_fault_values(parameter.faulty, settable[name], file, field + ".faulty")
        if isinstance(parameter.healthy, str) and parameter.healthy.startswith("$"):
            if parameter.healthy not in HEALTHY_RESOLVERS:
                raise CatalogError(
                    file,
                    field + ".healthy",
                    f"unknown resolver {parameter.healthy!r}; known: {sorted(HEALTHY_RESOLVERS)}",
                )
            continue
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(settable[name]).iter_errors(parameter.healthy)
        )
        if error is not None:
            raise CatalogError(file, field + ".healthy", error.message)


def load_intents(
    path: Path, tools: Mapping[str, ToolSpec], domain: str = "network"
) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """Load and validate the intent taxonomy file; return ``domain``'s categories and intents.

    Keys and environment names are unique across domains (they name Gymnasium ids); ``tools``
    are the domain's tools, which its gold chains must use.
    """
    file = str(path)
    document = read_yaml(path)
    validate_document(document, "intents.schema.json", file)
    categories = document["categories"]
    intents: list[Any] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(document["intents"]):
        for attr in ("key", "env_name"):
            value = raw[attr]
            if value in seen:
                raise CatalogError(
                    file,
                    f"intents.{index}.{attr}",
                    f"duplicate {attr} {value!r} (also intents.{seen[value]})",
                )
            seen[value] = index
        if raw.get("domain", "network") != domain:
            continue
        if raw["category"] not in categories:
            raise CatalogError(
                file,
                f"intents.{index}.category",
                f"unknown category {raw['category']!r}; known: {sorted(categories)}",
            )
        if domain == "bss":
            intent = parse_model(CareIntent, raw, file)
            _check_care_templates(intent, file, index)
            _check_gold_chain(intent, tools, file, index, CARE_EXAMPLE_VALUES)
        else:
            intent = parse_model(Intent, raw, file)
            _check_templates(intent, file, index)
            _check_fault(intent, tools, file, index)
            _check_gold_chain(intent, tools, file, index, _example_gold_values(intent))
        intents.append(intent)
    used = {intent.category for intent in intents}
    return {k: v for k, v in categories.items() if k in used}, tuple(intents)


def _check_care_templates(intent: CareIntent, file: str, index: int) -> None:
    """Every template field of a care intent's chain, answer and opening is a known one."""
    texts = [
        (f"gold_chain.{n}.arguments", value)
        for n, step in enumerate(intent.gold_chain)
        for value in template_strings(step.arguments)
    ]
    texts += [("answer", intent.answer)] if intent.answer else []
    texts += [(f"customer.{lang}", getattr(intent.customer, lang)) for lang in ("en", "ar")]
    for where, text in texts:
        try:
            bad = template_fields(text) - set(CARE_EXAMPLE_VALUES)
        except ValueError as exc:
            raise CatalogError(
                file, f"intents.{index}.{where}", f"malformed template {text!r}: {exc}"
            ) from exc
        if bad:
            raise CatalogError(
                file,
                f"intents.{index}.{where}",
                f"unknown template field(s) {sorted(bad)}; allowed: {sorted(CARE_EXAMPLE_VALUES)}",
            )


def load_care_intents(path: str | Path | None = None) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """The customer-care (BSS) categories and intents of ``intents.yaml``, validated against
    the BSS tool specs."""
    root = data_root()
    tools = load_tools(root / "tools", domain="bss")
    return load_intents(Path(path) if path else root / "intents.yaml", tools, domain="bss")


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


def _check_readouts(blueprint: Blueprint, schemas: Mapping[str, Any], file: str) -> None:
    """A KPI whose sampled value becomes a parameter value must yield legal values only."""
    from telcoenv.domains.network.parameters import KPI_READOUTS

    for kpi, parameter in KPI_READOUTS.items():
        rule = blueprint.constraints.get(kpi)
        if rule is None or parameter not in schemas:
            continue
        schema, field = schemas[parameter], f"constraints.{kpi}"
        if "enum" in schema:  # sampled values snap to the legal ones inside the range
            if not any(rule.min <= value <= rule.max for value in schema["enum"]):
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

    for name, values in blueprint.fault.items():
        if name == "operational_state":
            _check_states(values, file, f"fault.{name}")
        elif name in schemas:
            _check_fault_values(values, schemas[name], file, f"fault.{name}")
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
    from telcoenv.domains.network.kpis import kpi_catalogue
    from telcoenv.domains.network.parameters import parse_window

    if blueprint.intent not in intents:
        raise CatalogError(file, "intent", f"unknown intent {blueprint.intent!r}")
    catalogue = kpi_catalogue().kpis
    known = set(known_kpis) if known_kpis is not None else set(catalogue)
    for name, rule in blueprint.constraints.items():
        field = f"constraints.{name}"
        if name not in known:
            raise CatalogError(file, field, f"unknown KPI {name!r}: add it to the KPI catalogue")
        if not rule.min < rule.max:
            raise CatalogError(file, field, f"min ({rule.min:g}) must be below max ({rule.max:g})")
        if name in catalogue:
            _check_physical_range(rule, catalogue[name], file, field)
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
    """Load ``<folder>/<INTENT>/*.yaml`` files; every intent needs at least one blueprint.

    The file name is free (the published release names its files in lower case); the folder
    must be the blueprint's intent and blueprint ids must be unique.
    """
    if not folder.is_dir():
        raise CatalogError(str(folder), "", "blueprints folder not found")
    by_key = {intent.key: intent for intent in intents}
    known = list(known_kpis) if known_kpis is not None else None
    found: dict[str, list[Blueprint]] = {intent.key: [] for intent in intents}
    ids: dict[str, str] = {}
    for path in sorted(folder.glob("*/*.yaml")):
        blueprint = load_blueprint(path, by_key, known, tools=tools)
        if blueprint.blueprint_id in ids:
            raise CatalogError(
                str(path), "blueprint_id", f"duplicate id (also {ids[blueprint.blueprint_id]})"
            )
        ids[blueprint.blueprint_id] = str(path)
        found[blueprint.intent].append(blueprint)
    missing = [key for key, family in found.items() if not family]
    if missing:
        raise CatalogError(str(folder), "", f"no blueprint for intent(s) {missing}")
    return {key: tuple(family) for key, family in found.items()}


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
    if blueprint.intent != path.parent.name:
        raise CatalogError(
            file, "intent", f"{blueprint.intent!r} does not match the folder {path.parent.name!r}"
        )
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
        Path(intents_path) if intents_path else root / "intents.yaml", tools
    )
    blueprints = load_blueprints(
        Path(blueprints_dir) if blueprints_dir else root / "blueprints",
        intents,
        known_kpis,
        tools=tools,
    )
    return Catalog(categories=categories, intents=intents, blueprints=blueprints, tools=tools)


@cache
def default_catalog() -> Catalog:
    """The packaged catalogue, loaded and validated once per process and shared."""
    from telcoenv.domains.network.kpis import kpi_catalogue

    return load_catalog(known_kpis=kpi_catalogue().kpis)
