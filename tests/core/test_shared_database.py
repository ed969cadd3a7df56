"""The network environments of a process share one in-memory database, each episode under its
own row id: they must not see or disturb each other, and nothing may pile up in it."""

from __future__ import annotations

import gc
import threading

from telcoenv.agents import OracleAgent, run_episode
from telcoenv.domains.network.schema import network_metadata
from telcoenv.env import TelcoEnv
from tests.conftest import call_tool, gold_actions, make_env, play


def _total_rows(env: TelcoEnv) -> int:
    return sum(
        env.database.fetch_all(f"SELECT count(*) FROM {table}")[0][0]
        for table in network_metadata().tables
    )


def _rows_of(env: TelcoEnv, row_id: str) -> int:
    return sum(
        env.database.fetch_all(f"SELECT count(*) FROM {table} WHERE episode_id = ?", (row_id,))[0][
            0
        ]
        for table in network_metadata().tables
    )


def _transcript(env: TelcoEnv) -> str:
    return env.trace.model_dump_json(exclude={"started_at", "finished_at"})


def test_two_environments_with_the_same_episode_keep_apart():
    first, second = make_env("config_mismatch"), make_env("config_mismatch")
    _, info = first.reset(seed=5)
    second.reset(seed=5)
    assert first.database._shared is second.database._shared  # one database
    assert first.episode.row_id != second.episode.row_id
    play(first, gold_actions(info))  # the fix changes the first environment's rows only
    state = second.episode.setup.state
    assert state.change_log() == [] and state.diff() == []
    assert first.episode.setup.state.change_log()


def test_the_same_episode_gives_the_same_transcript_next_to_other_environments():
    alone = make_env("beam_misalignment", privileged=True)
    run_episode(alone, OracleAgent(), seed=11)
    crowd = [make_env("beam_misalignment", privileged=True) for _ in range(3)]
    for index, env in enumerate(crowd):
        env.reset(seed=index)
    again = make_env("beam_misalignment", privileged=True)
    run_episode(again, OracleAgent(), seed=11)
    assert _transcript(again.unwrapped) == _transcript(alone.unwrapped)


def test_a_reset_replaces_the_previous_episode_and_close_removes_the_last():
    env = make_env("pci_collision")
    env.reset(seed=0)
    first_id = env.episode.row_id
    loaded = _rows_of(env, first_id)
    assert loaded > 0
    env.reset(seed=1)
    assert _rows_of(env, first_id) == 0 and _rows_of(env, env.episode.row_id) > 0
    last_id, probe = env.episode.row_id, make_env("pci_collision")
    probe.reset(seed=2)
    env.close()
    assert _rows_of(probe, last_id) == 0


def test_an_environment_dropped_without_close_leaves_nothing_after_the_next_reset():
    keeper = make_env("coverage_hole")
    keeper.reset(seed=0)
    dropped = make_env("coverage_hole")
    dropped.reset(seed=0)
    row_id = dropped.episode.row_id
    assert _rows_of(keeper, row_id) > 0
    del dropped
    gc.collect()
    keeper.reset(seed=1)
    assert _rows_of(keeper, row_id) == 0


def test_many_episodes_do_not_grow_the_database():
    env, other = make_env("degraded_backhaul", privileged=True), make_env("degraded_backhaul")
    other.reset(seed=0)
    run_episode(env, OracleAgent(), seed=0)
    size = _total_rows(env)
    for seed in range(1, 30):
        run_episode(env, OracleAgent(), seed=seed)
    # The same blueprint's networks differ a little in size; nothing accumulates.
    assert _total_rows(env) < 1.5 * size


def test_a_refused_change_in_one_environment_leaves_the_others_untouched():
    first, second = make_env("beam_misalignment"), make_env("beam_misalignment")
    first.reset(seed=3)
    second.reset(seed=4)
    before = second.episode.setup.state.configuration()
    serving = first.episode.setup.state.serving_id
    output = call_tool(first, "optimize_cell", cell_id=serving, changes={"tilt_deg": 40})
    assert output["error"]["type"] == "invalid_arguments"
    call_tool(
        second,
        "optimize_cell",
        cell_id=second.episode.setup.state.serving_id,
        changes={"tilt_deg": 4},
    )
    assert second.episode.setup.state.configuration() != before
    assert first.episode.setup.state.diff() == []


def test_environments_stepped_from_threads_give_the_sequential_transcripts():
    seeds = list(range(8))
    expected = {}
    for seed in seeds:
        env = make_env(None, privileged=True)
        run_episode(env, OracleAgent(), seed=seed)
        expected[seed] = _transcript(env.unwrapped)
    got: dict[int, str] = {}
    errors: list[BaseException] = []

    def play_one(seed: int) -> None:
        try:
            env = make_env(None, privileged=True)
            for _ in range(3):  # several episodes each, interleaved with the other threads
                run_episode(env, OracleAgent(), seed=seed)
            got[seed] = _transcript(env.unwrapped)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=play_one, args=(seed,)) for seed in seeds]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert got == expected


def test_environments_share_the_encoded_tools_and_the_compiled_statements():
    """What is the same for every environment of a domain is held once: the encoded tool specs
    (about 30 KB) and the compiled SQL (about 20 KB of multi-row inserts for a care episode);
    each reset still hands out its own copy of the tools."""
    first = TelcoEnv("contact_update", domain="bss", embedder=None)
    second = TelcoEnv("contact_update", domain="bss", embedder=None)
    _, one = first.reset(seed=0)
    _, two = second.reset(seed=1)
    catalog = first.domain.catalog
    assert catalog is second.domain.catalog
    assert catalog.openai_tools_json(first.tool_format) is catalog.openai_tools_json("full")
    assert first.database._multi_sql is second.database._multi_sql
    assert first.database._multi_sql  # the reset's inserts were compiled there
    assert one["tools"] == two["tools"] == first.tools and one["tools"] is not two["tools"]
    one["tools"][0]["function"]["name"] = "changed"
    assert second.reset(seed=2)[1]["tools"] == first.tools
    first.close()
    second.close()
