"""The mobility model's mechanisms: each handover parameter moves the counters its mechanism
reaches, in the direction RAN engineering expects, and no timer moves RSRP; and the fast
:func:`mobility.handovers` gives exactly what the step-by-step original gives."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from telcoenv.domains.network import layout, mobility
from telcoenv.domains.network.parameters import PROFILE

N = 7


@pytest.fixture(scope="module")
def cluster():
    rng = np.random.default_rng(11)
    angles = np.radians(np.arange(N - 1) * 60.0)
    positions = [(0.0, 0.0)] + [(600 * math.sin(a), 600 * math.cos(a)) for a in angles]
    azimuths = [90.0] + [float((math.degrees(a) + 180) % 360) for a in angles]
    configs = [dict(PROFILE["macro"]) for _ in range(N)]
    cells = layout.cells_of("urban", "macro", positions, azimuths, list(range(1, N + 1)),
                            configs, [True] * N)  # fmt: skip
    walk = mobility.tracks(cells, 450.0, rng.choice([1.4, 8.0, 14.0], 96), rng)
    geometry = mobility.track_geometry(cells, walk, rng)
    return cells, geometry, mobility.track_radio(cells, geometry)


def _run(cluster, **changes):
    cells, _, radio = cluster
    p = {"a3": 3.0, "hys": 2.0, "ttt": 480.0, "cio": 0.0, "t310": 1000.0, "pci": None}
    p.update(changes)
    cio = np.zeros(N)
    cio[0] = p["cio"]
    return mobility.handovers(
        radio,
        np.full(N, 0.5),
        cells.pci if p["pci"] is None else np.array(p["pci"]),
        np.full(N, p["a3"]),
        np.full(N, p["hys"]),
        np.full(N, p["ttt"]),
        cio,
        np.full(N, p["t310"]),
    )


def _rate(result, numerator: str) -> float:
    return float(getattr(result, numerator).sum()) / max(float(result.attempts.sum()), 1.0)


def test_short_ttt_and_low_hysteresis_cause_ping_pong(cluster):
    tight = _run(cluster, ttt=64.0, hys=0.5, a3=0.0)
    normal = _run(cluster)
    loose = _run(cluster, ttt=1024.0, hys=4.0)
    assert tight.pingpong.sum() > normal.pingpong.sum() >= loose.pingpong.sum()
    assert tight.attempts.sum() > normal.attempts.sum() > loose.attempts.sum()


def test_a_long_time_to_trigger_makes_handovers_late(cluster):
    late = _run(cluster, ttt=2560.0)
    normal = _run(cluster)
    assert late.too_late.sum() > normal.too_late.sum()
    assert late.rlf.sum() > normal.rlf.sum()


@pytest.mark.parametrize(("short", "long"), [(50.0, 200.0), (200.0, 1000.0), (1000.0, 2000.0)])
def test_a_longer_t310_never_causes_more_radio_link_failures(cluster, short, long):
    assert _run(cluster, t310=short).rlf.sum() >= _run(cluster, t310=long).rlf.sum()


def test_a_very_short_t310_turns_every_fade_into_a_failure(cluster):
    assert _run(cluster, t310=50.0).rlf.sum() > _run(cluster, t310=1000.0).rlf.sum()


def test_the_serving_cells_cio_moves_its_border(cluster):
    """A negative CIO on the serving cell pushes its UEs out sooner (more handovers out of it);
    a positive one holds them (fewer)."""
    pushed = _run(cluster, cio=-6.0)
    held = _run(cluster, cio=6.0)
    exposure = lambda r: r.attempts[0] / max(r.served_steps[0], 1.0)  # noqa: E731
    assert exposure(pushed) > exposure(held)
    assert held.served_steps[0] > pushed.served_steps[0]


def test_a_pci_shared_with_a_neighbour_fails_handovers_to_the_wrong_cell(cluster):
    clean = _run(cluster)
    shared = _run(cluster, pci=[1, 3, 3, 4, 5, 6, 7])  # cells 1 and 2 share PCI 3
    assert shared.wrong_cell.sum() > clean.wrong_cell.sum() == 0
    assert _rate(shared, "successes") < _rate(clean, "successes")


def test_no_timer_or_offset_moves_rsrp(cluster):
    """RSRP depends on the radio configuration only: the handover parameters act through the
    procedures, never on the signal."""
    cells, geometry, radio = cluster
    again = mobility.track_radio(cells, geometry)
    assert np.array_equal(again.rsrp_dbm, radio.rsrp_dbm)
    tilted = mobility.track_radio(cells.with_(tilt_deg=cells.tilt_deg + 4.0), geometry)
    assert not np.array_equal(tilted.rsrp_dbm, radio.rsrp_dbm)


def test_relation_counts_add_up(cluster):
    result = _run(cluster, ttt=64.0, hys=0.5)
    assert result.relation_attempts.sum() == result.attempts.sum()
    assert result.relation_successes.sum() == result.successes.sum()
    assert (result.relation_successes <= result.relation_attempts).all()
    assert np.trace(result.relation_attempts) == 0  # no handover to itself
    # a ping-pong a -> b -> a: counted at a, on the relation toward b; its first leg is one of
    # a's handovers to b, its return one of b's to a
    bounces = result.relation_pingpong
    assert bounces.sum() > 0
    assert np.array_equal(bounces.sum(axis=1), result.pingpong)
    assert (bounces <= result.relation_successes).all()
    assert (bounces <= result.relation_successes.T).all()


# --- the fast handovers against the step-by-step oracle ----------------------------------------


def _reference_handovers(
    radio: mobility.TrackRadio,
    load: np.ndarray,
    pci: np.ndarray,
    a3_offset_db: np.ndarray,
    hysteresis_db: np.ndarray,
    ttt_ms: np.ndarray,
    cio_db: np.ndarray,
    t310_ms: np.ndarray,
    relation_cio_db: np.ndarray | None = None,
) -> mobility.Mobility:
    """The step-by-step oracle :func:`mobility.handovers` must equal, field for field: the
    original implementation, kept verbatim (one numpy pass over all cells and tracks per step),
    with the relations' offsets added to each neighbour as its serving cell sees it."""
    rsrp = radio.rsrp_dbm
    n_cells, n_tracks, steps = rsrp.shape
    lin = np.where(np.isfinite(rsrp), 10.0 ** (rsrp / 10.0), 0.0)
    activity = np.maximum(load, 0.05)[:, None, None]
    noise = 10.0 ** (radio.noise_dbm / 10.0)
    total = ((activity + radio.site_share) * lin).sum(axis=0)  # [tracks, steps]
    # Each cell's SINR as the serving one, everywhere (the others' load-weighted power, and the
    # share of every cell's power the model has no cells for).
    sinr_all = 10.0 * np.log10(np.maximum(lin, 1e-30) / (noise + total[None] - activity * lin))
    below, above = sinr_all < mobility.Q_OUT_DB, sinr_all > mobility.Q_IN_DB
    ranked = rsrp + cio_db[:, None, None]
    relation = np.zeros((n_cells, n_cells)) if relation_cio_db is None else relation_cio_db
    best_at = np.argmax(np.where(np.isfinite(rsrp), rsrp, -1e9), axis=0)  # [tracks, steps]
    offsets = a3_offset_db + hysteresis_db
    need_ms = np.maximum(ttt_ms, mobility.STEP_MS) + mobility.EXECUTION_MS
    confusable = ((pci[:, None] == pci[None, :]) & ~np.eye(n_cells, dtype=bool)).any(axis=1)
    idx = np.arange(n_tracks)
    serving = np.argmax(ranked[:, :, 0], axis=0)
    previous = np.full(n_tracks, -1)
    last_ho_ms = np.full(n_tracks, mobility.NEVER_MS)
    lost = np.zeros(n_tracks, dtype=bool)  # whether the last handover command was lost
    entered_ms = np.zeros((n_cells, n_tracks))  # how long each neighbour has met A3
    t310_left = np.full(n_tracks, np.inf)
    history = np.empty((n_tracks, steps), dtype=int)
    t310_starts: list[np.ndarray] = []  # serving cells where T310 started, step by step
    events: dict[str, list[np.ndarray]] = {
        k: [] for k in ("rlf", "early", "late", "wrong", "att_src", "att_dst", "ok_src",
                        "ok_dst", "pp", "pp_by", "lost", "late_lost")
    }  # fmt: skip
    for k in range(steps):
        now = k * mobility.STEP_MS
        history[:, k] = serving
        # Radio link monitoring: T310 runs below Qout, stops above Qin, expiry is an RLF.
        running = np.isfinite(t310_left)
        start = below[serving, idx, k] & ~running
        if start.any():
            t310_starts.append(serving[start])
            t310_left = np.where(start, t310_ms[serving], t310_left)
        t310_left = np.where(above[serving, idx, k], np.inf, t310_left - mobility.STEP_MS)
        failed = t310_left <= 0
        if failed.any():
            recent = (now - last_ho_ms) < mobility.EARLY_WINDOW_MS
            best = best_at[:, k]
            # A handover under way (TTT met, the command not delivered) fails with the link.
            pending = entered_ms >= (need_ms[serving] - mobility.EXECUTION_MS)[None, :]
            preparing = failed & pending.any(axis=0)
            if preparing.any():
                seen = ranked[:, :, k] + relation[serving].T
                column = np.where(pending, seen, -np.inf)[:, preparing]
                events["att_src"].append(serving[preparing])
                events["att_dst"].append(np.argmax(column, axis=0))
                events["lost"].append(serving[preparing])
                lost = lost | preparing
            events["rlf"].append(serving[failed])
            # A failure shortly after a handover is the source cell's handover gone wrong.
            events["early"].append(previous[failed & recent & (best == previous)])
            events["wrong"].append(
                previous[failed & recent & (best != previous) & (best != serving)]
            )
            late = failed & ~recent & (best != serving)
            events["late"].append(serving[late])
            events["late_lost"].append(serving[late & lost])
            lost = np.where(failed, False, lost)
            previous = np.where(failed, -1, previous)
            serving = np.where(failed, best, serving)
            t310_left = np.where(failed, np.inf, t310_left)
            entered_ms[:, failed] = 0.0
            last_ho_ms = np.where(failed, mobility.NEVER_MS, last_ho_ms)
        # Event A3 with the serving cell's offsets, each cell's CIO, the relations' offsets.
        column = ranked[:, :, k] + relation[serving].T
        meets = column > (ranked[serving, idx, k] + offsets[serving])[None, :]
        meets[serving, idx] = False
        entered_ms = np.where(meets, entered_ms + mobility.STEP_MS, 0.0)
        ready = entered_ms >= need_ms[serving][None, :]
        go = ready.any(axis=0)
        if not go.any():
            continue
        moving = np.flatnonzero(go)
        target = np.argmax(np.where(ready[:, moving], column[:, moving], -np.inf), axis=0)
        src = serving[moving]
        events["att_src"].append(src)
        events["att_dst"].append(target)
        # The source must deliver the command (not below Q_COMMAND_DB); the target must be
        # decodable; a PCI another audible cell shares is a coin toss.
        dropped = sinr_all[src, moving, k] < mobility.Q_COMMAND_DB
        events["lost"].append(src[dropped])
        lost[moving] = dropped
        clash = confusable[target] & ((k + moving) % 2 == 0) & ~dropped
        success = (sinr_all[target, moving, k] > mobility.Q_OUT_DB) & ~clash & ~dropped
        events["ok_src"].append(src[success])
        events["ok_dst"].append(target[success])
        quick = now - last_ho_ms[moving] < mobility.PINGPONG_WINDOW_MS
        bounced = success & (target == previous[moving]) & quick
        events["pp"].append(target[bounced])
        events["pp_by"].append(src[bounced])
        # A target still too weak is a handover triggered too early; a PCI clash sends the
        # UE toward the wrong cell. Either way it stays on the source, which is fading.
        events["early"].append(src[~success & ~clash & ~dropped])
        events["wrong"].append(src[clash])
        moved = moving[success]
        previous[moved] = serving[moved]
        serving[moved] = target[success]
        last_ho_ms[moved] = now
        entered_ms[:, moving] = 0.0
        t310_left[moved] = np.inf

    def count(name: str) -> np.ndarray:
        found = np.concatenate(events[name]) if events[name] else np.zeros(0, dtype=int)
        return np.bincount(found, minlength=n_cells).astype(float)

    def pairs(src: str, dst: str) -> np.ndarray:
        out = np.zeros((n_cells, n_cells))
        if events[src]:
            np.add.at(out, (np.concatenate(events[src]), np.concatenate(events[dst])), 1.0)
        return out

    starts = np.concatenate(t310_starts) if t310_starts else np.zeros(0, dtype=int)
    return mobility.Mobility(
        attempts=count("att_src"),
        successes=count("ok_src"),
        too_early=count("early"),
        too_late=count("late"),
        lost_commands=count("lost"),
        late_after_loss=count("late_lost"),
        wrong_cell=count("wrong"),
        pingpong=count("pp"),
        rlf=count("rlf"),
        t310_started=np.bincount(starts, minlength=n_cells).astype(float),
        relation_attempts=pairs("att_src", "att_dst"),
        relation_successes=pairs("ok_src", "ok_dst"),
        relation_pingpong=pairs("pp", "pp_by"),
        served_steps=np.bincount(history.ravel(), minlength=n_cells).astype(float),
    )


