"""No leaks: no example value of a tool spec or of the instructions is ever an id of an episode,
and the ids of an episode are drawn with its seeded generator (not the same caller every time).

The examples of the specs use a reserved placeholder pattern that no episode can produce (see
docs/environments.md#tools): all-zero serials for generated ids (``C000000``,
``966500000000``, ``NR-URB-MACRO-000``, ``CL-URB-000``, ``SL-EMBB-00``) and the word ``EXAMPLE``
for catalogue ids (``POST-EXAMPLE``, ``DATA-EXAMPLE``). The test does not parse the "e.g."
phrases: every token of every spec description, of the instructions and of the format errors a
tool returns must differ from every id the episodes hold (their database, their trace's start
state and what the gold chain writes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from telcoenv.datafiles import data_root
from telcoenv.domains.bss import bss_domain
from telcoenv.domains.bss.generator import Focal, generate
from telcoenv.domains.network.loading import network_catalog
from tests.conftest import make_env, tool_call

EPISODES = 200  # per domain
TOKEN = re.compile(r"[A-Za-z0-9+][A-Za-z0-9+@._-]*")
# Columns that hold identifiers (besides every *_id column but the episode id).
ID_COLUMNS = {"msisdn", "phone", "email", "source"}
# The ids the BSS generator draws: a prefix and a six-digit serial without a leading zero, and
# line numbers 9665 and eight digits without a leading zero (the all-zero ones are examples).
GENERATED_BSS_ID = re.compile(r"(C|A|INV|IT|PAY|CN|FG|LA)[1-9][0-9]{5}|9665[1-9][0-9]{7}")


def _strings(value: Any, key: str = "") -> Iterator[str]:
    """Every string of a JSON-like value whose key is a description or an example."""
    if isinstance(value, dict):
        for name, item in value.items():
            yield from _strings(item, name)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, key)
    elif isinstance(value, str) and key in ("description", "examples", "example", "default"):
        yield value


def _tokens(text: str) -> set[str]:
    return {token.rstrip(".-") for token in TOKEN.findall(text)}


def _spec_texts() -> list[str]:
    return [
        text
        for path in sorted((data_root() / "tools").glob("*.json"))
        for text in _strings(json.loads(path.read_text(encoding="utf-8")))
    ]


def _ids_of_start_state(value: Any, key: str = "") -> Iterator[str]:
    """The ids of a trace's start state: values of ``*_id`` keys, ``msisdns``, slice keys."""
    if isinstance(value, dict):
        for name, item in value.items():
            if key == "slices":
                yield name
            yield from _ids_of_start_state(item, name)
    elif isinstance(value, list):
        for item in value:
            yield from _ids_of_start_state(item, key)
    elif isinstance(value, str) and (key.endswith("_id") or key in ("msisdns", "msisdn")):
        yield value


def _ids_in_database(env: Any) -> set[str]:
    """Every id the episode's database holds now (all tables, id columns)."""
    database, episode = env.unwrapped.database, env.unwrapped.episode
    found: set[str] = set()
    for name, table in database.metadata.tables.items():
        columns = [
            c.name
            for c in table.columns
            if c.name != "episode_id" and (c.name.endswith("_id") or c.name in ID_COLUMNS)
        ]
        if not columns:
            continue
        rows = database.fetch_all(
            f"SELECT {', '.join(columns)} FROM {name} WHERE episode_id = ?",
            (episode.row_id or episode.episode_id,),
        )
        found.update(value for row in rows for value in row if isinstance(value, str))
    return found


def _episode_ids(env: Any) -> set[str]:
    ids = _ids_in_database(env)
    ids.update(_ids_of_start_state(env.unwrapped.trace.start_state))
    return ids


@pytest.fixture(scope="module")
def examples() -> set[str]:
    """Every token of the specs' descriptions, of both domains' instructions in both languages
    and of the format errors of the BSS tools (they quote an example)."""
    texts = _spec_texts()
    for domain in ("network", "bss"):
        env = make_env(domain=domain)
        for lang in ("en", "ar"):
            texts.append(env.unwrapped.instructions(lang))
            texts.append(env.unwrapped.instructions(lang, True))
    env = make_env(domain="bss")
    env.reset(seed=0)
    customer_id = env.unwrapped.trace.start_state["customer_id"]
    for name, arguments in (
        ("get_customer", {"msisdn": "12-34"}),
        ("update_contact", {"customer_id": customer_id, "phone": "0"}),
    ):
        texts.append(env.step(tool_call(name, **arguments))[0])
    tokens = set().union(*map(_tokens, texts))
    assert {"C000000", "966500000000", "NR-URB-MACRO-000", "SL-EMBB-00"} <= tokens
    return tokens


CARE_BLUEPRINTS = [b for family in bss_domain().catalog.blueprints.values() for b in family]
NETWORK_BLUEPRINTS = [b for family in network_catalog().blueprints.values() for b in family]


