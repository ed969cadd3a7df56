"""The curriculum (telcoenv.curriculum): its difficulty knobs as the environment applies them
(tool set, hints, step budget), the ladders, and the sampler that keeps each intent on the rung
where its recent success is strictly between 0 and 1."""

from __future__ import annotations

import json

import pytest

import telcoenv
from telcoenv.agents import OracleAgent, run_episode
from telcoenv.curriculum import Curriculum, Rung, Task, informative, ladder
from telcoenv.domains import get_domain
from telcoenv.errors import EpisodeOptionError
from telcoenv.feedback import hint
from telcoenv.tooling import canonical_json
from tests.conftest import gold_actions, submit, tool_call

DOMAINS = ("network", "bss")


def _distractors(domain: str) -> list[str]:
    tools = get_domain(domain).catalog.tools
    return sorted(name for name, spec in tools.items() if spec.kind == "distractor")


# --- the knobs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("domain", DOMAINS)
def test_core_tool_set_offers_no_distractor_and_refuses_one_as_an_unknown_tool(domain):
    env = telcoenv.make(
        "troubleshooting" if domain == "network" else "customer_care",
        embedder=None,
        privileged=True,
    )
    _, info = env.reset(seed=2, options={"tool_set": "core"})
    offered = {t["function"]["name"] for t in info["tools"]}
    distractors = _distractors(domain)
    assert distractors and not offered & set(distractors)
    assert "submit_resolution" in offered and len(offered) >= 5
    before = env.unwrapped.domain.start_state(env.unwrapped.episode.setup)
    observation, reward, terminated, truncated, step_info = env.step(
        tool_call(distractors[0], **_any_arguments(env, distractors[0]))
    )
    error = json.loads(observation)["error"]
    assert error["type"] == "unknown_tool" and "not offered" in error["message"]
    assert distractors[0] in error["message"] and "submit_resolution" in error["message"]
    assert not step_info["action"]["valid"] and not terminated and not truncated
    assert env.unwrapped.domain.start_state(env.unwrapped.episode.setup) == before
    assert env.unwrapped.trace.tool_set == "core"
    # The same call runs where every tool is offered (the default).
    _, info = env.reset(seed=2)
    assert {t["function"]["name"] for t in info["tools"]} >= set(distractors)
    observation, *_ = env.step(tool_call(distractors[0], **_any_arguments(env, distractors[0])))
    assert "not offered" not in observation
    env.close()


def _any_arguments(env, tool: str) -> dict:
    """Arguments of the episode's own ids for a tool (what the gold chain's reads take)."""
    spec = env.unwrapped.domain.catalog.tools[tool]
    gold = {k: v for c in env.unwrapped.trace.gold_chain for k, v in c.arguments.items()}
    required = spec.parameters.get("required", [])
    return {name: gold.get(name, "x") for name in required}


def test_a_core_tools_environment_samples_only_offered_tools():
    env = telcoenv.make("beam_misalignment", embedder=None, tool_set="core")
    names = set(env.action_space.tools)
    assert names and not names & set(_distractors("network"))
    assert {t["function"]["name"] for t in env.unwrapped.tools} == names | {"submit_resolution"}


def _unhinted(observation: str, lang: str) -> tuple[str, str | None]:
    """An observation without its hint, and the hint (``None``: it had none)."""
    if observation.startswith(("{", "[")):
        data = json.loads(observation)
        if isinstance(data, dict):
            found = data.pop("hint", None)
        else:
            found = data.pop()["hint"] if data and set(data[-1]) == {"hint"} else None
        return canonical_json(data), found
    body, _, found = observation.rpartition("\n\n")
    if found.startswith(("Hint", "تلميح")):
        return body, found
    return observation, None