FIELDS = tuple(mobility.Mobility.__dataclass_fields__)
#: 3GPP value sets: TimeToTrigger (TS 38.331), T310, and the CIO's Q-OffsetRange.
TTT_MS = (0, 40, 64, 80, 100, 128, 160, 256, 320, 480, 512, 640, 1024, 1280, 2560, 5120)
T310_MS = (0, 50, 100, 200, 500, 1000, 2000, 4000, 6000)
CIO_DB = (-24, -22, -20, -18, -16, -14, -12, -10, -8, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5,
          6, 8, 10, 12, 14, 16, 18, 20, 22, 24)  # fmt: skip
#: Area and role of a randomised cluster, and its inter-site distance (m).
KINDS = (("urban", "macro", 600.0), ("suburban", "micro", 250.0), ("rural", "macro", 1700.0),
         ("urban", "pico", 120.0))  # fmt: skip


def _assert_same(expected: mobility.Mobility, actual: mobility.Mobility) -> None:
    for field in FIELDS:
        want, got = getattr(expected, field), getattr(actual, field)
        assert np.array_equal(want, got), f"{field}: {want} != {got}"


def _random_cluster(seed: int):
    """A cluster of 5-8 cells (some DOWN, their RSRP -inf), its tracks and radio."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 9))
    area, role, distance = KINDS[seed % len(KINDS)]
    angles = np.radians(np.arange(n - 1) * 360.0 / (n - 1) + rng.uniform(-15, 15, n - 1))
    positions = [(0.0, 0.0)] + [(distance * math.sin(a), distance * math.cos(a)) for a in angles]
    azimuths = [float(rng.uniform(0, 360))] + [
        float((math.degrees(a) + 180 + rng.uniform(-40, 40)) % 360) for a in angles
    ]
    configs = []
    for _ in range(n):
        config = dict(PROFILE[role])
        config["tilt_deg"] += float(rng.uniform(-4, 6))
        config["tx_power_dbm"] += float(rng.uniform(-6, 3))
        config["beam_azimuth_offset_deg"] = float(rng.uniform(-20, 20))
        configs.append(config)
    active = rng.random(n) > (0.25 if seed % 3 == 0 else 0.0)
    pcis = rng.integers(1, n + 1, n) if seed % 2 else np.arange(1, n + 1)
    cells = layout.cells_of(area, role, positions, azimuths, pcis.tolist(), configs,
                            active.tolist())  # fmt: skip
    n_tracks = int(rng.choice([96, 96, 40, 150]))
    steps = int(rng.choice([80, 80, 30, 140]))  # beyond 126 steps the A3 counts are int32
    speeds = rng.choice([1.4, 8.0, 14.0, 30.0], n_tracks)
    walk = mobility.tracks(cells, 0.75 * distance, speeds, rng, steps=steps)
    geometry = mobility.track_geometry(cells, walk, rng)
    # What the model has no cells for (a site's other sectors, the network beyond): none, or a
    # share of the cells' power as calibration sets it.
    share = (0.0, 0.3, 1.5)[seed % 3]
    return cells, replace(mobility.track_radio(cells, geometry), site_share=share)


def _random_configuration(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Per-cell handover parameters: from the 3GPP value sets, or anywhere in their range."""
    if rng.random() < 0.5:
        ttt, t310 = rng.choice(TTT_MS, n), rng.choice(T310_MS, n)
        cio = rng.choice(CIO_DB, n)
    else:
        ttt, t310, cio = rng.uniform(0, 5120, n), rng.uniform(0, 6000, n), rng.uniform(-24, 24, n)
    configuration = {
        "load": np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0, 1, n)),
        "a3_offset_db": rng.choice(np.arange(-6.0, 15.5, 0.5), n),
        "hysteresis_db": rng.choice(np.arange(0.0, 10.5, 0.5), n),
        "ttt_ms": ttt.astype(float),
        "cio_db": cio.astype(float),
        "t310_ms": t310.astype(float),
    }
    # Relations' own offsets: none, or some relations (never a cell to itself) from the value
    # set or anywhere in the range.
    relation = None
    if rng.random() < 0.6:
        values = rng.choice(CIO_DB, (n, n)) if rng.random() < 0.5 else rng.uniform(-24, 24, (n, n))
        relation = np.where(rng.random((n, n)) < 0.4, values, 0.0).astype(float)
        np.fill_diagonal(relation, 0.0)
    configuration["relation_cio_db"] = relation
    return configuration


