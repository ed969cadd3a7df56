"""The domain-neutral half of loading data files into an immutable :class:`Catalog`.

Every file is checked against a JSON Schema shipped in ``telcoenv/schemas`` and then against the
rules a schema cannot express. This module holds what every domain shares: YAML and tool-spec
reading, the intent taxonomy walk, template and gold-chain checks against the tool specs and the
blueprint-folder walk. Each domain adds its own rules (``telcoenv.domains.network.loading``,
``telcoenv.domains.bss.blueprints``). Any problem raises :class:`~telcoenv.errors.CatalogError`
naming the file, the field and what is wrong.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import ValidationError

from telcoenv.datafiles import read_json, read_yaml
from telcoenv.errors import CatalogError, UnknownIntentError
from telcoenv.specs import TOOL_FORMATS, TOOL_SETS, ToolFormat, ToolSet, ToolSpec

if TYPE_CHECKING:
    import jsonschema


@cache
def _schema_validator(name: str) -> jsonschema.protocols.Validator:
    import jsonschema  # here, not at import: it costs start-up ~60 ms, cached catalogues skip it

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


def check_template(text: str, allowed: Collection[str], file: str, field: str) -> None:
    """Raise a CatalogError unless ``text`` is a well-formed template of ``allowed`` fields."""
    try:
        bad = template_fields(text) - set(allowed)
    except ValueError as exc:
        raise CatalogError(file, field, f"malformed template {text!r}: {exc}") from exc
    if bad:
        raise CatalogError(
            file, field, f"unknown template field(s) {sorted(bad)}; allowed: {sorted(allowed)}"
        )


@dataclass(frozen=True)
class Catalog:
    """The validated data of a domain: categories, intents, blueprints per intent and tools.

    Instances are immutable and shared by every environment that uses them.
    """

    categories: Mapping[str, Any]
    intents: tuple[Any, ...]  # the domain's intent models
    blueprints: Mapping[str, tuple[Any, ...]]  # per intent key, the domain's blueprint models
    tools: Mapping[str, ToolSpec]

    def intent(self, name: str) -> Any:
        """Look an intent up by key (``BEAM_MISALIGNMENT``) or env name (``beam_misalignment``)."""
        for intent in self.intents:
            if name in (intent.key, intent.env_name):
                return intent
        valid = ", ".join(i.env_name for i in self.intents)
        raise UnknownIntentError(f"unknown intent {name!r}; valid intents: {valid}")

    def blueprint(self, blueprint_id: str) -> Any:
        for family in self.blueprints.values():
            for blueprint in family:
                if blueprint.blueprint_id == blueprint_id:
                    return blueprint
        valid = ", ".join(b.blueprint_id for f in self.blueprints.values() for b in f)
        raise UnknownIntentError(f"unknown blueprint {blueprint_id!r}; valid blueprints: {valid}")

    def offered(self, tool_set: ToolSet = "all") -> list[str]:
        """The names of the tools an episode offers, sorted: every tool, or (``"core"``) all
        but the distractors."""
        return sorted(
            name
            for name, spec in self.tools.items()
            if tool_set == "all" or spec.kind != "distractor"
        )

    def openai_tools(
        self, tool_format: ToolFormat = "full", tool_set: ToolSet = "all"
    ) -> list[dict[str, Any]]:
        """The offered tool specs (core, distractor and submit_resolution; ``"core"``: no
        distractor) in OpenAI format, by name, ``full`` or ``compact``."""
        return [self.tools[name].openai(tool_format) for name in self.offered(tool_set)]

    def openai_tools_json(
        self, tool_format: ToolFormat = "full", tool_set: ToolSet = "all"
    ) -> bytes:
        """:meth:`openai_tools` as JSON, encoded once per format and tool set and shared by
        every environment of the catalogue (each reset decodes a fresh copy from it)."""
        return self._tools_json[tool_format, tool_set]

    @cached_property
    def _tools_json(self) -> dict[tuple[str, str], bytes]:
        return {
            (f, t): orjson.dumps(self.openai_tools(f, t)) for f in TOOL_FORMATS for t in TOOL_SETS
        }


def load_tools(tools_dir: Path, domain: str = "network") -> dict[str, ToolSpec]:
    """Load and validate every ``*.json`` tool spec of a folder; keep those of ``domain``.

    Every spec is validated, whatever its domain; a spec without ``x-telcoenv.domain`` belongs
    to the network domain, one with ``"all"`` (``submit_resolution``) to every domain.
    """
    import jsonschema  # here, not at import: it costs start-up ~60 ms, cached catalogues skip it

    if not tools_dir.is_dir():
        raise CatalogError(str(tools_dir), "", "tools folder not found")
    tools: dict[str, ToolSpec] = {}
    for path in sorted(tools_dir.glob("*.json")):
        file = str(path)
        document = read_json(path)
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
        unknown = set(spec.domain_fields) - set(function["parameters"].get("properties", {}))
        if unknown:
            raise CatalogError(
                file, "x-telcoenv.domain_fields", f"no such parameter {sorted(unknown)}"
            )
        if spec.domain in (domain, "all"):
            tools[path.stem] = spec.for_domain(domain)
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


def check_gold_chain(
    intent: Any,
    tools: Mapping[str, ToolSpec],
    file: str,
    index: int,
    values: Mapping[str, Any],
) -> None:
    import jsonschema  # here, not at import: it costs start-up ~60 ms, cached catalogues skip it

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


#: The event kinds every domain has (telcoenv.events); a domain adds its own.
GENERIC_EVENT_KINDS = ("call", "change", "remeasure")


def check_events(
    intent: Any,
    tools: Mapping[str, ToolSpec],
    file: str,
    index: int,
    values: Mapping[str, Any],
    kinds: Collection[str],
) -> None:
    """An intent's milestones and minefields: known kinds, the domain's tools, argument
    templates of the episode's values, unique names; a call event names its tool."""
    for field_name in ("milestones", "minefields"):
        names: set[str] = set()
        for number, event in enumerate(getattr(intent, field_name, ())):
            field = f"intents.{index}.{field_name}.{number}"
            if event.event not in kinds:
                raise CatalogError(
                    file, field + ".event", f"unknown event {event.event!r}; known: {sorted(kinds)}"
                )
            if event.name in names:
                raise CatalogError(file, field + ".name", f"{event.name!r} is listed twice")
            names.add(event.name)
            if event.event in ("call", "change") and event.tool is None:
                raise CatalogError(file, field, f"a {event.event} event names its tool")
            if event.tool is not None and event.tool not in tools:
                raise CatalogError(
                    file, field + ".tool", f"unknown tool {event.tool!r}; known: {sorted(tools)}"
                )
            for text in template_strings(event.arguments):
                check_template(text, values, file, field + ".with")


