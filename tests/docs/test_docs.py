"""The README and docs/ agree with the code and data they describe (their code blocks run in
tests/docs/test_docs_examples.py)."""

from __future__ import annotations

import importlib
import re

import pytest

from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
DOCS = {p.name: p.read_text(encoding="utf-8") for p in sorted((REPO_ROOT / "docs").glob("*.md"))}


def section(text: str, heading: str) -> str:
    """The body of a ``## heading`` section, up to the next heading of level 2."""
    return text.split(f"\n## {heading}\n")[1].split("\n## ")[0]


def test_intent_table_matches_intents_yaml(catalog):
    page = DOCS["environments.md"]
    table = page.split("<!-- intent-table")[1].split("<!-- /intent-table -->")[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    expected = [
        f"| `{i.env_name}` | {i.label.en} | {catalog.categories[i.category]['en']} | "
        f"{len(catalog.blueprints[i.key])} | {' → '.join(i.gold_tools)} |"
        for i in catalog.intents
    ]
    assert rows == expected


def test_every_network_tool_is_documented(catalog):
    documented = set(re.findall(r"`([a-z_]+)`", section(DOCS["environments.md"], "Tools")))
    assert set(catalog.tools) <= documented


def test_every_customer_care_tool_is_documented():
    from telcoenv.domains.bss.blueprints import care_catalog

    documented = set(re.findall(r"`([a-z_]+)`", section(DOCS["customer_care.md"], "Tools")))
    assert set(care_catalog().tools) <= documented


def test_readme_gives_the_setup_commands():
    assert "make demo" in README and "make test" in README


def test_readme_is_a_front_door():
    assert len(README.splitlines()) <= 300


def test_the_database_table_lists_every_table():
    from telcoenv.domains.network.schema import network_metadata

    documented = set(re.findall(r"^\| `([a-z_]+)` \|", DOCS["database.md"], flags=re.MULTILINE))
    assert documented == set(network_metadata().tables)


def test_the_readme_links_every_docs_page():
    table = section(README, "Documentation")
    linked = set(re.findall(r"\]\(docs/([a-z_]+\.md)\)", table))
    assert linked == set(DOCS)


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


PAGES = {"README.md": README, **{f"docs/{name}": text for name, text in DOCS.items()}}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_relative_links_and_anchors_resolve(name: str):
    base = (REPO_ROOT / name).parent
    text = re.sub(r"^```.*?^```", "", PAGES[name], flags=re.MULTILINE | re.DOTALL)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        page = (base / path).resolve() if path else REPO_ROOT / name
        if not page.exists():
            broken.append(target)
            continue
        if anchor and page.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.MULTILINE)
            if anchor not in {_anchor(h) for h in headings}:
                broken.append(target)
    assert not broken, f"{name}: broken links {broken}"


# What docs/design.md's step data flow names, where it lives in the code.
DATA_FLOW_FILES = [
    "telcoenv/env.py",
    "telcoenv/options.py",
    "telcoenv/episode.py",
    "telcoenv/policies.py",
    "telcoenv/domains/__init__.py",
]
DATA_FLOW = {
    "telcoenv.env": ["TelcoEnv"],
    "telcoenv.options": ["EnvSettings", "check_seed", "check_reset_options"],
    "telcoenv.episode": ["Episode"],
    "telcoenv.policies": ["StepBudget", "ApprovalGate", "Remeasurements"],
    "telcoenv.rewards": ["ShapingTracker", "reward_from", "terminal_components"],
    "telcoenv.actions": ["receive", "ToolCall", "PlainMessage", "ParseError"],
    "telcoenv.metrics.scoring": ["score_episode"],
    "telcoenv.snapshot": ["EpisodeStart"],
    "telcoenv.trace": ["ActionRecord", "EpisodeTrace"],
    "telcoenv.domains": [
        "Domain",
        "EpisodeSetup",
        "get_domain",
        "register_domain",
        "unregister_domain",
        "domain_names",
    ],
}


def _named(name: str, text: str) -> bool:
    """Whether ``name`` is written in a code span of ``text``."""
    return re.search(rf"`[^`]*\b{re.escape(name)}\b[^`]*`", text) is not None


def test_the_step_data_flow_names_what_the_code_has():
    """docs/design.md describes the structure of the step: every file, class, function and
    method it names there exists."""
    flow = section(DOCS["design.md"], "The step data flow")
    for path in DATA_FLOW_FILES:
        assert (REPO_ROOT / path).is_file() and f"`{path}`" in flow, path
    for module, names in DATA_FLOW.items():
        loaded = importlib.import_module(module)
        for name in names:
            assert hasattr(loaded, name), f"{module}.{name} does not exist"
            assert _named(name, flow), f"{name} is not in the data flow"
    from telcoenv.env import TelcoEnv
    from telcoenv.episode import Episode

    for method in ("reset", "step", "get_state", "set_state", "clone", "render", "close"):
        assert callable(getattr(TelcoEnv, method)) and _named(method, flow), method
    from telcoenv.policies import ApprovalGate, Remeasurements, StepBudget

    env = TelcoEnv("beam_misalignment", embedder=None)
    env.reset(seed=0)
    episode = env.episode
    assert isinstance(episode, Episode)
    assert isinstance(episode.budget, StepBudget)
    assert isinstance(episode.approval, ApprovalGate)
    assert isinstance(episode.remeasurements, Remeasurements)
    env.close()
    assert _named("EpisodeSetup.truth", flow)