def _both(radio, pci, configuration) -> tuple[mobility.Mobility, mobility.Mobility]:
    arguments = (
        radio,
        configuration["load"],
        pci,
        configuration["a3_offset_db"],
        configuration["hysteresis_db"],
        configuration["ttt_ms"],
        configuration["cio_db"],
        configuration["t310_ms"],
        configuration.get("relation_cio_db"),
    )
    return _reference_handovers(*arguments), mobility.handovers(*arguments)


@pytest.mark.parametrize(
    "changes",
    [{}, {"ttt": 64.0, "hys": 0.5, "a3": 0.0}, {"ttt": 2560.0}, {"t310": 50.0}, {"t310": 0.0},
     {"ttt": 0.0, "hys": 0.0, "a3": -3.0}, {"cio": -6.0}, {"cio": 6.0},
     {"pci": [1, 3, 3, 4, 5, 6, 7]}, {"ttt": 5120.0, "t310": 6000.0}],
)  # fmt: skip
def test_the_fast_handovers_equal_the_step_by_step_oracle_on_the_cluster(cluster, changes):
    cells, _, radio = cluster
    p = {"a3": 3.0, "hys": 2.0, "ttt": 480.0, "cio": 0.0, "t310": 1000.0, "pci": None}
    p.update(changes)
    cio = np.zeros(N)
    cio[0] = p["cio"]
    arguments = (radio, np.full(N, 0.5), cells.pci if p["pci"] is None else np.array(p["pci"]),
                 np.full(N, p["a3"]), np.full(N, p["hys"]), np.full(N, p["ttt"]), cio,
                 np.full(N, p["t310"]))  # fmt: skip
    _assert_same(_reference_handovers(*arguments), mobility.handovers(*arguments))