def load_intents(
    path: Path, domain: str, parse: Callable[[dict[str, Any], str, int], Any]
) -> tuple[dict[str, Any], tuple[Any, ...]]:
    """Load and validate the intent taxonomy file; return ``domain``'s categories and intents.

    Keys and environment names are unique across domains (they name Gymnasium ids); ``tools``
    are the domain's tools, which its gold chains must use. ``parse(raw, file, index)`` turns
    one of the domain's entries into its intent model, checking the domain's own rules.
    """
    file = str(path)
    document = read_yaml(path)
    validate_document(document, "intents.schema.json", file)
    check_intent_names(document["intents"], file)
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
        intents.append(parse(raw, file, index))
    used = {intent.category for intent in intents}
    return {k: v for k, v in categories.items() if k in used}, tuple(intents)


def check_intent_names(intents: Iterable[Mapping[str, Any]], file: str) -> None:
    """Every name of an intent (its key, labels and synonyms, in every domain) names it alone,
    compared as diagnoses are (:func:`telcoenv.metrics.diagnosis.form_key`): a synonym two
    intents share, or one that is another intent's label, would make a diagnosis name both."""
    from telcoenv.metrics.diagnosis import form_key  # the matcher's words: one normalisation

    owners: dict[tuple[str, ...], tuple[str, str]] = {}  # words -> intent key, field
    for index, raw in enumerate(intents):
        synonyms = raw.get("synonyms", {})
        names = [
            ("key", raw["key"]),
            *((f"label.{lang}", raw["label"][lang]) for lang in ("en", "ar")),
            *(
                (f"synonyms.{lang}.{n}", name)
                for lang in ("en", "ar")
                for n, name in enumerate(synonyms.get(lang, ()))
            ),
        ]
        for field, name in names:
            where = f"intents.{index}.{field}"
            words = form_key(name)
            if not words:
                raise CatalogError(file, where, f"{name!r} has no words once punctuation goes")
            owner, at = owners.setdefault(words, (raw["key"], where))
            if owner != raw["key"]:
                raise CatalogError(
                    file, where, f"{name!r} also names {owner} ({at}): a name names one intent"
                )


def check_intent_folder(blueprint: Any, path: Path) -> None:
    """A blueprint file sits in the folder of its intent (``<INTENT>/<name>.yaml``)."""
    if blueprint.intent != path.parent.name:
        raise CatalogError(
            str(path),
            "intent",
            f"{blueprint.intent!r} does not match the folder {path.parent.name!r}",
        )


def load_blueprint_folder(
    folder: Path, intents: Iterable[Any], load: Callable[[Path], Any], kind: str = ""
) -> dict[str, tuple[Any, ...]]:
    """Load ``<folder>/<INTENT>/*.yaml`` with ``load(path)``; blueprint ids must be unique and
    every intent needs one blueprint at least (``kind`` words the messages, e.g. "care "). The
    file name is free (the published release names its files in lower case)."""
    if not folder.is_dir():
        raise CatalogError(str(folder), "", f"{kind}blueprints folder not found")
    found: dict[str, list[Any]] = {intent.key: [] for intent in intents}
    ids: dict[str, str] = {}
    for path in sorted(folder.glob("*/*.yaml")):
        blueprint = load(path)
        if blueprint.blueprint_id in ids:
            raise CatalogError(
                str(path), "blueprint_id", f"duplicate id (also {ids[blueprint.blueprint_id]})"
            )
        ids[blueprint.blueprint_id] = str(path)
        found[blueprint.intent].append(blueprint)
    missing = [key for key, family in found.items() if not family]
    if missing:
        raise CatalogError(str(folder), "", f"no blueprint for {kind}intent(s) {missing}")
    return {key: tuple(family) for key, family in found.items()}
