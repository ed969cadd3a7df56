"""Train and test splits (telcoenv.splits): the two never share an episode, the train split never
shows a held-out blueprint or a test phrasing, a split's sample is refused by the other split,
and the default ("all") draws every episode as before."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import telcoenv
from telcoenv import splits
from telcoenv.domains import get_domain
from telcoenv.domains.bss import customer
from telcoenv.errors import EpisodeOptionError
from telcoenv.evaluation.runner import build_grid
from telcoenv.phrases import pick
from tests.conftest import gold_actions, play, submit

DOMAINS = ("network", "bss")


def _drawn(name: str, split: str, seeds: range, domain: str) -> set[tuple[str, str]]:
    env = telcoenv.make(name, embedder=None, split=split, domain=domain)
    found = set()
    for seed in seeds:
        _, info = env.reset(seed=seed)
        assert info["split"] == split
        episode = env.unwrapped.episode
        found.add((episode.blueprint.blueprint_id, json.dumps(episode.key)))
    env.close()
    return found


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_two_splits_never_share_an_episode_and_the_train_split_never_a_held_out_blueprint(
    domain,
):
    catalog = get_domain(domain).catalog
    name = "troubleshooting" if domain == "network" else "customer_care"
    train = _drawn(name, "train", range(60), domain)
    test = _drawn(name, "test", range(60), domain)
    assert train and test and not train & test
    held = set()
    for family in catalog.blueprints.values():
        ids = [b.blueprint_id for b in family]
        held |= splits.held_out(ids)
        for blueprint_id, key in train | test:
            if blueprint_id in ids:
                expected = splits.episode_split(blueprint_id, ids, json.loads(key))
                assert (blueprint_id, key) in (train if expected == "train" else test)
    assert held and not held & {b for b, _ in train}
    assert held & {b for b, _ in test}  # the held-out blueprints are drawn in the test split
    # Every intent with two or more blueprints holds one out, and keeps one for training.
    for family in catalog.blueprints.values():
        ids = [b.blueprint_id for b in family]
        assert (len(splits.held_out(ids)) >= 1) == (len(ids) >= 2)
        assert len(splits.held_out(ids)) < len(ids) or len(ids) < 2


def test_a_test_phrasing_is_never_said_in_the_train_split():
    """Lists of three or more keep a third of their entries for the test split; the customer's
    greetings (how every care opening starts) are one."""
    options = [f"variant {i}" for i in range(9)]
    test_only = set(splits.split_options(options, "test"))
    train_only = set(splits.split_options(options, "train"))
    assert test_only and train_only and not test_only & train_only
    assert test_only | train_only == set(options)
    rng = np.random.default_rng(0)
    for split, allowed in (("train", train_only), ("test", test_only)):
        with splits.phrasing(split):
            assert {pick(options, rng) for _ in range(200)} == allowed
    assert splits.split_options(["a", "b"], "test") == ["a", "b"]  # too short to split
    greetings = customer.phrases()["greetings"]["en"]
    held = set(splits.split_options(greetings, "test"))
    assert held and held != set(greetings)
    for split in ("train", "test"):
        env = telcoenv.make("contact_update", domain="bss", embedder=None, split=split)
        said = {next(g for g in greetings if env.reset(seed=s)[0].startswith(g)) for s in range(40)}
        assert (said <= held) if split == "test" else not said & held, split


@given(st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=12, unique=True))
def test_every_list_of_three_or_more_keeps_a_phrasing_for_each_split(options):
    train, test = splits.split_options(options, "train"), splits.split_options(options, "test")
    if len(options) < splits.PHRASE_MINIMUM:
        assert train == test == options
        return
    assert train and test and not set(train) & set(test)
    assert sorted(train + test) == sorted(options)


def test_a_sample_of_the_other_split_is_refused_and_split_samples_lists_a_splits_own():
    catalog = get_domain("network").catalog
    family = [b.blueprint_id for b in catalog.blueprints["BEAM_MISALIGNMENT"]]
    kept = next(b for b in family if b not in splits.held_out(family))
    held = next(iter(splits.held_out(family)))
    train = splits.split_samples(kept, family, "train", 8)
    test = splits.split_samples(kept, family, "test", 3)
    assert not set(train) & set(test) and splits.split_samples(held, family, "train", 3) == []
    env = telcoenv.make("beam_misalignment", embedder=None, split="train")
    env.reset(seed=1, options={"blueprint": kept, "sample_index": train[0]})
    with pytest.raises(EpisodeOptionError, match=r"is in the test split; .* train split"):
        env.reset(seed=1, options={"blueprint": kept, "sample_index": test[0]})
    for options in ({"blueprint": held, "sample_index": 0}, {"blueprint": held}):
        with pytest.raises(EpisodeOptionError, match="held out for the test split"):
            env.reset(seed=1, options=options)
    with pytest.raises(EpisodeOptionError, match="held out for the test split"):
        telcoenv.make("beam_misalignment", embedder=None, split="train", blueprint=held)
    with pytest.raises(EpisodeOptionError, match="split must be one of"):
        telcoenv.make("beam_misalignment", embedder=None, split="validation")


def test_a_split_episode_is_the_same_again_and_its_snapshot_stays_in_its_split():
    env = telcoenv.make("contact_update", domain="bss", embedder=None, split="test")
    first, info = env.reset(seed=7)
    again, _ = telcoenv.make("contact_update", domain="bss", embedder=None, split="test").reset(
        seed=7
    )
    assert first == again
    state = env.unwrapped.get_state()
    assert state.start.split == "test"
    anywhere = telcoenv.make("contact_update", domain="bss", embedder=None)
    anywhere.unwrapped.set_state(state)  # an unsplit environment restores it, in its phrasing
    assert anywhere.unwrapped.episode.setup.problem_statement == first
    train = telcoenv.make("contact_update", domain="bss", embedder=None, split="train")
    with pytest.raises(EpisodeOptionError, match="test split episode"):
        train.unwrapped.set_state(state)


def test_the_default_draws_every_episode_as_before():
    """split="all" is the environment without splits: same episodes, same words."""
    for domain, name in (("network", "beam_misalignment"), ("bss", "bill_shock")):
        plain = telcoenv.make(name, embedder=None, domain=domain)
        every = telcoenv.make(name, embedder=None, domain=domain, split="all")
        for seed in range(3):
            assert plain.reset(seed=seed)[0] == every.reset(seed=seed)[0]


def test_the_evaluation_grid_and_a_split_episode_play_to_the_end():
    train = build_grid(["beam_misalignment"], 3, ["en"], split="train")
    test = build_grid(["beam_misalignment"], 3, ["en"], split="test")
    assert {s.split for s in train} == {"train"} and {s.split for s in test} == {"test"}
    assert not {(s.blueprint_id, s.sample_index) for s in train} & {
        (s.blueprint_id, s.sample_index) for s in test
    }
    env = telcoenv.make("beam_misalignment", embedder=None, split="test", privileged=True)
    _, info = env.reset(seed=0, options=test[0].reset_options())
    privileged = info["privileged"]
    done = submit(privileged["label"]["en"], "fixed", None)
    assert play(env, [*gold_actions(info), done])["resolved"] is True


def test_a_test_split_dataset_names_its_split_and_carries_the_canary(tmp_path):
    from telcoenv.domains.network.dataset import chat_rows

    rows = list(chat_rows(1, langs=("en",), split="test"))
    assert rows and all(r["split"] == "test" and r["canary"] == splits.CANARY for r in rows)
    train = list(chat_rows(1, langs=("en",), split="train"))
    assert all("canary" not in r for r in train)
    assert not {(r["blueprint"], r["sample_index"]) for r in rows} & {
        (r["blueprint"], r["sample_index"]) for r in train
    }