@pytest.mark.parametrize(
    "name,lang",
    [
        ("beam_misalignment", "en"),
        ("pci_collision", "ar"),
        ("contact_update", "en"),
        ("bill_shock", "ar"),
    ],
)
def test_hints_name_each_next_gold_step_then_the_submission(name, lang):
    """The oracle plays the same episode with and without hints: every observation is the
    same but for the hint, which names the gold step still to do, then the submission."""
    plain = telcoenv.make(name, embedder=None, privileged=True, lang=lang)
    hinted = telcoenv.make(name, embedder=None, privileged=True, lang=lang, hints="tool")
    statement, info = plain.reset(seed=4)
    opening, hinted_info = hinted.reset(seed=4)
    chain = [c["tool"] for c in info["privileged"]["gold_chain"]]
    assert _unhinted(opening, lang) == (statement, hint(chain[0], lang))
    assert hinted_info["messages"][-1]["content"] == opening
    agents = [OracleAgent(), OracleAgent()]
    agents[0].reset(statement, info)
    agents[1].reset(opening, hinted_info)
    observations = [statement, opening]
    infos = [info, hinted_info]
    hints_seen = []
    while True:
        action = agents[0].act(observations[0], infos[0])
        assert agents[1].act(observations[1], infos[1]) == action
        bare, _, done, cut, infos[0] = plain.step(action)
        seen, _, _, _, infos[1] = hinted.step(action)
        observations = [bare, seen]
        if done or cut:
            assert seen == bare  # no hint once the episode is over
            break
        body, found = _unhinted(seen, lang)
        assert body == bare and found is not None
        assert infos[1]["messages"][-1]["content"].count(found.split(" ")[0]) == 1
        hints_seen.append(found)
    assert infos[0]["resolved"] and infos[1]["resolved"]
    expected = [hint(tool, lang) for tool in chain[1:]] + [hint(None, lang)]
    assert [h for h in expected if h in hints_seen] == expected  # each next step, in order
    assert hints_seen[-1] == hint(None, lang)
    assert (hinted.unwrapped.trace.hints, plain.unwrapped.trace.hints) == ("tool", "none")
    assert hinted.unwrapped.metrics == plain.unwrapped.metrics  # hints change no score


def test_a_hint_waits_for_the_gold_step_done_right():
    env = telcoenv.make("beam_misalignment", embedder=None, privileged=True, hints="tool")
    _, info = env.reset(seed=1)
    first, second = gold_actions(info)[:2]
    wrong = tool_call(first["name"], **{k: "nope" for k in first["arguments"]})
    observation, *_ = env.step(wrong)  # refused: the same step is hinted again
    assert json.loads(observation)["hint"] == hint(first["name"], "en")
    assert "error" in json.loads(observation)
    observation, *_ = env.step(first)
    assert json.loads(observation)["hint"] == hint(second["name"], "en")
    calls = [
        {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": first["name"], "arguments": json.dumps(first["arguments"])},
        }
        for i in range(2)
    ]
    two = {"role": "assistant", "content": "", "tool_calls": calls}
    observation, *_ = env.step(two)  # two calls: the hint closes the array
    assert json.loads(observation)[-1] == {"hint": hint(second["name"], "en")}


def test_max_steps_as_a_reset_option_and_the_trace_records_the_knobs():
    env = telcoenv.make("beam_misalignment", embedder=None)
    env.reset(seed=0, options={"max_steps": 2})
    env.step("hello?")
    *_, truncated, info = env.step("anyone?")
    assert truncated and info["trace"].max_steps == 2
    trace = info["trace"]
    assert (trace.tool_set, trace.hints) == ("all", "none")
    env.reset(seed=0)  # the option held for that episode only
    assert env.unwrapped.trace.max_steps == 20
    env.close()


@pytest.mark.parametrize(
    "options,named",
    [
        ({"tool_set": "some"}, "tool_set"),
        ({"tool_set": 1}, "tool_set"),
        ({"hints": "yes"}, "hints"),
        ({"hints": True}, "hints"),
        ({"hints": 1}, "hints"),
        ({"max_steps": 0}, "max_steps"),
        ({"max_steps": "5"}, "max_steps"),
        ({"max_steps": True}, "max_steps"),
    ],
)
def test_bad_knob_values_are_refused_with_their_name(options, named):
    env = telcoenv.make("beam_misalignment", embedder=None)
    with pytest.raises(EpisodeOptionError, match=named):
        env.reset(seed=0, options=options)
    with pytest.raises(EpisodeOptionError, match=named):
        telcoenv.make("beam_misalignment", embedder=None, **options)