def _care_episodes() -> Iterator[tuple[Any, dict, int]]:
    blueprints = CARE_BLUEPRINTS
    env = make_env(domain="bss")
    for index in range(EPISODES):
        blueprint = blueprints[index % len(blueprints)]
        options = {"blueprint": blueprint.blueprint_id, "lang": ("en", "ar")[index // 2 % 2]}
        _, info = env.reset(seed=index, options=options)
        yield env, info, index


def _network_episodes() -> Iterator[tuple[Any, dict, int]]:
    blueprints = NETWORK_BLUEPRINTS
    env = make_env(domain="network")
    for index in range(EPISODES):
        blueprint = blueprints[index % len(blueprints)]
        options = {
            "blueprint": blueprint.blueprint_id,
            "lang": ("en", "ar")[index // 2 % 2],
            "difficulty": ("guided", "symptom", "noisy")[index % 3],
        }
        _, info = env.reset(seed=index, options=options)
        yield env, info, index


def _oracle_ids(env: Any, info: dict) -> set[str]:
    """The ids after the gold chain ran (the ids write tools create: tickets, credit notes,
    subscriptions, changes)."""
    for call in info["privileged"]["gold_chain"]:
        env.step(tool_call(call["tool"], **call["arguments"]))
    return _ids_in_database(env)


def test_no_example_is_ever_an_id_of_a_care_episode(examples):
    callers: list[tuple[str, str, str]] = []
    written: set[str] = set()
    for env, info, index in _care_episodes():
        ids = _episode_ids(env)
        if index < len(CARE_BLUEPRINTS):  # and the ids write tools create, once per blueprint
            state = env.unwrapped.trace.start_state
            holder = next(
                row
                for row in env.unwrapped.episode.setup.truth.rows["customers"]
                if row[1] == state["customer_id"]
            )
            env.step(
                tool_call(
                    "verify_identity",
                    customer_id=state["customer_id"],
                    full_name=holder[2],
                    birth_date=holder[3],
                )
            )
            env.step(
                tool_call(
                    "apply_credit", account_id=state["account_id"], amount=5, reason="goodwill"
                )
            )
            new = _oracle_ids(env, info) - ids
            written |= new
            ids |= new
        assert not ids & examples, (info["privileged"]["label"], sorted(ids & examples))
        state = env.unwrapped.trace.start_state
        callers.append((state["customer_id"], state["account_id"], state["msisdns"][0]))
        caller = (state["customer_id"], state["account_id"], *state["msisdns"])
        assert all(GENERATED_BSS_ID.fullmatch(i) for i in caller), caller
    for position in range(3):  # the caller differs from episode to episode
        assert len({caller[position] for caller in callers}) >= 0.95 * EPISODES
    assert {i[:3] for i in written} >= {"SUB", "TCK", "CNC"}  # subscriptions, tickets, credits


def test_no_example_is_ever_an_id_of_a_network_episode(examples):
    serving: list[str] = []
    written: set[str] = set()
    for env, info, index in _network_episodes():
        ids = _episode_ids(env)
        if index < len(NETWORK_BLUEPRINTS):  # and the ids write tools create, once per blueprint
            new = _oracle_ids(env, info) - ids
            written |= new
            ids |= new
        assert not ids & examples, (info["privileged"]["label"], sorted(ids & examples))
        serving.append(env.unwrapped.trace.start_state["serving_cell"]["cell_id"])
    assert len(set(serving)) >= 0.75 * EPISODES
    assert {i[:3] for i in written} >= {"CHG", "TT-"}  # changes and tickets


def test_every_generated_bss_id_is_drawn_and_distinct():
    focal = Focal(family_size=3, duplicate_month="2026-09", active_addon="ROAM-GCC-7")
    data = generate(np.random.default_rng(5), "ep", focal)
    tables = (  # each with its id first (after the episode id)
        "customers",
        "accounts",
        "lines",
        "invoices",
        "invoice_items",
        "payments",
        "credit_notes",
        "family_groups",
        "line_addons",
    )
    for table in tables:
        ids = [row[1] for row in data.rows[table]]
        assert ids and len(set(ids)) == len(ids), table
        assert all(GENERATED_BSS_ID.fullmatch(i) for i in ids), (table, ids[:5])
    assert not data.customer_id.startswith("C0") and not data.account_id.startswith("A0")
    # Items of an invoice keep their order (the tools list them by id).
    items: dict[str, list[str]] = {}
    for row in data.rows["invoice_items"]:
        items.setdefault(row[2], []).append(row[1])
    assert all(ids == sorted(ids) for ids in items.values())


def test_generated_ids_depend_on_the_seed_only():
    focal = Focal(family_size=2)
    np.random.seed(1)
    first = generate(np.random.default_rng(9), "ep", focal)
    np.random.seed(2)
    again = generate(np.random.default_rng(9), "ep", focal)
    other = generate(np.random.default_rng(10), "ep", focal)
    assert first.rows == again.rows and first.customer_id == again.customer_id
    assert (first.customer_id, first.account_id) != (other.customer_id, other.account_id)
    assert first.msisdns != other.msisdns


def test_same_seed_same_caller_in_the_environment():
    env = make_env("bill_shock", domain="bss")
    starts = []
    for seed in (3, 3, 4):
        env.reset(seed=seed)
        starts.append(env.unwrapped.trace.start_state)
    assert starts[0] == starts[1] and starts[0]["customer_id"] != starts[2]["customer_id"]


def test_spec_examples_are_valid_examples_of_their_format():
    """An example quoted in an argument's description matches the argument's pattern."""
    quoted = re.compile(r'e\.g\. "([^"]+)"')
    checked = 0
    for path in sorted((data_root() / "tools").glob("*.json")):
        spec = json.loads(path.read_text(encoding="utf-8"))
        for name, schema in spec["function"]["parameters"]["properties"].items():
            for example in quoted.findall(schema.get("description", "")):
                if "pattern" in schema:
                    assert re.search(schema["pattern"], example), (path.name, name, example)
                    checked += 1
    assert checked >= 7
