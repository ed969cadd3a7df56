"""Read the published TelcoAgent-Bench release and re-score its stored predictions.

The release (github.com/BrahiM-Mefgouda/TelcoAgent) has three folders:

* ``BLUEPRINTS/<INTENT>/*.yaml`` -- blueprints; they load as telcoenv blueprints;
* ``TelcoAgent-Bench/<INTENT>/<BP>/<id>.json`` (``DataGeneration/`` in some revisions) --
  samples: bilingual query, dialogue, gold path, gold summary;
* ``TelcoAgent-Metrics/<INTENT>/<BP>/<id>.json`` -- evaluation records with, per model and
  language, the predicted intent, tool chain and summary and the stored scores.

Per-model values are keyed by Ollama tags, nested at the tag's first dot (``qwen2.5:7b`` is
stored as ``{"qwen2": {"5:7b": ...}}``): :func:`model_entries` rebuilds the tags. Stray
``*.json.lock`` files and scripts in the folders are skipped.

The release is read as published: :func:`load_release_blueprints` repairs the one YAML defect
its blueprint files hold (``throughput_p50_mbps:{ min: 0,  max: 5 }``, no space after a key's
colon) and skips a blueprint that still fails, each time with a one-line warning naming the file.
Blueprints feed no metric (they are only counted). A malformed sample or evaluation file (not
UTF-8, not JSON, or a field of the wrong shape) stops the reading instead, with a
:class:`~telcoenv.errors.CatalogError` naming the file and the JSON path of the field: skipping
it would silently change the means :func:`rescore` compares with the stored ones.

:func:`rescore` recomputes MSC, EAP and SAS per sample from the stored chains and compares them
with the stored values (they must be equal, to the last bit), and computes GPC-0, GPC-1, SD and
BRS per blueprint, per model and language.
"""

from __future__ import annotations

import os
import re
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from telcoenv.datafiles import parse_yaml, read_json, read_yaml
from telcoenv.domains.network.kpis import kpi_definitions
from telcoenv.domains.network.loading import load_blueprint, network_catalog
from telcoenv.domains.network.models import Blueprint
from telcoenv.errors import CatalogError, ReleaseWarning
from telcoenv.metrics.reliability import ChainRecord, reliability
from telcoenv.metrics.sequence import eap, msc, sas

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

SAMPLE_DIRS = ("TelcoAgent-Bench", "DataGeneration")
METRICS_DIR = "TelcoAgent-Metrics"
LANGUAGE_KEYS = {"En": "en", "Ar": "ar"}
# A block mapping key glued to a flow value (``key:{`` or ``key:[``): YAML reads ``key:{`` as
# the start of a plain scalar and then fails on the next ``: ``.
_GLUED_FLOW_VALUE = re.compile(r"^(\s*[A-Za-z_][\w.-]*):(?=[{\[])", re.MULTILINE)
T = TypeVar("T")
S = TypeVar("S", bound="_Shape")


def _warn(message: str) -> None:
    warnings.warn(message, ReleaseWarning, stacklevel=3)  # at the caller of the loader


class ReleaseSample(BaseModel):
    """One benchmark sample of the release."""

    model_config = ConfigDict(frozen=True)

    sample_id: str
    intent: str
    blueprint_id: str
    query: dict[str, str]
    gold_chain: list[str]
    gold_summary: dict[str, str]


class ModelPrediction(BaseModel):
    """What one model predicted for one sample in one language, with the stored scores."""

    model_config = ConfigDict(frozen=True)

    model: str
    language: str
    predicted_chain: list[str]
    stored_msc: float | None
    stored_eap: float | None
    stored_sas: float | None
    intent_with_list: str | None = None
    intent_without_list: str | None = None
    stored_ira_with_list: float | None = None
    stored_ira_without_list: float | None = None
    summary: str | None = None
    stored_ra: float | None = None