def test_a_snapshot_replays_the_knobs():
    env = telcoenv.make("contact_update", embedder=None, privileged=True)
    _, info = env.reset(seed=3, options={"hints": "tool", "tool_set": "core", "max_steps": 9})
    observations = [env.step(action)[0] for action in gold_actions(info)]
    twin = telcoenv.make("contact_update", embedder=None, privileged=True)
    twin.unwrapped.set_state(env.unwrapped.get_state())
    assert (
        twin.unwrapped.trace.actions[-1].observation == env.unwrapped.trace.actions[-1].observation
    )
    assert twin.unwrapped.episode.opening == env.unwrapped.episode.opening
    assert twin.unwrapped.episode.budget.max_steps == 9
    assert json.loads(observations[-1])["hint"] == hint(None, "en")


# --- the ladders ----------------------------------------------------------------------------------


def test_ladders_go_from_the_walkthrough_to_the_hardest_tier_on_a_tight_budget():
    network, care = ladder("network"), ladder("bss")
    assert [r.name for r in network] == [
        "demonstration",
        "walkthrough",
        "core_tools",
        "guided",
        "symptom",
        "noisy",
        "tight",
    ]
    assert [r.name for r in care] == [
        "demonstration",
        "walkthrough",
        "core_tools",
        "guided",
        "symptom",
        "tight",
    ]
    assert network[-1].options["difficulty"] == "noisy"
    assert care[-1].options["difficulty"] == "symptom"
    assert network[0].options == {
        "difficulty": "guided",
        "tool_set": "core",
        "hints": "call",
        "max_steps": 20,
    }
    for rungs in (network, care):  # each rung is told apart by its options
        assert len({json.dumps(dict(r.options), sort_keys=True) for r in rungs}) == len(rungs)


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_rung_plays_and_the_oracle_resolves_it(domain):
    name = "troubleshooting" if domain == "network" else "customer_care"
    env = telcoenv.make(name, embedder=None, privileged=True, split="train")
    for rung in ladder(domain):
        _, info = run_episode(env, OracleAgent(), seed=7, options=dict(rung.options))
        assert info["resolved"], rung.name
        trace = info["trace"]
        assert (trace.difficulty, trace.tool_set, trace.hints, trace.max_steps) == tuple(
            rung.options[k] for k in ("difficulty", "tool_set", "hints", "max_steps")
        )
    env.close()


# --- the sampler ----------------------------------------------------------------------------------


def test_sampling_is_deterministic_and_tasks_reset_an_environment():
    first = [Curriculum("bss", seed=3).sample() for _ in range(1)]
    one, two = Curriculum("bss", seed=3), Curriculum("bss", seed=3)
    drawn = [one.sample() for _ in range(20)]
    assert drawn == [two.sample() for _ in range(20)] and drawn[0] == first[0]
    assert len({t.intent for t in drawn}) > 5 and {t.lang for t in drawn} == {"en", "ar"}
    env = telcoenv.make("customer_care", embedder=None)
    for task in drawn[:3]:
        row = task.row()
        _, info = env.reset(seed=row.pop("seed"), options=row)
        assert env.unwrapped.trace.intent == get_domain("bss").catalog.intent(task.intent).key
        assert env.unwrapped.trace.hints == "call" and info["language"] == task.lang
    env.close()