@pytest.mark.parametrize("seed", range(60))
def test_the_fast_handovers_equal_the_oracle_on_random_clusters(seed):
    """5-8 cells, DOWN cells, PCI clashes, 30-140 steps; TTT 0-5120 ms, hysteresis 0-10 dB,
    CIO -24..24 dB, T310 0-6000 ms, loads 0-1 (per cell, two configurations per cluster)."""
    cells, radio = _random_cluster(seed)
    rng = np.random.default_rng(1000 + seed)
    for _ in range(2):
        _assert_same(*_both(radio, cells.pci, _random_configuration(rng, cells.count)))


@pytest.mark.parametrize("few", [0, 10**6])
@pytest.mark.parametrize("seed", range(0, 60, 3))
def test_events_played_one_by_one_or_all_at_once_equal_the_oracle(seed, few, monkeypatch):
    """Every T310 start and expiry and every handover played with numpy over all the tracks
    concerned (``FEW`` 0), or track by track in Python (``FEW`` beyond any count)."""
    monkeypatch.setattr(mobility, "FEW", few)
    cells, radio = _random_cluster(seed)
    rng = np.random.default_rng(3000 + seed)
    _assert_same(*_both(radio, cells.pci, _random_configuration(rng, cells.count)))


@pytest.mark.parametrize("seed", range(0, 60, 6))
def test_the_exact_sinr_path_equals_the_oracle_too(seed, monkeypatch):
    """A margin wider than any ratio leaves every Qout/Qin decision to the exact SINR."""
    monkeypatch.setattr(mobility, "SINR_MARGIN", 10.0)
    cells, radio = _random_cluster(seed)
    rng = np.random.default_rng(2000 + seed)
    _assert_same(*_both(radio, cells.pci, _random_configuration(rng, cells.count)))


