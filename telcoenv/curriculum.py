"""A curriculum for training: rungs of difficulty, and tasks sampled by their measured success.

A policy learns nothing from a group of rollouts that all fail (or all succeed): GRPO's
advantages are then zero. A small model resolves no episode of the published setting, so it
starts lower: on a *ladder* of rungs, each a set of reset options (the difficulty knobs), from a
demonstration (the KPIs quoted, core tools only, the next gold call written out after every
step) to the hardest tier on a tight step budget. :class:`Curriculum` keeps each intent on a
rung and samples the intents whose recent success is strictly between 0 and 1 (online difficulty
filtering); an intent moves up once it succeeds often enough, down when it never does.

>>> curriculum = Curriculum("network", seed=0)
>>> task = curriculum.sample()
>>> task.rung_name, sorted(task.options)
('demonstration', ['difficulty', 'hints', 'intent', 'lang', 'max_steps', 'tool_set'])
>>> for _ in range(4):
...     curriculum.record(task, 1.0)
>>> curriculum.level(task.intent)  # four successes in a row: the intent moves up a rung
1

The knobs (reset options of :class:`~telcoenv.env.TelcoEnv`, also constructor arguments):

* ``difficulty``: how much the opening message gives away (``guided``, ``symptom``, ``noisy``).
* ``tool_set``: ``"core"`` leaves the distractor tools out; ``"all"`` offers them.
* ``hints``: after every observation, the next gold step's tool (``"tool"``) or its whole
  call (``"call"``: a demonstration); ``"none"`` by default.
* ``max_steps``: the step budget.
* ``intent_list`` is a knob too (the intent labels in the system prompt); the ladders keep it
  on, since trainers put the system prompt in the dataset row.

Use from TRL: ``trl_environment(..., curriculum=c)`` and :func:`telcoenv.integrations.trl.
curriculum_reward`; from verl: rows from :meth:`Curriculum.specs`, outcomes from the agent
loop's ``outcome_log`` (:meth:`Curriculum.record_log`). See docs/training.md.
"""

from __future__ import annotations

import json
import os
import statistics
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from telcoenv.domains import Domain, get_domain
from telcoenv.options import GUIDED, difficulties
from telcoenv.specs import LANGUAGES


@dataclass(frozen=True)
class Rung:
    """One level of difficulty: a name, what it changes, and its reset options."""

    name: str
    summary: str
    options: Mapping[str, Any]

    def fits(self, options: Mapping[str, Any]) -> bool:
        """Whether ``options`` (a row or an episode spec) are this rung's."""
        return all(options.get(k) == v for k, v in self.options.items())


#: Every rung, easiest first; a domain's ladder keeps those whose tier it offers.
RUNGS: tuple[Rung, ...] = (
    Rung(
        "demonstration",
        "the telling KPIs quoted, core tools only, and after every step the next gold call "
        "written out (then the intent to submit): learning the loop and the call format",
        {"difficulty": GUIDED, "tool_set": "core", "hints": "call", "max_steps": 20},
    ),
    Rung(
        "walkthrough",
        "the telling KPIs quoted, core tools only, and after every step a line naming the next "
        "step's tool: the arguments and the fix are the agent's",
        {"difficulty": GUIDED, "tool_set": "core", "hints": "tool", "max_steps": 20},
    ),
    Rung(
        "core_tools",
        "the telling KPIs quoted, core tools only, no hints",
        {"difficulty": GUIDED, "tool_set": "core", "hints": "none", "max_steps": 20},
    ),
    Rung(
        "guided",
        "the published benchmark's setting: the telling KPIs quoted, every tool (distractors too)",
        {"difficulty": GUIDED, "tool_set": "all", "hints": "none", "max_steps": 20},
    ),
    Rung(
        "symptom",
        "only what users or the customer see: the tools must tell the intents of a family apart",
        {"difficulty": "symptom", "tool_set": "all", "hints": "none", "max_steps": 20},
    ),
    Rung(
        "noisy",
        "as symptom, plus a red herring planted in the network",
        {"difficulty": "noisy", "tool_set": "all", "hints": "none", "max_steps": 20},
    ),
    Rung(
        "tight",
        "the domain's hardest tier in 12 steps (every gold chain fits, with a few to spare)",
        {"difficulty": "hardest", "tool_set": "all", "hints": "none", "max_steps": 12},
    ),
)