class EvaluationRecord(BaseModel):
    """One evaluation file: a sample's gold answers and every model's predictions."""

    model_config = ConfigDict(frozen=True)

    sample_id: str
    intent: str
    blueprint_id: str
    gold_label: str
    gold_chain: list[str]
    predictions: list[ModelPrediction]
    file: str = ""  # the file it was read from, for error messages


def model_entries(node: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Walk a per-model mapping and yield ``(full tag, entry)`` pairs.

    A level whose values hold ``En``/``Ar`` keys is a model entry; any other mapping is the
    continuation of a tag split at its first dot.

    >>> dict(model_entries({"llama3:8b": {"En": 1}, "qwen2": {"5:7b": {"En": 2, "Ar": 3}}}))
    {'llama3:8b': {'En': 1}, 'qwen2.5:7b': {'En': 2, 'Ar': 3}}
    """
    for key, value in node.items():
        if not isinstance(value, Mapping):
            continue
        if set(value) & set(LANGUAGE_KEYS):
            yield prefix + key, value
        else:
            yield from model_entries(value, f"{prefix}{key}.")


def _per_model(node: Any) -> Any:
    """Rebuild the tags of a per-model mapping (:func:`model_entries`) and keep each entry's
    ``En``/``Ar`` values, so that validation reports ``Tool.Predict.qwen2.5:7b.En``; anything
    but a mapping is left for validation to refuse."""
    if not isinstance(node, Mapping):
        return node
    return {
        tag: {key: value for key, value in entry.items() if key in LANGUAGE_KEYS}
        for tag, entry in model_entries(node)
    }


# Model tag -> "En"/"Ar" -> value, as stored nested at the tag's first dot.
PerModel = Annotated[dict[str, dict[str, T]], BeforeValidator(_per_model)]


class _Shape(BaseModel):
    """A part of a release JSON file, as far as this module reads it (other keys ignored).

    Strict: a JSON file's values are what they are, a ``"0.5"`` is not a stored score.
    """

    model_config = ConfigDict(frozen=True, strict=True)


class _StoredScores(_Shape):
    MSC: float | None = None
    EAP: float | None = None
    SAS: float | None = None


class _ToolSection(_Shape):
    GroundTruth: list[str]
    Predict: PerModel[list[str]] = Field(default_factory=dict)
    Score: PerModel[_StoredScores] = Field(default_factory=dict)


class _ByCondition(_Shape, Generic[T]):
    """Intent predictions or scores, with and without the list of intents in the prompt."""

    WithList: PerModel[T] = Field(default_factory=dict)
    WithoutList: PerModel[T] = Field(default_factory=dict)


class _IntentSection(_Shape):
    GroundTruthKey: str | None = None
    GroundTruthLabel: str = ""
    Predict: _ByCondition[str | None] = Field(default_factory=_ByCondition[str | None])
    Score: _ByCondition[float | None] = Field(default_factory=_ByCondition[float | None])


class _ResolutionSection(_Shape):
    Predict: PerModel[str | None] = Field(default_factory=dict)
    Score: PerModel[float | None] = Field(default_factory=dict)


class _EvaluationFile(_Shape):
    """A ``TelcoAgent-Metrics`` file."""

    Tool: _ToolSection
    Intent: _IntentSection = Field(default_factory=_IntentSection)
    Resolution: _ResolutionSection = Field(default_factory=_ResolutionSection)


class _GoldStep(_Shape):
    tool: str


class _SampleFile(_Shape):
    """A ``TelcoAgent-Bench`` file."""

    id: str | None = None
    intent: str
    blueprint_id: str
    query: dict[str, str]
    gold_path: list[_GoldStep]
    gold_summary: dict[str, str]


_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (type(None), "null"),
    (bool, "a boolean"),
    ((int, float), "a number"),
    (str, "a string"),
    (list, "an array"),
    (dict, "an object"),
)
_EXPECTED = {
    "model_type": "an object",
    "dict_type": "an object",
    "list_type": "an array",
    "string_type": "a string",
    "float_type": "a number",
}


def _json_type(value: Any) -> str:
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), "a value")


def _problem(error: ErrorDetails) -> str:
    """A validation error in JSON's words (pydantic names Python types and our classes)."""
    if error["type"] == "missing":
        return "missing"
    expected = _EXPECTED.get(error["type"])
    if expected is None:
        return error["msg"]
    return f"expected {expected}, got {_json_type(error['input'])}"


def _parse(shape: type[S], data: Any, path: Path) -> S:
    """Validate ``data`` read from ``path`` as ``shape``; the first problem becomes a
    CatalogError naming the file and the JSON path of the field (``Tool.GroundTruth.0``)."""
    try:
        return shape.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        field = ".".join(map(str, errors[0]["loc"]))
        raise CatalogError(str(path), field, _problem(errors[0]) + more) from exc


def _release_folder(root: str | Path) -> Path:
    """The release's folder; one that does not exist is named as such, not by the first
    sub-folder missing from it."""
    folder = Path(root)
    if not folder.is_dir():
        problem = "not a folder" if folder.exists() else "no such release folder"
        raise CatalogError(str(folder), "", problem)
    return folder


def _json_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*/*/*.json") if p.is_file())


def repair_glued_flow_values(text: str) -> tuple[str, list[int]]:
    """Insert the missing space in ``key:{ ... }`` / ``key:[ ... ]``; return the text and the
    (1-based) numbers of the lines repaired.

    >>> repair_glued_flow_values("a: 1\\n  rate:{ min: 0,  max: 5 }\\n")
    ('a: 1\\n  rate: { min: 0,  max: 5 }\\n', [2])
    """
    lines = [text.count("\n", 0, match.start()) + 1 for match in _GLUED_FLOW_VALUE.finditer(text)]
    return _GLUED_FLOW_VALUE.sub(r"\1: ", text), lines


def _release_document(path: Path) -> tuple[Any, list[int]]:
    """A release YAML file's content and the lines repaired to parse it (see
    :func:`repair_glued_flow_values`); a file that does not parse even so raises its error."""
    try:
        return read_yaml(path), []
    except CatalogError as error:
        if not error.problem.startswith("invalid YAML"):
            raise
        repaired, lines = repair_glued_flow_values(path.read_text(encoding="utf-8"))
        if not lines:
            raise
        try:
            return parse_yaml(repaired, str(path)), lines
        except CatalogError:
            raise error from None  # the file's own line and column, not the repaired text's


def load_release_blueprints(
    root: str | Path, warn: Callable[[str], None] = _warn
) -> list[Blueprint]:
    """Load ``BLUEPRINTS/<INTENT>/*.yaml`` with telcoenv's validation, leniently.

    A blueprint whose YAML has a key glued to its flow value (``key:{ min: 0 }``, as in files
    of the published release) is repaired; one that still fails (YAML or validation) is
    skipped. Each repair and each skipped file is reported to ``warn`` in one line naming the
    file (default: a :class:`ReleaseWarning`). A missing BLUEPRINTS folder is an error.
    """
    folder = _release_folder(root) / "BLUEPRINTS"
    if not folder.is_dir():
        raise CatalogError(str(folder), "", "no BLUEPRINTS folder in the release")
    catalog = network_catalog()
    intents = {intent.key: intent for intent in catalog.intents}
    known = kpi_definitions().kpis
    blueprints = []
    for path in sorted(folder.glob("*/*.yaml")):
        try:
            document, repaired = _release_document(path)
            if repaired:
                warn(
                    f"{path}: line {', '.join(map(str, repaired))}: repaired invalid YAML "
                    "(no space after a key's colon)"
                )
            blueprints.append(
                load_blueprint(path, intents, known, tools=catalog.tools, document=document)
            )
        except CatalogError as error:
            warn(f"skipped {error}".replace("\n", " "))
    return blueprints


def load_samples(root: str | Path) -> list[ReleaseSample]:
    """Load the benchmark samples (``TelcoAgent-Bench/`` or ``DataGeneration/``)."""
    release = _release_folder(root)
    folder = next((release / d for d in SAMPLE_DIRS if (release / d).is_dir()), None)
    if folder is None:
        raise CatalogError(str(root), "", f"no samples folder ({' or '.join(SAMPLE_DIRS)})")
    return [_sample(path) for path in _json_files(folder)]


def _sample(path: Path) -> ReleaseSample:
    data = _parse(_SampleFile, read_json(path), path)
    return ReleaseSample(
        sample_id=data.id if data.id is not None else path.stem,
        intent=data.intent,
        blueprint_id=data.blueprint_id,
        query=data.query,
        gold_chain=[step.tool for step in data.gold_path],
        gold_summary=data.gold_summary,
    )


def _stored(per_model: Mapping[str, Mapping[str, T]], model: str, key: str) -> T | None:
    return per_model.get(model, {}).get(key)


def _predictions(data: _EvaluationFile) -> list[ModelPrediction]:
    """One prediction per model and language with a stored chain, with what else is stored."""
    tool, intent, resolution = data.Tool, data.Intent, data.Resolution
    predictions = []
    for model, chains in tool.Predict.items():
        for key, language in LANGUAGE_KEYS.items():
            if key not in chains:
                continue
            scores = _stored(tool.Score, model, key) or _StoredScores()
            predictions.append(
                ModelPrediction(
                    model=model,
                    language=language,
                    predicted_chain=chains[key],
                    stored_msc=scores.MSC,
                    stored_eap=scores.EAP,
                    stored_sas=scores.SAS,
                    intent_with_list=_stored(intent.Predict.WithList, model, key),
                    intent_without_list=_stored(intent.Predict.WithoutList, model, key),
                    stored_ira_with_list=_stored(intent.Score.WithList, model, key),
                    stored_ira_without_list=_stored(intent.Score.WithoutList, model, key),
                    summary=_stored(resolution.Predict, model, key),
                    stored_ra=_stored(resolution.Score, model, key),
                )
            )
    return predictions


def load_evaluations(root: str | Path) -> list[EvaluationRecord]:
    """Load every evaluation record of ``TelcoAgent-Metrics/`` (stray files skipped); a folder
    without any is an error, as is a malformed record (see the module's docstring)."""
    folder = _release_folder(root) / METRICS_DIR
    if not folder.is_dir():
        raise CatalogError(str(folder), "", f"no {METRICS_DIR} folder in the release")
    paths = _json_files(folder)
    if not paths:
        raise CatalogError(str(folder), "", "no evaluation records (<INTENT>/<BP>/<id>.json)")
    return [_evaluation(path) for path in paths]


def _evaluation(path: Path) -> EvaluationRecord:
    data = _parse(_EvaluationFile, read_json(path), path)
    return EvaluationRecord(
        sample_id=path.stem,
        intent=data.Intent.GroundTruthKey or path.parent.parent.name,
        blueprint_id=path.parent.name,
        gold_label=data.Intent.GroundTruthLabel,
        gold_chain=data.Tool.GroundTruth,
        predictions=_predictions(data),
        file=str(path),
    )


class ModelLanguageScores(BaseModel):
    """Recomputed and stored scores of one model in one language."""

    model_config = ConfigDict(frozen=True)

    model: str
    language: str
    samples: int
    msc: float
    eap: float
    sas: float
    stored_msc: float | None
    stored_eap: float | None
    stored_sas: float | None
    exact_matches: int
    mismatches: list[str]
    gpc0: float
    gpc1: float
    sd: float
    brs: float
    stored_ira_with_list: float | None
    stored_ira_without_list: float | None
    stored_ra: float | None


class RescoreReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    records: int
    weights: tuple[float, float, float]
    rows: list[ModelLanguageScores]

    @property
    def all_exact(self) -> bool:
        """True when every recomputed MSC, EAP and SAS equals its stored value exactly."""
        return all(not row.mismatches for row in self.rows)

    def markdown(self) -> str:
        """The report as a Markdown table (recomputed / stored)."""
        lines = [
            "| model | lang | n | MSC | EAP | SAS | exact | GPC-0 | GPC-1 | SD | BRS |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in self.rows:

            def pair(ours: float, stored: float | None) -> str:
                return f"{ours:.3f} / {'-' if stored is None else f'{stored:.3f}'}"

            lines.append(
                f"| {r.model} | {r.language} | {r.samples} | {pair(r.msc, r.stored_msc)} | "
                f"{pair(r.eap, r.stored_eap)} | {pair(r.sas, r.stored_sas)} | "
                f"{r.exact_matches}/{r.samples} | {r.gpc0:.3f} | {r.gpc1:.3f} | {r.sd:.3f} | "
                f"{r.brs:.3f} |"
            )
        return "\n".join(lines)


def _origin(records: Sequence[EvaluationRecord]) -> str:
    """Where ``records`` come from, for an error message: their file or common folder."""
    files = [record.file for record in records if record.file]
    return os.path.commonpath(files) if files else "the evaluation records given"


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return fmean(present) if present else None


def rescore(
    records: str | Path | Sequence[EvaluationRecord], weights: str | Sequence[float] = "equal"
) -> RescoreReport:
    """Recompute MSC/EAP/SAS per sample and GPC-0/GPC-1/SD/BRS per blueprint, per model and
    language, next to the stored values (means over samples; reliability means over blueprints).
    """
    if isinstance(records, str | Path):
        records = load_evaluations(records)
    grouped: dict[tuple[str, str], list[tuple[EvaluationRecord, ModelPrediction]]] = defaultdict(
        list
    )
    for record in records:
        for prediction in record.predictions:
            grouped[(prediction.model, prediction.language)].append((record, prediction))
    rows = []
    resolved = None
    for (model, language), items in sorted(grouped.items()):
        ours = [
            (
                msc(p.predicted_chain, r.gold_chain),
                eap(p.predicted_chain, r.gold_chain),
                sas(p.predicted_chain, r.gold_chain),
            )
            for r, p in items
        ]
        stored = [(p.stored_msc, p.stored_eap, p.stored_sas) for _, p in items]
        mismatches = [
            r.sample_id for (r, _), o, s in zip(items, ours, stored, strict=True) if tuple(o) != s
        ]
        report = reliability(
            [
                ChainRecord(r.blueprint_id, language, p.predicted_chain, r.gold_chain)
                for r, p in items
            ],
            weights=weights,
        )
        resolved = report.weights
        rows.append(
            ModelLanguageScores(
                model=model,
                language=language,
                samples=len(items),
                msc=fmean(o[0] for o in ours),
                eap=fmean(o[1] for o in ours),
                sas=fmean(o[2] for o in ours),
                stored_msc=_mean([s[0] for s in stored]),
                stored_eap=_mean([s[1] for s in stored]),
                stored_sas=_mean([s[2] for s in stored]),
                exact_matches=len(items) - len(mismatches),
                mismatches=mismatches,
                gpc0=report.mean_gpc0,
                gpc1=report.mean_gpc1,
                sd=report.mean_sd,
                brs=report.mean_brs,
                stored_ira_with_list=_mean([p.stored_ira_with_list for _, p in items]),
                stored_ira_without_list=_mean([p.stored_ira_without_list for _, p in items]),
                stored_ra=_mean([p.stored_ra for _, p in items]),
            )
        )
    if resolved is None:
        raise CatalogError(_origin(records), "", "no evaluation record with predictions")
    return RescoreReport(records=len(records), weights=tuple(resolved), rows=rows)
