"""What the tests of every layer share: paths, the packaged catalogue, environments and episodes,
actions and tool calls, hostile values, catalogue copies and results stores.

Fixtures: ``catalog`` (the network catalogue), ``beam_env`` (a privileged beam-misalignment
environment), ``data_copy`` (a writable copy of the packaged data files). Everything else is a
plain function or constant, imported as ``from tests.conftest import ...``.

The tests sit in one folder per layer: ``core`` (env, episode, actions, tooling, database,
rewards, registration, options and policies, wrappers), ``network``, ``bss``, ``metrics``,
``evaluation``, ``integrations`` and ``docs``. Markers (declared in pyproject.toml):
``integration`` on every test of ``tests/integrations`` (module-level ``pytestmark``); ``slow``
on what takes seconds: property fuzzing, telcoenv subprocesses, wheel builds, real embedding
models, a Ray instance, episode timeouts. ``pytest -m "not slow and not integration"`` is the
quick run. A module that needs an optional extra (trl, verl, openenv-core, Ray) skips itself
with ``pytest.importorskip``, so collection works without them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from telcoenv.catalog import Catalog
from telcoenv.datafiles import data_root
from telcoenv.domains.network.loading import load_catalog, network_catalog
from telcoenv.env import TelcoEnv
from telcoenv.evaluation.store import ResultStore
from tests.postgres import REQUIRED_VARIABLE, URL_VARIABLE, Unavailable, throwaway_server

collect_ignore = ["plugins"]  # the plug-in domain package is imported by its own tests

TESTS = Path(__file__).resolve().parent
REPO_ROOT = TESTS.parent
EXAMPLES = REPO_ROOT / "examples"
PLUGINS = TESTS / "plugins"  # the small fibre domain, an installed plug-in's files
FIXTURES = TESTS / "fixtures"

ARABIC = re.compile(r"[\u0600-\u06FF]")

#: The network tools an agent calls (every spec of the catalogue but submit_resolution).
NETWORK_TOOLS: list[str] = [
    name for name, spec in network_catalog().tools.items() if spec.kind != "reserved"
]


# --- the catalogue ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return network_catalog()


@pytest.fixture
def data_copy(tmp_path: Path) -> Path:
    """A writable copy of the packaged data files (intents.yaml, blueprints/, tools/)."""
    root = data_root()
    shutil.copytree(root / "blueprints", tmp_path / "blueprints")
    shutil.copytree(root / "tools", tmp_path / "tools")
    shutil.copy(root / "intents.yaml", tmp_path / "intents.yaml")
    return tmp_path


def load_network_copy(root: Path, **kwargs: Any) -> Catalog:
    """The network catalogue of a data folder such as ``data_copy``, with the packaged loader."""
    return load_catalog(root / "intents.yaml", root / "blueprints", root / "tools", **kwargs)


def edit_yaml(path: Path, edit: Callable[[Any], Any], target: Path | None = None) -> Path:
    """Apply ``edit`` to the YAML document of ``path`` and write it to ``target`` (default:
    ``path`` itself); the path written."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(document)
    target = target or path
    target.write_text(yaml.safe_dump(document, allow_unicode=True, sort_keys=False), "utf-8")
    return target


# --- environments and episodes ------------------------------------------------------------------


def make_env(intent: str | None = None, **kwargs: Any) -> TelcoEnv:
    """A TelcoEnv that scores without an embedder (no IRA or RA) and, unless told otherwise,
    returns the privileged reset info (the gold chain, values and answer)."""
    kwargs.setdefault("embedder", None)
    kwargs.setdefault("privileged", True)
    return TelcoEnv(intent, **kwargs)


@pytest.fixture
def beam_env() -> TelcoEnv:
    return make_env("beam_misalignment")


def serving_cell(env: Any) -> str:
    """The serving cell of a network episode (of ``env`` or what it wraps)."""
    return env.unwrapped.trace.start_state["serving_cell"]["cell_id"]


def blueprint_model() -> Any:
    """The network domain with its blueprint model (the KPIs the blueprint's sample and a causal
    model around it; the default is the network model): for tests of that model's own
    mechanics (``make_env(..., domain=blueprint_model())``)."""
    from telcoenv.domains.network import NetworkDomain

    return NetworkDomain(model="blueprint")


def network_episode(intent: str, seed: int = 0, **kwargs: Any) -> tuple[TelcoEnv, dict, str]:
    """A privileged network environment reset with ``seed`` (50 steps unless told otherwise):
    the environment, its reset info and its serving cell."""
    kwargs.setdefault("max_steps", 50)
    env = make_env(intent, **kwargs)
    _, info = env.reset(seed=seed)
    return env, info, serving_cell(env)


def play(env: Any, actions: Iterable[Any]) -> dict:
    """Step ``env`` with every action; the info of the last step."""
    info: dict = {}
    for action in actions:
        *_, info = env.step(action)
    return info


# --- actions and tool calls ---------------------------------------------------------------------


def tool_call(name: str, **arguments: Any) -> dict:
    """A tool-call action."""
    return {"name": name, "arguments": arguments}


def gold_actions(info: dict) -> list[dict]:
    """The gold chain of a privileged reset info as tool-call actions."""
    return [tool_call(c["tool"], **c["arguments"]) for c in info["privileged"]["gold_chain"]]


def submit(intent: str = "unknown", summary: str = "summary", answer: str | None = None) -> dict:
    """A submit_resolution action (``answer``: the exact answer of a customer-care question)."""
    arguments = {"intent": intent, "summary": summary}
    if answer is not None:
        arguments["answer"] = answer
    return tool_call("submit_resolution", **arguments)