def test_an_intent_moves_up_when_it_succeeds_and_down_after_a_window_of_failures():
    curriculum = Curriculum("network", intents=["pci_collision"], window=6, min_episodes=4)
    task = curriculum.sample()
    for outcome in (1, 1, 0):
        curriculum.record(task, outcome)
    assert curriculum.level("pci_collision") == 0  # three episodes: not measured yet
    curriculum.record(task, 1)  # 3 of 4 = 0.75: up
    assert curriculum.level("pci_collision") == 1
    assert curriculum.sample().rung_name == "walkthrough"
    curriculum.record(task, 0)  # an outcome of the rung it left moves nothing
    assert curriculum.level("pci_collision") == 1
    higher = curriculum.sample()
    for _ in range(5):
        curriculum.record(higher, 0)
    assert curriculum.level("pci_collision") == 1  # five failures: the window is not full
    curriculum.record(higher, 0)
    assert curriculum.level("pci_collision") == 0
    # Back on the first rung it is measured afresh: its old window does not send it up at once.
    assert curriculum.success("pci_collision") is None
    curriculum.record(curriculum.sample(), 1)
    assert curriculum.level("pci_collision") == 0


def test_the_top_rung_is_the_last_and_demotion_can_be_switched_off():
    rungs = ladder("bss")
    curriculum = Curriculum("bss", intents=["bill_shock"], min_episodes=1, demote=False)
    for _ in range(len(rungs) + 3):
        curriculum.record(curriculum.sample(), 1)
    assert curriculum.level("bill_shock") == len(rungs) - 1
    for _ in range(20):
        curriculum.record(curriculum.sample(), 0)
    assert curriculum.level("bill_shock") == len(rungs) - 1


def test_online_filtering_samples_the_intents_still_being_learned():
    intents = ["bill_shock", "plan_change", "data_topup"]
    curriculum = Curriculum("bss", intents=intents, explore=0.0, min_episodes=2, promote_at=1.0)
    rung = ladder("bss")[0]
    row = {**rung.options, "seed": 0}
    for intent, outcomes in (
        ("bill_shock", (0, 0)),
        ("plan_change", (1, 0)),
        ("data_topup", (0, 0)),
    ):
        for outcome in outcomes:
            curriculum.record({**row, "intent": intent}, outcome)
    drawn = {curriculum.sample().intent for _ in range(50)}
    assert drawn == {"plan_change"}  # success strictly between 0 and 1
    table = {r["intent"]: r for r in curriculum.table()}
    assert table["plan_change"]["success"] == 0.5 and table["bill_shock"]["success"] == 0.0
    assert (
        table["data_topup"]["episodes"] == 2 and table["data_topup"]["rung_name"] == "demonstration"
    )


def test_a_groups_informativeness():
    assert not informative([1.0, 1.0, 1.0]) and not informative([0.0] * 4)
    assert informative([0.0, 1.0]) and informative([0.7, 0.70001])
    curriculum = Curriculum("bss", intents=["bill_shock"])
    task = curriculum.sample()
    assert curriculum.record_group(task, [1, 0, 0, 1]) is True
    assert curriculum.record_group(task, [0, 0]) is False
    assert curriculum.table()[0]["episodes"] == 6


def test_a_seeds_task_is_the_same_for_the_whole_group():
    curriculum = Curriculum("network", seed=1)
    first = curriculum.task_for(123)
    assert curriculum.task_for(123) == first and first.seed == 123
    assert curriculum.task_for(124).seed == 124


def test_state_survives_a_restart(tmp_path):
    curriculum = Curriculum("network", seed=5, min_episodes=2)
    for _ in range(30):
        task = curriculum.sample()
        curriculum.record(task, float(task.intent < "m"))
    path = curriculum.save(tmp_path / "curriculum.json")
    restored = Curriculum("network", seed=0, min_episodes=2)
    restored.load(path)
    assert restored.table() == curriculum.table()
    assert [restored.sample() for _ in range(10)] == [curriculum.sample() for _ in range(10)]
    other = Curriculum("network", intents=["pci_collision"])
    with pytest.raises(ValueError, match="other intents"):
        other.load(path)