def ladder(domain: Domain | str = "network") -> tuple[Rung, ...]:
    """The rungs of a domain, easiest first: those of :data:`RUNGS` whose tier it offers, then
    ``tight`` on its hardest tier."""
    domain = get_domain(domain) if isinstance(domain, str) else domain
    tiers = difficulties(domain)
    rungs = [r for r in RUNGS if r.options["difficulty"] in tiers]
    tight = next(r for r in RUNGS if r.name == "tight")
    rungs.append(Rung(tight.name, tight.summary, {**tight.options, "difficulty": tiers[-1]}))
    return tuple(rungs)


@dataclass(frozen=True)
class Task:
    """One episode to play: an intent on a rung, a seed and a language.

    ``options`` are the reset options; ``row()`` is the same as a dataset row (``seed`` and
    the options), which TRL's ``reset(**row)`` and verl's episode specs read.
    """

    intent: str
    rung: int
    rung_name: str
    seed: int
    lang: str
    options: Mapping[str, Any] = field(repr=False)

    def row(self) -> dict[str, Any]:
        return {"seed": self.seed, **self.options}


@dataclass
class _Record:
    """The recent outcomes of one intent on one rung (success in [0, 1])."""

    outcomes: deque[float]
    episodes: int = 0


class Curriculum:
    """Tasks sampled by their measured success, intent by intent up a ladder of rungs.

    Args:
        domain: ``"network"``, ``"bss"`` or a :class:`~telcoenv.domains.Domain`.
        intents: the intents to train on (env names or keys; default: all of the domain's).
        langs: the languages drawn (default both).
        rungs: the ladder (default :func:`ladder` of the domain).
        window: how many recent episodes of an intent on a rung its success is measured on.
        min_episodes: episodes before an intent can move: until then it is explored.
        promote_at: the success rate (over the window) that moves an intent up a rung.
        demote: move an intent down a rung after a full window without a success.
        explore: the sampling weight of an intent whose recent success is 0 or 1 (those
            between weigh 1: online difficulty filtering keeps them, they teach).
        seed: seeds the curriculum's own generator (tasks, seeds and languages).

    Everything is deterministic given the seed and the outcomes recorded; ``state_dict`` and
    ``load_state_dict`` (``save``/``load``) carry it across a restart.
    """

    def __init__(
        self,
        domain: Domain | str = "network",
        *,
        intents: Sequence[str] | None = None,
        langs: Sequence[str] = LANGUAGES,
        rungs: Sequence[Rung] | None = None,
        window: int = 8,
        min_episodes: int = 4,
        promote_at: float = 0.75,
        demote: bool = True,
        explore: float = 0.1,
        seed: int = 0,
    ) -> None:
        self.domain = get_domain(domain) if isinstance(domain, str) else domain
        catalog = self.domain.catalog
        chosen = intents if intents is not None else [i.key for i in catalog.intents]
        self.intents = [catalog.intent(name).env_name for name in chosen]
        self._env_names = {i.key: i.env_name for i in catalog.intents}  # key -> env name
        if not self.intents:
            raise ValueError("a curriculum needs at least one intent")
        bad = [lang for lang in langs if lang not in LANGUAGES]
        if bad or not langs:
            raise ValueError(f"langs must be a non-empty subset of {list(LANGUAGES)}, got {langs}")
        self.langs = list(langs)
        self.rungs = tuple(rungs) if rungs is not None else ladder(self.domain)
        if not self.rungs:
            raise ValueError("a curriculum needs at least one rung")
        if not 1 <= min_episodes <= window:
            raise ValueError(f"need 1 <= min_episodes <= window, got {min_episodes}, {window}")
        if not 0.0 < promote_at <= 1.0 or not 0.0 <= explore <= 1.0:
            raise ValueError("promote_at must be in (0, 1] and explore in [0, 1]")
        self.window, self.min_episodes = window, min_episodes
        self.promote_at, self.demote, self.explore = promote_at, demote, explore
        self.rng = np.random.default_rng(seed)
        self._levels = dict.fromkeys(self.intents, 0)
        self._records: dict[tuple[str, int], _Record] = {}
        self._by_seed: OrderedDict[int, Task] = OrderedDict()  # see task_for

    # --- what it measures -------------------------------------------------------------------------

    def level(self, intent: str) -> int:
        """The rung an intent is on (an index of ``rungs``)."""
        return self._levels[self.domain.catalog.intent(intent).env_name]

    def success(self, intent: str, rung: int | None = None) -> float | None:
        """The recent success rate of an intent on a rung (default its own); ``None`` before
        any episode."""
        name = self.domain.catalog.intent(intent).env_name
        record = self._records.get((name, self._levels[name] if rung is None else rung))
        return statistics.fmean(record.outcomes) if record and record.outcomes else None

    def table(self) -> list[dict[str, Any]]:
        """Per intent: its rung, the recent success there and the episodes played there."""
        rows = []
        for intent in self.intents:
            level = self._levels[intent]
            record = self._records.get((intent, level))
            rows.append(
                {
                    "intent": intent,
                    "rung": level,
                    "rung_name": self.rungs[level].name,
                    "success": self.success(intent),
                    "episodes": record.episodes if record else 0,
                }
            )
        return rows

    def _weight(self, intent: str) -> float:
        record = self._records.get((intent, self._levels[intent]))
        if record is None or len(record.outcomes) < self.min_episodes:
            return 1.0  # not measured yet: explored
        rate = statistics.fmean(record.outcomes)
        return 1.0 if 0.0 < rate < 1.0 else self.explore

    # --- sampling ---------------------------------------------------------------------------------

    def sample(self) -> Task:
        """The next task: an intent drawn by weight (1 while its success is unmeasured or
        strictly between 0 and 1, ``explore`` otherwise) on its rung, a seed, a language."""
        weights = np.array([self._weight(intent) for intent in self.intents], dtype=float)
        if weights.sum() == 0.0:  # explore=0 and every intent at 0 or 1: draw evenly
            weights[:] = 1.0
        intent = self.intents[int(self.rng.choice(len(self.intents), p=weights / weights.sum()))]
        level = self._levels[intent]
        lang = self.langs[int(self.rng.integers(len(self.langs)))]
        seed = int(self.rng.integers(2**31))
        rung = self.rungs[level]
        options = {"intent": intent, "lang": lang, **rung.options}
        return Task(intent, level, rung.name, seed, lang, options)

    def specs(self, n: int) -> list[dict[str, Any]]:
        """``n`` episode specs (``seed`` and reset options), e.g. for verl's ``build_rows``."""
        return [self.sample().row() for _ in range(n)]

    def task_for(self, seed: int) -> Task:
        """The task of a dataset row's seed: drawn at the first request, then the same, so
        that every rollout of a GRPO group (rows of one seed) plays one episode. The
        task's own seed is the row's."""
        seed = int(seed)
        task = self._by_seed.get(seed)
        if task is None:
            drawn = self.sample()
            task = Task(drawn.intent, drawn.rung, drawn.rung_name, seed, drawn.lang, drawn.options)
            self._by_seed[seed] = task
            if len(self._by_seed) > 4096:
                self._by_seed.popitem(last=False)
        return task

    # --- outcomes ---------------------------------------------------------------------------------

    def rung_of(self, options: Mapping[str, Any]) -> int:
        """The rung whose options ``options`` carry (a row, a spec or a task's options)."""
        for index, rung in enumerate(self.rungs):
            if rung.fits(options):
                return index
        raise ValueError(f"the options {dict(options)} are no rung of this curriculum")

    def record(self, task: Task | Mapping[str, Any], success: float) -> None:
        """Count one episode's outcome (1.0 resolved, 0.0 not, or a reward in [0, 1]).

        ``task`` is a :class:`Task` or a row/spec with ``intent`` and a rung's options. An
        outcome on a rung the intent has left is kept but moves nothing.
        """
        success = float(success)
        if not 0.0 <= success <= 1.0:
            raise ValueError(f"success must be in [0, 1], got {success}")
        if isinstance(task, Task):
            intent, rung = task.intent, task.rung
        else:
            intent = self.domain.catalog.intent(str(task["intent"])).env_name
            rung = self.rung_of(task)
        if intent not in self._levels:
            raise ValueError(f"{intent!r} is not an intent of this curriculum")
        record = self._records.setdefault((intent, rung), _Record(deque(maxlen=self.window)))
        record.outcomes.append(success)
        record.episodes += 1
        if rung == self._levels[intent]:
            self._move(intent, record)

    def record_group(self, task: Task | Mapping[str, Any], successes: Iterable[float]) -> bool:
        """Record a group of rollouts of one task; whether the group is informative (its
        outcomes differ: a GRPO group that does not teaches nothing)."""
        successes = [float(s) for s in successes]
        for success in successes:
            self.record(task, success)
        return informative(successes)

    def _move(self, intent: str, record: _Record) -> None:
        if len(record.outcomes) < self.min_episodes:
            return
        rate = statistics.fmean(record.outcomes)
        level = self._levels[intent]
        if rate >= self.promote_at and level + 1 < len(self.rungs):
            self._enter(intent, level + 1)
        elif self.demote and rate == 0.0 and len(record.outcomes) == self.window and level > 0:
            self._enter(intent, level - 1)

    def _enter(self, intent: str, level: int) -> None:
        """Move an intent to a rung, measured afresh there (an old window would move it back
        at once)."""
        self._levels[intent] = level
        record = self._records.get((intent, level))
        if record is not None:
            record.outcomes.clear()

    def record_log(self, path: str | Path, start: int = 0) -> int:
        """Record the outcomes of an outcome log (JSON lines of ``{"spec", "resolved"}``, as
        verl's agent loop writes them with ``outcome_log``) from byte ``start``; returns the
        offset to start from next time. Lines of other curricula's intents are skipped."""
        with open(path, "rb") as log:
            log.seek(start)
            for line in log:
                if not line.endswith(b"\n"):  # a line still being written: read it next time
                    break
                start += len(line)
                entry = json.loads(line)
                spec = entry["spec"]
                if self._known(spec.get("intent")):
                    self.record(spec, 1.0 if entry.get("resolved") else 0.0)
        return start

    def _known(self, intent: Any) -> bool:
        """Whether ``intent`` (a key or env name) is one of this curriculum's intents."""
        return self._env_names.get(intent, intent) in self._levels

    # --- state ------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything that moves (rungs, outcomes, the generator): JSON-serialisable."""
        return {
            "intents": list(self.intents),
            "rungs": [r.name for r in self.rungs],
            "levels": dict(self._levels),
            "records": [
                {"intent": i, "rung": r, "outcomes": list(rec.outcomes), "episodes": rec.episodes}
                for (i, r), rec in sorted(self._records.items())
            ],
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state_dict` (same intents and rungs, or ValueError)."""
        if state["intents"] != self.intents or state["rungs"] != [r.name for r in self.rungs]:
            raise ValueError("the state is of a curriculum with other intents or rungs")
        self._levels = {k: int(v) for k, v in state["levels"].items()}
        self._records = {
            (r["intent"], int(r["rung"])): _Record(
                deque(map(float, r["outcomes"]), maxlen=self.window), int(r["episodes"])
            )
            for r in state["records"]
        }
        self.rng.bit_generator.state = state["rng"]
        self._by_seed.clear()

    def save(self, path: str | Path) -> Path:
        """Write :meth:`state_dict` atomically (a crash leaves the previous file whole)."""
        path = Path(path)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(json.dumps(self.state_dict()), encoding="utf-8")
        os.replace(temporary, path)
        return path

    def load(self, path: str | Path) -> None:
        self.load_state_dict(json.loads(Path(path).read_text(encoding="utf-8")))


def informative(rewards: Iterable[float]) -> bool:
    """Whether a group of rewards differ (a group whose rewards are all equal has GRPO
    advantages of zero: online difficulty filtering drops it)."""
    values = {round(float(r), 9) for r in rewards}
    return len(values) > 1