@pytest.mark.parametrize("seed", range(0, 60, 4))
def test_the_fast_qout_qin_decisions_are_the_exact_ones(seed):
    """Every cell, track and step: below Qout, above Qin and decodable as the exact SINR has it."""
    cells, radio = _random_cluster(seed)
    load = np.random.default_rng(seed).uniform(0, 1, cells.count)
    rsrp = radio.rsrp_dbm
    by_step = np.ascontiguousarray(rsrp.transpose(2, 0, 1))
    work = np.empty_like(by_step), np.empty_like(by_step)
    share = radio.site_share
    fast = mobility._monitor(rsrp, by_step, load, radio.noise_dbm, share, *work)
    sinr = mobility._sinr_db(rsrp, load, radio.noise_dbm, share)
    sinr = sinr.transpose(2, 0, 1).reshape(len(by_step), -1)
    assert fast.decodable is None  # decided fast: decodable is not below Qout
    assert np.array_equal(fast.below, sinr < mobility.Q_OUT_DB)
    assert np.array_equal(fast.above, sinr > mobility.Q_IN_DB)
    assert np.array_equal(~fast.below, sinr > mobility.Q_OUT_DB)


def test_timers_that_never_run_or_trigger_equal_the_oracle(cluster):
    """Infinite or NaN T310 (restarted at every step below Qout, never expiring), infinite TTT
    (never triggers), negative offsets (every neighbour meets A3 at once)."""
    cells, _, radio = cluster
    rng = np.random.default_rng(5)
    for t310, ttt, a3 in [(np.inf, 480.0, 3.0), (np.nan, 0.0, -10.0), (100.0, np.inf, 3.0),
                          (-np.inf, 40.0, -20.0)]:  # fmt: skip
        configuration = _random_configuration(rng, N)
        configuration["t310_ms"][::2] = t310
        configuration["ttt_ms"][1::2] = ttt
        configuration["a3_offset_db"][::3] = a3
        _assert_same(*_both(radio, cells.pci, configuration))