def solving_actions(privileged: dict, lang: str = "en") -> list[dict]:
    """The gold chain and a submission of the true label and the gold summary in ``lang``."""
    chain = gold_actions({"privileged": privileged})
    return [*chain, submit(privileged["label"][lang], privileged["gold_summary"][lang])]


def call_tool(env: TelcoEnv, name: str, **arguments: Any) -> dict:
    """Call a tool as one step; its output, decoded from the JSON observation."""
    return json.loads(env.step(tool_call(name, **arguments))[0])


def error_of(observation: str) -> dict:
    """The ``error`` object of an error observation."""
    return json.loads(observation)["error"]


# --- hostile values -----------------------------------------------------------------------------


def deep_list(depth: int) -> list:
    """A list nested ``depth`` levels deep, built without recursion."""
    root: list = []
    node = root
    for _ in range(depth):
        node.append([])
        node = node[0]
    return root


#: Actions no well-behaved agent sends, for the wrappers and adapters: each must be answered.
HOSTILE_ACTIONS = [
    "\udc80",
    "<tool_call>" + "[" * 100_000 + "</tool_call>",
    "```json\n" + "[" * 100_000 + "\n```",
    '<tool_call>{"name": "oss_query", "arguments": {"cell_id": NaN}}</tool_call>',
    '<tool_call>{"name": ["x"], "arguments": 3}</tool_call>',
    {"name": "oss_query", "arguments": {"cell_id": float("nan")}},
    {
        "role": "assistant",
        "tool_calls": [{"function": {"name": "oss_query", "arguments": {"cell_id": b"x"}}}],
    },
    {"name": "oss_query", "arguments": deep_list(5000)},
    deep_list(100_000),
    {1, 2},
    None,
    '<tool_call>{"name": "oss_query", "arguments": {"cell_id": 1' + "0" * 5000 + "}}</tool_call>",
    {"name": "oss_query", "arguments": {"cell_id": 10**5000}},
]


# --- evaluation -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL database: ``TELCOENV_TEST_POSTGRES_URL``, else a throwaway server started
    for the session (tests/postgres.py); the test skips when neither can be had, and fails then
    under ``TELCOENV_REQUIRE_POSTGRES=1``."""
    given = os.environ.get(URL_VARIABLE)
    if given:
        yield given
        return
    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(throwaway_server())
        except Unavailable as exc:
            if os.environ.get(REQUIRED_VARIABLE) == "1":
                pytest.fail(f"{REQUIRED_VARIABLE}=1 but no PostgreSQL: {exc}")
            pytest.skip(f"no PostgreSQL to test against: {exc}")
        yield url


def shared_results_url(request: pytest.FixtureRequest, database: str, tmp_path: Path) -> str:
    """A results database several processes share: a SQLite file, or PostgreSQL (the
    ``postgres_url`` fixture, asked for only here, so that a SQLite case neither starts nor
    waits for it). A PostgreSQL database outlives the test: give each run a new name."""
    if database == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.sqlite'}"
    return request.getfixturevalue("postgres_url")


def result_store(tmp_path: Path, name: str = "results.sqlite") -> tuple[ResultStore, str]:
    """A results store in a new SQLite file under ``tmp_path``, and its URL."""
    url = f"sqlite:///{tmp_path / name}"
    return ResultStore(url), url


def evaluate_command(url: str, run: str, agent: str, *options: str, samples: int = 4) -> list[str]:
    """``telcoenv evaluate`` in a new interpreter: ``agent`` on the coverage-hole and
    PCI-collision blueprints, ``samples`` each, no embedder, into the run ``run`` at ``url``."""
    return [
        *(sys.executable, "-m", "telcoenv", "evaluate", "--agent", agent, "--quiet"),
        *("--intents", "coverage_hole,pci_collision", "--samples", str(samples)),
        *("--embedder", "none", "--db", url, "--run", run, *options),
    ]


#: The tables of a results database as the first release wrote them: no claims, and no domain,
#: verification or customer-care columns.
FIRST_RELEASE_TABLES = """
CREATE TABLE runs (name VARCHAR(200) PRIMARY KEY, agent VARCHAR(300), config JSON,
                   created_at VARCHAR(40));
CREATE TABLE episodes (id INTEGER PRIMARY KEY, run VARCHAR(200), key VARCHAR(300),
    intent VARCHAR(100), category VARCHAR(100), blueprint_id VARCHAR(100),
    sample_index INTEGER, language VARCHAR(8), intent_list BOOLEAN, status VARCHAR(16),
    error TEXT, ira FLOAT, msc FLOAT, eap FLOAT, sas FLOAT, ra FLOAT,
    embedder VARCHAR(200), predicted_chain JSON, gold_chain JSON, steps INTEGER,
    duration_s FLOAT, trace TEXT, agent_usage JSON, finished_at VARCHAR(40),
    CONSTRAINT one_row_per_episode UNIQUE (run, key));
"""


def first_release_results(path: Path, config: dict, episodes: Iterable[tuple] = ()) -> None:
    """A results database at ``path`` as the first release wrote it: the run ``old`` of the
    oracle with ``config``, and ``episodes`` (rows of the old ``episodes`` table)."""
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        connection.executescript(FIRST_RELEASE_TABLES)
        connection.execute(
            "INSERT INTO runs VALUES ('old', 'oracle', ?, '2026-11-01T00:00:00Z')",
            (json.dumps(config),),
        )
        connection.executemany(f"INSERT INTO episodes VALUES ({', '.join('?' * 24)})", episodes)