def test_an_outcome_log_is_read_once_and_a_half_written_line_waits(tmp_path):
    curriculum = Curriculum("bss", intents=["bill_shock", "plan_change"], min_episodes=2)
    spec = {"seed": 1, "intent": "bill_shock", **ladder("bss")[0].options}
    log = tmp_path / "outcomes.jsonl"
    lines = [
        {"spec": spec, "resolved": True, "return": 0.9},
        {"spec": {**spec, "intent": "pci_collision"}, "resolved": True, "return": 1.0},
        {"spec": spec, "resolved": False, "return": 0.1},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    log.write_text(text + '{"spec": ')  # the last line is still being written
    offset = curriculum.record_log(log)
    assert offset == len(text.encode())
    assert curriculum.success("bill_shock") == 0.5
    assert curriculum.record_log(log, offset) == offset  # nothing new
    with log.open("a") as out:
        out.write(json.dumps({"spec": spec, "resolved": True}).replace('{"spec": ', "", 1) + "\n")
    curriculum.record_log(log, offset)
    assert curriculum.table()[0]["episodes"] == 3


def test_bad_arguments_raise_and_name_the_problem():
    with pytest.raises(ValueError, match="success"):
        Curriculum("bss").record(Curriculum("bss").sample(), 1.5)
    with pytest.raises(ValueError, match="no rung"):
        Curriculum("bss").record({"intent": "bill_shock", "difficulty": "guided"}, 1)
    with pytest.raises(ValueError, match="langs"):
        Curriculum("bss", langs=["fr"])
    with pytest.raises(ValueError, match="min_episodes"):
        Curriculum("bss", window=2, min_episodes=3)
    with pytest.raises(telcoenv.UnknownIntentError):
        Curriculum("bss", intents=["pci_collision"])
    custom = Curriculum("bss", rungs=[Rung("only", "one", {"hints": "tool"})])
    assert isinstance(custom.sample(), Task) and custom.sample().options["hints"] == "tool"


def test_a_task_played_with_submit_only_is_not_resolved_at_any_rung():
    """A blind submission resolves nothing, with hints or without (the reward exploit suite's
    "never investigate" agent, on the easiest rung)."""
    env = telcoenv.make("customer_care", embedder=None, privileged=True)
    task = Curriculum("bss", seed=2).sample()
    row = task.row()
    _, info = env.reset(seed=row.pop("seed"), options=row)
    label = info["privileged"]["label"]["en"]
    *_, final = env.step(submit(label, "fixed"))
    assert final["resolved"] is False


def _follow(observation: str) -> dict:
    """The action a demonstration's hint spells out (what a model that copies it sends)."""
    if observation.startswith("{"):
        call = json.loads(observation)["hint"]["call"]
    elif observation.startswith("["):
        call = json.loads(observation)[-1]["hint"]["call"]
    else:
        text = observation.rpartition("\n\n")[2]
        call = json.loads(text[text.index("{") :])
    if call["name"] == "submit_resolution":
        label = call["arguments"]["intent"]
        summary = f"{label}: found with the tools and fixed; checked it recovered."
        return submit(label, summary, call["arguments"].get("answer"))
    return tool_call(call["name"], **call["arguments"])


@pytest.mark.parametrize(
    "name,lang",
    [
        ("troubleshooting", "en"),
        ("troubleshooting", "ar"),
        ("customer_care", "en"),
        ("customer_care", "ar"),
    ],
)
def test_the_demonstration_spells_out_every_call_and_copying_it_resolves(name, lang):
    """The bottom rung teaches the loop and the call format: an agent that only copies its
    hints resolves every episode; one rung up (tool names only) copying is not possible."""
    env = telcoenv.make(name, embedder=None, lang=lang, hints="call", tool_set="core")
    for seed in range(6):
        observation, _ = env.reset(seed=seed)
        done = False
        while not done:
            observation, _, terminated, truncated, info = env.step(_follow(observation))
            done = terminated or truncated
        assert info["resolved"] and terminated, (seed, info["trace"].predicted_chain)
    walkthrough = telcoenv.make(name, embedder=None, lang=lang, hints="tool")
    observation, _ = walkthrough.reset(seed=0)
    assert "{" not in observation.rpartition("\n\n")[2]
