"""The current KPIs and the configuration that NetworkState keeps in Python equal what the
rows hold, after every kind of step, and an undone change takes its writes out of both (issue 16:
cost growth, fewer queries)."""

from __future__ import annotations

import numpy as np
import pytest

from telcoenv.domains.network.topology import baseline_id
from telcoenv.errors import ToolError
from tests.conftest import blueprint_model, gold_actions, network_episode, tool_call


def _from_the_rows(env) -> dict[str, dict[str, float]]:
    """The latest sample of each KPI per object, read from kpi_samples itself."""
    state = env.unwrapped.episode.setup.state
    rows = state.db.fetch_all(
        "SELECT object_id, kpi, value FROM kpi_samples WHERE episode_id = ? "
        "ORDER BY object_id, measured_at, kpi",
        (env.unwrapped.episode.row_id,),
    )
    current: dict[str, dict[str, float]] = {}
    for object_id, kpi, value in rows:
        current.setdefault(object_id, {})[kpi] = value
    return current


def _agrees(env) -> None:
    state = env.unwrapped.episode.setup.state
    stored = _from_the_rows(env)
    kept = state.latest_kpis()
    assert kept == stored
    assert [list(k) for k in kept.values()] == [list(k) for k in stored.values()]  # same order
    for object_id, kpis in stored.items():
        assert state.kpis(object_id) == kpis
        assert all(state.kpi_value(object_id, kpi) == value for kpi, value in kpis.items())
    assert state.configuration() == state._read_configuration()


def _random_actions(env, info, rng: np.random.Generator, count: int) -> list[dict]:
    state = env.unwrapped.episode.setup.state
    cells, serving = state.cell_ids, state.serving_id
    slices = [s.slice_id for s in state.slices()]
    pool = [
        lambda: tool_call("oss_query", cell_id=str(rng.choice(cells)), window="1h"),
        lambda: tool_call(
            "kpi_timeseries", cell_id=str(rng.choice(cells)), kpi="PRB", window="24h"
        ),
        lambda: tool_call("neighbor_audit", cell_id=str(rng.choice(cells))),
        lambda: tool_call(
            "optimize_cell",
            cell_id=str(rng.choice(cells)),
            changes={"tilt_deg": int(rng.integers(-2, 12))},  # some out of range: refused
        ),
        lambda: tool_call(
            "optimize_slice", slice_id=str(rng.choice(slices)), policy={"priority": 2}
        ),
        lambda: tool_call("push_config", cell_id=serving, config_id=baseline_id(serving)),
    ]
    return [pool[int(rng.integers(len(pool)))]() for _ in range(count)]


@pytest.mark.parametrize(
    ("intent", "seed"),
    [("beam_misalignment", 0), ("pci_collision", 3), ("slice_admission_failure", 5)],
)
def test_the_kept_kpis_are_the_stored_ones_after_every_step(intent, seed):
    env, info, _ = network_episode(intent, seed=seed, max_steps=80)
    _agrees(env)
    rng = np.random.default_rng(seed)
    for action in gold_actions(info) + _random_actions(env, info, rng, 40):
        env.step(action)
        _agrees(env)


def test_an_undone_change_takes_its_samples_out_of_both():
    env, _, serving = network_episode("beam_misalignment", seed=1)
    state = env.unwrapped.episode.setup.state
    neighbour = state.cell_ids[-1]
    before = state.latest_kpis()
    with pytest.raises(ToolError), state.db.change():
        state.record_kpis({serving: {"sinr_dB": -99.0}}, state.now)
        state.kpi_history(neighbour)  # a neighbour's first counters, inside the same change
        assert state.kpi_value(serving, "sinr_dB") == -99.0  # read-your-writes inside it
        assert neighbour in state.latest_kpis()
        raise ToolError("refused after the samples were written", kind="rejected")
    assert state.latest_kpis() == before == _from_the_rows(env)
    assert neighbour not in state.latest_kpis()


def test_a_change_the_schema_refuses_leaves_the_kpis_as_they_were():
    env, _, serving = network_episode("beam_misalignment", seed=2)
    before = _from_the_rows(env)
    observation = env.step(tool_call("optimize_cell", cell_id=serving, changes={"tilt_deg": 99}))[0]
    assert '"error"' in observation
    assert env.unwrapped.episode.setup.state.latest_kpis() == before == _from_the_rows(env)


def test_the_configuration_read_once_follows_changes_and_their_undoing():
    env, _, serving = network_episode("beam_misalignment", seed=3)
    state = env.unwrapped.episode.setup.state
    owner = f"cell:{serving}"
    start = state.configuration()
    tilt = start[owner]["tilt_deg"]
    state.configuration()[owner]["tilt_deg"] = 99.0  # the caller's copy, not the kept one
    assert state.configuration() == start == state._read_configuration()
    with pytest.raises(ToolError), state.db.change():
        state.apply("push_config", 1, "test", [("cell", serving, [("tilt_deg", tilt, tilt + 1)])])
        assert state.configuration()[owner]["tilt_deg"] == tilt + 1  # read-your-writes
        raise ToolError("refused after the change was written", kind="rejected")
    assert state.configuration() == start == state._read_configuration()
    state.apply("push_config", 2, "test", [("cell", serving, [("tilt_deg", tilt, tilt + 1)])])
    assert state.configuration()[owner]["tilt_deg"] == tilt + 1
    assert state.configuration() == state._read_configuration()


def _samples_in_rows(env) -> int:
    episode = env.unwrapped.episode
    query = "SELECT count(*) FROM kpi_samples WHERE episode_id = ?"
    return episode.setup.state.db.fetch_all(query, (episode.row_id,))[0][0]


def test_a_refused_request_does_not_collect_a_neighbours_counters():
    """A neighbour's counters are collected on its first request; kpi_timeseries asked for a
    family a neighbour does not have (slice) wrote them and then refused the call, so a refused
    call changed the rows (found by a semantic fuzz campaign). The blueprint model's rows: the
    network model computes a series when asked and keeps none."""
    env, _, _ = network_episode("beam_misalignment", seed=1, domain=blueprint_model())
    state = env.unwrapped.episode.setup.state
    neighbour = state.cell_ids[1]
    rows = _samples_in_rows(env)
    refused = tool_call("kpi_timeseries", cell_id=neighbour, kpi="slice", window="1h")
    assert '"error"' in env.step(refused)[0]
    assert _samples_in_rows(env) == rows and neighbour not in state.latest_kpis()
    # The first request that succeeds collects them, as it does without the refused call.
    fresh, _, _ = network_episode("beam_misalignment", seed=1, domain=blueprint_model())
    for one in (env, fresh):
        one.step(tool_call("kpi_timeseries", cell_id=neighbour, kpi="PRB", window="1h"))
    kept = env.unwrapped.episode.setup.state.latest_kpis()
    assert kept[neighbour] == fresh.unwrapped.episode.setup.state.latest_kpis()[neighbour]
    assert _samples_in_rows(env) > rows
    _agrees(env)
