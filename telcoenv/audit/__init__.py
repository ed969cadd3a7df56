"""The reward audit: scripted exploit policies against the honest baselines, in every reward mode.

An RL policy finds whatever the reward pays for. :func:`audit` plays, on an environment, each
exploit policy of :mod:`telcoenv.audit.exploits` (any domain) and of the domain's own module
(:mod:`telcoenv.audit.network`, :mod:`telcoenv.audit.care`) over the same seeded episodes as the
honest baselines, and scores every episode in each reward mode from its trace
(:func:`telcoenv.rewards.episode_rewards`):

* ``outcome``: the default sparse reward (TRL's ``get_reward``, verl's, OpenEnv's, verifiers'
  and Inspect's ``outcome`` with the default settings);
* ``shaped``: the same with ``reward_mode="shaped"`` (the per-step terms and the bonus);
* ``resolved``: 1 for a resolved episode, else 0 (TRL's ``resolved_reward``).

An exploit is **refused** when, in every mode, its mean reward is below the best honest
baseline's by at least :data:`MARGINS`; correct work said in other words (a diagnosis in a
synonym, an answer in a sentence) is **accepted** when it resolves as often as the honest
baseline it rewords, within :data:`ACCEPT_TOLERANCE`. ``telcoenv audit --env ID`` prints the
table; a user who adds a domain runs it against their own (the generic exploits, the oracle as
the honest reference, and any honest agent they name).
"""

from __future__ import annotations

import dataclasses
import itertools
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import telcoenv
from telcoenv.agents import load_agent
from telcoenv.audit import care, exploits, network
from telcoenv.audit.exploits import NeverSubmit, Scripted, submit
from telcoenv.domains import Domain
from telcoenv.options import difficulties
from telcoenv.rewards import episode_rewards
from telcoenv.tooling import RESERVED_SUBMIT
from telcoenv.trace import EpisodeTrace

#: The reward modes the audit compares, each as ``episode_rewards`` keyword arguments.
MODES: dict[str, dict[str, Any]] = {
    "outcome": {"reward": "outcome", "mode": "sparse"},
    "shaped": {"reward": "outcome", "mode": "shaped"},
    "resolved": {"reward": "resolved", "mode": "sparse"},
}
#: How far below the best honest baseline an exploit's mean reward must be, per mode.
MARGINS = {"outcome": 0.3, "shaped": 0.3, "resolved": 0.5}
#: How much less often than the honest baseline reworded correct work may resolve.
ACCEPT_TOLERANCE = 0.05
#: The honest baselines of the packaged domains (``oracle`` is added to every domain's).
HONEST = {"network": ("investigator",), "bss": ("care_investigator",)}

Factory = Callable[[], Any]


@dataclass
class Row:
    """One policy on one tier: its episodes' resolve rate and mean reward per mode."""

    policy: str
    kind: str  # "honest", "exploit" or "correct work"
    tier: str
    episodes: int
    resolved: float
    rewards: dict[str, float]
    verdict: str = ""  # "refused", "accepted", or what failed

    @property
    def passes(self) -> bool:
        """An honest row, a refused exploit or accepted correct work."""
        return self.verdict in ("", "refused", "accepted")