def test_steps_reaching_a_duration_count_as_floating_point_does():
    """The fewest steps whose sum of STEP_MS reaches a duration, against the sum itself, on
    durations a rounding away from whole steps."""
    values = [0.0, -5.0, 1e-300, 99.99999999999999, 100.0, 580.0, 5220.0, 1234.5, 6000.0]
    values += [np.nextafter(m * 100.0, side) for m in range(1, 70) for side in (0.0, np.inf)]
    got = mobility._steps_reaching(np.array(values), 200)
    for value, n in zip(values, got, strict=True):
        total, steps = mobility.STEP_MS, 1
        while total < value:
            total += mobility.STEP_MS
            steps += 1
        assert n == steps, value
        left, expire = value - mobility.STEP_MS, 1  # a timer losing STEP_MS a step
        while left > 0:
            left -= mobility.STEP_MS
            expire += 1
        assert n == expire, value


# --- the tracks sample border crossings; failure kinds as mobility robustness counts them -------


def test_the_tracks_cross_the_serving_cells_border_halfway(cluster):
    """Each track starts in the serving cell's territory (where its users are) and crosses its
    border halfway: on the smooth RSRP (path loss, the line's shadowing, the antennas; no fast
    fading), the serving cell's margin over the best other cell changes sign between the two
    ends of most tracks, and is nearest zero in the middle."""
    cells, _, _ = cluster
    rng = np.random.default_rng(5)
    walk = mobility.tracks(cells, 450.0, rng.choice([1.4, 8.0, 14.0], 96), rng)
    smooth = mobility.track_radio(cells, mobility.track_geometry(cells, walk, None)).rsrp_dbm
    margin = smooth[0] - smooth[1:].max(axis=0)  # [tracks, steps]
    steps = margin.shape[1]
    crossed = np.sign(margin[:, 0]) != np.sign(margin[:, -1])
    assert crossed.mean() > 0.8
    middle = np.abs(margin[:, steps // 2 - 2 : steps // 2 + 2]).min(axis=1)
    ends = np.minimum(np.abs(margin[:, 0]), np.abs(margin[:, -1]))
    assert np.median(middle) < 0.5 * np.median(ends)


def test_the_tracks_cross_into_modelled_neighbours_not_the_sites_other_sectors(cluster):
    """A user who leaves the serving sector sideways or behind the panel is taken over by the
    site's other sectors, which the model has no cells for: its track is drawn again. At the
    middle of (nearly) every track, on the smooth RSRP, the strongest cell the serving one
    meets is a modelled neighbour, stronger there than either co-sited sector; and the lines
    that met a co-sited sector first were drawn again, not kept (with one sector only, the
    sideways walks would be many)."""
    cells, _, _ = cluster
    rng = np.random.default_rng(5)
    walk = mobility.tracks(cells, 450.0, rng.choice([1.4, 8.0, 14.0], 96), rng)
    geometry = mobility.track_geometry(cells, walk, None)
    smooth = mobility.track_radio(cells, geometry).rsrp_dbm
    sectors = mobility.track_radio(*mobility.co_sited(cells, geometry)).rsrp_dbm.max(axis=0)
    middle = smooth.shape[2] // 2 + 2  # just past the border on an outward track
    inward = smooth[0, :, 0] < smooth[1:, :, 0].max(axis=0)
    beyond = np.where(inward, 0, middle)  # an inward track is past the border at its start
    rows = np.arange(smooth.shape[1])
    neighbour = smooth[1:, rows, beyond].max(axis=0)
    into_neighbour = np.mean(neighbour > sectors[rows, beyond])
    assert into_neighbour > 0.9, into_neighbour
    # The co-sited sectors are the serving antenna turned 120 degrees either way.
    boresight = mobility.co_sited(cells, geometry)[0].azimuth_deg
    assert sorted(boresight % 360.0) == sorted((cells.azimuth_deg[0] + np.array([-120, 120])) % 360)


def test_the_tracks_start_where_the_serving_cells_users_are(cluster):
    cells, _, _ = cluster
    rng = np.random.default_rng(6)
    starts = (np.array([100.0, 120.0]), np.array([-40.0, -30.0]))
    walk = mobility.tracks(cells, 450.0, np.full(40, 8.0), rng, starts=starts)
    # Every track runs along a line through one of the starts.
    for i in range(40):
        dx, dy = walk.x[i, -1] - walk.x[i, 0], walk.y[i, -1] - walk.y[i, 0]
        residual = [abs((sx - walk.x[i, 0]) * dy - (sy - walk.y[i, 0]) * dx) / math.hypot(dx, dy)
                    for sx, sy in zip(*starts, strict=True)]  # fmt: skip
        assert min(residual) < 1e-6


def test_tracks_draw_speeds_as_often_as_users_at_them_cross_borders():
    from telcoenv.domains.network.model import SPEEDS_MPS, _track_speeds

    speeds = _track_speeds("urban", np.random.default_rng(0))
    pedestrians = np.mean(speeds < 3.0)
    area = np.array(SPEEDS_MPS["urban"])
    expected = area[area < 3.0].sum() / area.sum()  # crossings scale with speed
    assert abs(pedestrians - expected) < 0.08


def _two_cells(neighbour_dbm: float) -> mobility.TrackRadio:
    """One UE, two cells, 30 steps: the serving cell at -100 dBm per RE under a noise floor
    that holds its SINR at -10 dB (below Qout) throughout; the neighbour out of reach for
    the first two steps (the UE starts on the serving cell), then at ``neighbour_dbm``."""
    rsrp = np.empty((2, 1, 30))
    rsrp[0], rsrp[1] = -100.0, neighbour_dbm
    rsrp[1, :, :2] = -140.0
    return mobility.TrackRadio(rsrp, -90.0)


@pytest.mark.parametrize(("neighbour_dbm", "late"), [(-140.0, 0), (-97.0, 1)])
def test_a_failure_is_too_late_only_when_the_ue_comes_back_in_another_cell(neighbour_dbm, late):
    """TS 38.300 §15.5.2: an RLF long after the last handover is a handover too late when the
    UE re-establishes in another cell; in the cell it failed in it is a plain RLF."""
    result = mobility.handovers(
        _two_cells(neighbour_dbm), np.zeros(2), np.array([1, 2]), np.full(2, 10.0),
        np.full(2, 2.0), np.full(2, 480.0), np.zeros(2), np.full(2, 1000.0),
    )  # fmt: skip
    assert result.rlf[0] >= 1
    assert result.too_late[0] == late
    assert result.attempts.sum() == 0  # the offset keeps the handover from triggering


def _play_two_cells(serving_sinr_db: float, ttt_ms: float = 100.0) -> mobility.Mobility:
    """:func:`_two_cells` with the noise floor set for the serving cell's SINR, the neighbour
    7 dB above it (decodable at -7 dB, above Qout), under an A3 offset of 1 dB (+1 dB
    hysteresis), a TTT of 100 ms (a handover triggered every other step) and T310 of 1 s."""
    rsrp = _two_cells(-93.0).rsrp_dbm
    radio = mobility.TrackRadio(rsrp, -100.0 - serving_sinr_db)
    return mobility.handovers(
        radio, np.zeros(2), np.array([1, 2]), np.full(2, 1.0), np.full(2, 1.0),
        np.full(2, ttt_ms), np.zeros(2), np.full(2, 1000.0),
    )  # fmt: skip


def test_the_command_threshold_is_where_four_tries_of_the_pdcch_fail_half_the_time():
    """The PDCCH's BLER, logistic in dB through Qout (10 % at -8 dB) and Qin (2 % at -6 dB)
    and 3 dB better at aggregation level 16, is 0.5 ** (1/4) = 84 % at the threshold: by
    hand, -8 - 3 - (logit 0.841 - logit 0.1) / 0.847 = -15.56 dB."""
    per_db = (math.log(0.1 / 0.9) - math.log(0.02 / 0.98)) / 2.0
    bler = 0.5**0.25
    threshold = mobility.Q_COMMAND_DB
    assert threshold == pytest.approx(
        -11.0 - (math.log(bler / (1 - bler)) - math.log(0.1 / 0.9)) / per_db
    )
    assert threshold == pytest.approx(-15.56, abs=0.01)


def test_a_source_too_weak_for_the_command_keeps_the_ue_and_it_fails_too_late():
    """The serving cell's SINR stays at -17 dB (below the command threshold) while a decodable
    neighbour meets A3: every attempt's command is lost, none is too early (the target was
    fine), and the UE stays until T310 (1 s) expires; it then re-establishes in the
    neighbour: too late, after a lost command."""
    result = _play_two_cells(-17.0)
    assert result.attempts[0] >= 3
    assert result.successes[0] == 0
    assert result.lost_commands[0] == result.attempts[0]
    assert result.too_early.sum() == 0 and result.wrong_cell.sum() == 0
    assert result.too_late[0] == 1
    assert result.late_after_loss[0] == 1
    assert result.lost_commands[1] == 0


@pytest.mark.parametrize("serving_sinr_db", [-14.0, -10.0, -4.0])
def test_a_source_above_the_command_threshold_delivers_the_command(serving_sinr_db):
    """Below Qout (T310 running) or above it, a source above the command threshold hands the
    UE over on the first attempt."""
    result = _play_two_cells(serving_sinr_db)
    assert result.attempts[0] == 1 and result.successes[0] == 1
    assert result.lost_commands.sum() == 0 and result.late_after_loss.sum() == 0
    assert result.rlf.sum() == 0


@pytest.mark.parametrize(("ttt_ms", "done"), [(480.0, True), (640.0, False)])
def test_a_link_failing_while_the_handover_is_prepared_fails_the_attempt(ttt_ms, done):
    """The serving cell below Qout from the start (T310 of 1 s expires on step 9), the
    neighbour there from step 2. A TTT of 480 ms hands over on step 7, in time; with 640 ms
    the TTT is met on step 8 (the report sent) and the handover would execute on step 9, but
    the link fails first: an attempt that failed at the source, and a too-late failure that
    is the same failure."""
    result = _play_two_cells(-10.0, ttt_ms)
    assert result.attempts[0] == 1
    assert result.successes[0] == (1 if done else 0)
    assert result.relation_attempts[0, 1] == 1
    assert result.lost_commands[0] == (0 if done else 1)
    assert result.rlf[0] == (0 if done else 1)
    assert result.too_late[0] == result.late_after_loss[0] == (0 if done else 1)


def test_a_failure_after_a_lost_command_counts_once_in_the_failure_rate():
    """``ho_fail_rate`` counts failed attempts and too-late failures, but a too-late failure
    after a lost command is the failure its attempt counted: 3 attempts, all lost, one
    too-late RLF after them is 3 failures in 3 tries (100 %), not 4 in 4."""
    from types import SimpleNamespace

    from telcoenv.domains.network import counters

    zeros = np.zeros(2)
    counts = replace(
        _play_two_cells(-17.0),
        attempts=np.array([3.0, 0.0]), successes=zeros, too_late=np.array([1.0, 0.0]),
        late_after_loss=np.array([1.0, 0.0]), pingpong=zeros,
        relation_successes=np.zeros((2, 2)),
    )  # fmt: skip
    world = SimpleNamespace(area="urban", role="macro", mean_speed_mps=8.0)
    ev = SimpleNamespace(traffic=SimpleNamespace(users=np.array([100.0, 100.0])))
    moves = SimpleNamespace(counts=counts, started=np.array([3.0, 0.0]))
    kpis = counters._handover_counters(world, ev, moves, 0)
    assert kpis["HO_success"] == 0.0
    assert kpis["ho_fail_rate"] == pytest.approx(100.0)
    # The same failure not preceded by a lost command is one more try that failed: 4 of 4,
    # and with one success of the three attempts, 3 failures in 4 tries.
    moves.counts = replace(counts, successes=np.array([1.0, 0.0]), late_after_loss=zeros)
    assert counters._handover_counters(world, ev, moves, 0)["ho_fail_rate"] == pytest.approx(75.0)