@dataclass
class AuditReport:
    env_id: str
    domain: str
    seeds: int
    rows: list[Row] = field(default_factory=list)
    model: str = ""  # the domain's KPI model, where it has a choice (the network domain's)

    @property
    def passed(self) -> bool:
        return all(row.passes for row in self.rows)

    def summary(self) -> str:
        """The audit in one line per policy, each figure its worst case over the tiers (an
        exploit's highest, an honest or reworded agent's lowest), as a Markdown table."""
        modes = list(MODES)
        head = ["policy", "kind", "resolved", *modes, "verdict"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for name in dict.fromkeys(row.policy for row in self.rows):
            rows = [row for row in self.rows if row.policy == name]
            worst = max if rows[0].kind == "exploit" else min
            figures = [worst(r.resolved for r in rows)]
            figures += [worst(r.rewards[m] for r in rows) for m in modes]
            verdicts = {r.verdict for r in rows} - {""}
            verdict = ", ".join(sorted(verdicts)) or "-"
            cells = [name, rows[0].kind, *(f"{f:.2f}" for f in figures), verdict]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "env": self.env_id,
            "domain": self.domain,
            **({"model": self.model} if self.model else {}),
            "seeds": self.seeds,
            "margins": MARGINS,
            "rows": [dataclasses.asdict(row) for row in self.rows],
        }

    def table(self) -> str:
        """The audit as a Markdown table: one line per policy and tier."""
        modes = list(MODES)
        head = ["policy", "kind", "tier", "episodes", "resolved", *modes, "verdict"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for row in self.rows:
            values = [f"{row.rewards[m]:.3f}" for m in modes]
            cells = [row.policy, row.kind, row.tier, str(row.episodes), f"{row.resolved:.2f}"]
            lines.append("| " + " | ".join([*cells, *values, row.verdict or "-"]) + " |")
        return "\n".join(lines)


# Seeds an agent may skip (``applies``) per episode it plays before the audit gives up on it.
MAX_SEEDS_PER_EPISODE = 50


class _Seat:
    """One policy at its own environment, playing the seeds it is given (no embedder: rewards
    need none)."""

    def __init__(
        self,
        env_id: str,
        factory: Factory,
        *,
        tier: str,
        lang: str,
        domain: str | Domain | None,
        options: dict[str, Any] | None,
    ) -> None:
        self.agent = factory()
        privileged = bool(getattr(self.agent, "needs_privileged", False))
        kwargs: dict[str, Any] = {"embedder": None, "privileged": privileged, "difficulty": tier}
        if domain is not None:
            kwargs["domain"] = domain
        self.env = telcoenv.make(env_id, lang=lang, **kwargs)
        self.options = {**getattr(self.agent, "options", {}), **(options or {})} or None
        self.traces: list[EpisodeTrace] = []

    def play(self, seed: int) -> None:
        """One episode on ``seed``, unless the agent is not about it (``applies(info)``: a
        constant-answer exploit plays only the episodes with a question)."""
        observation, info = self.env.reset(seed=seed, options=self.options)
        applies = getattr(self.agent, "applies", None)
        if applies is not None and not applies(info):
            return
        self.agent.reset(observation, info)
        done = False
        while not done:
            action = self.agent.act(observation, info)
            observation, _, terminated, truncated, info = self.env.step(action)
            done = terminated or truncated
        self.traces.append(info["trace"])


def play_together(
    env_id: str,
    factories: Sequence[Factory],
    episodes: int,
    *,
    tier: str,
    lang: str = "en",
    domain: str | Domain | None = None,
    options: dict[str, Any] | None = None,
) -> list[list[EpisodeTrace]]:
    """The traces of ``episodes`` episodes of each factory's agent, seeds 0, 1, ..., every
    agent's episode of a seed played before the next seed's: the episodes of a seed share its
    world, which a process keeps for its few latest seeds
    (:data:`~telcoenv.domains.network.model.WORLD_CACHE_SIZE`), so seed by seed builds each
    world once where policy by policy would build it for every policy. An agent that is not
    about a seed (``applies(info)``) skips it and plays on past the others' seeds."""
    seats: list[_Seat] = []
    try:
        for factory in factories:
            seats.append(
                _Seat(env_id, factory, tier=tier, lang=lang, domain=domain, options=options)
            )
        for seed in itertools.count():
            waiting = [seat for seat in seats if len(seat.traces) < episodes]
            if not waiting:
                break
            if seed >= MAX_SEEDS_PER_EPISODE * episodes:  # an agent about almost no episode
                names = sorted(type(seat.agent).__name__ for seat in waiting)
                raise RuntimeError(
                    f"{env_id}: {', '.join(names)} found {episodes} episodes of its kind in no "
                    f"fewer than {seed} seeds: audit it on an environment that has them"
                )
            for seat in waiting:
                seat.play(seed)
    finally:
        for seat in seats:
            seat.env.close()
    return [seat.traces for seat in seats]


def play(
    env_id: str,
    factory: Factory,
    episodes: int,
    *,
    tier: str,
    lang: str = "en",
    domain: str | Domain | None = None,
    options: dict[str, Any] | None = None,
) -> list[EpisodeTrace]:
    """The traces of ``episodes`` episodes of ``factory``'s agent, seeds 0, 1, ... (see
    :func:`play_together`)."""
    [traces] = play_together(
        env_id, [factory], episodes, tier=tier, lang=lang, domain=domain, options=options
    )
    return traces


def mode_means(traces: Sequence[EpisodeTrace]) -> dict[str, float]:
    """The mean reward of the episodes in each of :data:`MODES`."""
    return {
        mode: statistics.fmean(episode_rewards(t, **kwargs).total for t in traces)
        for mode, kwargs in MODES.items()
    }


def _row(policy: str, kind: str, tier: str, traces: Sequence[EpisodeTrace]) -> Row:
    resolved = statistics.fmean(bool((t.verification or {}).get("resolved")) for t in traces)
    return Row(policy, kind, tier, len(traces), resolved, mode_means(traces))


def _verdict(row: Row, honest: Sequence[Row]) -> str:
    best = {mode: max(h.rewards[mode] for h in honest) for mode in MODES}
    if row.kind == "exploit":
        short = [m for m in MODES if row.rewards[m] > best[m] - MARGINS[m]]
        return "refused" if not short else "PAYS in " + ", ".join(short)
    reference = max(h.resolved for h in honest if h.policy == row.policy.split(" / ")[-1])
    return "accepted" if row.resolved >= reference - ACCEPT_TOLERANCE else "REFUSED"


def modal_answers(
    env_id: str, seeds: Iterable[int], domain: str | Domain | None = None
) -> dict[str, str]:
    """The most frequent gold answer of each intent over ``seeds`` (privileged): the constant a
    policy would learn if answers did not depend on the data."""
    kwargs: dict[str, Any] = {"embedder": None, "privileged": True}
    if domain is not None:
        kwargs["domain"] = domain
    env = telcoenv.make(env_id, **kwargs)
    answers: dict[str, Counter[str]] = {}
    try:
        for seed in seeds:
            _, info = env.reset(seed=seed)
            privileged = info["privileged"]
            if privileged.get("gold_answer") is not None:
                answers.setdefault(privileged["intent"], Counter())[privileged["gold_answer"]] += 1
    finally:
        env.close()
    return {intent: counts.most_common(1)[0][0] for intent, counts in answers.items()}


class Paraphrased:
    """An honest agent whose diagnosis is submitted as a synonym of the label it chose (from
    intents.yaml), with no intent list in its prompt: correct work in other words."""

    options: ClassVar[dict[str, Any]] = {"intent_list": False}

    def __init__(self, honest: str) -> None:
        self.name = f"synonym diagnosis / {honest}"
        self.honest = load_agent(honest)
        self.needs_privileged = getattr(self.honest, "needs_privileged", False)

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        from telcoenv.domains import get_domain

        self.language = info.get("language", "en")
        self.catalog = get_domain(info.get("domain", "network")).catalog
        self.honest.reset(observation, info)

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        action = self.honest.act(observation, info)
        if isinstance(action, dict) and action.get("name") == RESERVED_SUBMIT:
            arguments = dict(action["arguments"])
            arguments["intent"] = self._synonym(arguments.get("intent", ""))
            action = {**action, "arguments": arguments}
        return action

    def _synonym(self, label: str) -> str:
        for intent in self.catalog.intents:
            if label in (intent.label.en, intent.label.ar):
                synonyms = getattr(intent, "synonyms", None)
                words = getattr(synonyms, self.language, ()) if synonyms else ()
                return words[0] if words else label
        return label


def _generic(honest: str) -> list[Factory]:
    return [
        exploits.DoNothing,
        exploits.ImmediateSubmit,
        exploits.NameCopy,
        exploits.FixedChain,
        exploits.ShotgunWrites,
        exploits.TemplatePaste,
        exploits.AskForTheAnswer,
        exploits.ApproveEverything,
        lambda: NeverSubmit(lambda: load_agent(honest)),
    ]


def _domain_exploits(domain: str, learn: Callable[[], dict[str, str]]) -> list[Factory]:
    """The domain's own exploits; ``learn()`` gives the constant answers a policy would learn
    (privileged resets of other seeds: asked for only by the domains whose exploits use it)."""
    if domain == "network":
        return list(network.EXPLOITS.values())
    if domain == "bss":
        constants = learn()
        identity: list[Factory] = [care.SkipIdentity, care.GuessBirthDate]
        if not constants:  # no question in this environment: nothing to answer constantly
            return identity
        return [
            lambda: care.ConstantAnswer(constants),
            lambda: care.ConstantAfterReads(constants),
            *identity,
        ]
    return []


def audit(
    env_id: str,
    *,
    domain: str | Domain | None = None,
    seeds: int = 50,
    tiers: Sequence[str] | None = None,
    lang: str = "en",
    honest: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> AuditReport:
    """Play every exploit and honest policy on ``env_id`` over ``seeds`` seeds per tier.

    ``domain``: a domain's name, or the domain itself (the network domain with its physical
    model: ``NetworkDomain(model="physical")``); ``honest`` names the honest agents (default:
    the domain's baselines and the oracle); ``tiers`` the difficulty tiers (default: every tier
    of the domain).
    """
    probe = telcoenv.make(env_id, embedder=None, **({"domain": domain} if domain else {}))
    domain_name = probe.unwrapped.domain.name
    model = str(getattr(probe.unwrapped.domain, "model", ""))
    tiers = list(tiers or difficulties(probe.unwrapped.domain))
    probe.close()
    honest = list(honest or (*HONEST.get(domain_name, ()), "oracle"))
    report = AuditReport(env_id, domain_name, seeds, model=model)

    exploit_factories = [
        *_generic(honest[0]),
        # Learnt on other seeds, as a policy would learn them.
        *_domain_exploits(
            domain_name, lambda: modal_answers(env_id, range(10_000, 10_000 + 4 * seeds), domain)
        ),
    ]
    policies: list[tuple[str, str, Factory]] = [
        *((h, "honest", lambda h=h: load_agent(h)) for h in honest),
        *((factory().name, "exploit", factory) for factory in exploit_factories),
        (f"synonym diagnosis / {honest[0]}", "correct work", lambda: Paraphrased(honest[0])),
    ]
    for tier in tiers:
        if progress:
            progress(f"{tier}: {len(policies)} policies")
        traces = play_together(
            env_id,
            [factory for _, _, factory in policies],
            seeds,
            tier=tier,
            lang=lang,
            domain=domain,
        )
        rows = [
            _row(name, kind, tier, t) for (name, kind, _), t in zip(policies, traces, strict=True)
        ]
        honest_rows = [row for row in rows if row.kind == "honest"]
        for row in rows:
            if row.kind != "honest":
                row.verdict = _verdict(row, honest_rows)
        report.rows += rows
    return report


__all__ = [
    "MARGINS",
    "MODES",
    "AuditReport",
    "Row",
    "Scripted",
    "audit",
    "play",
    "play_together",
    "submit",
]
