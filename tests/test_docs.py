"""The README's tables agree with the data files they describe."""

from __future__ import annotations

import re
from pathlib import Path

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_intent_table_matches_intents_yaml(catalog):
    table = README.split("<!-- intent-table")[1].split("<!-- /intent-table -->")[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    expected = [
        f"| `{i.env_name}` | {i.label.en} | {catalog.categories[i.category]['en']} | "
        f"{len(catalog.blueprints[i.key])} | {' → '.join(i.gold_tools)} |"
        for i in catalog.intents
    ]
    assert rows == expected


def test_every_tool_is_documented(catalog):
    section = README.split("## Tools")[1].split("## Intents")[0]
    documented = set(re.findall(r"`([a-z_]+)`", section))
    assert set(catalog.tools) <= documented


def test_readme_gives_the_setup_commands():
    assert "make demo" in README and "make test" in README


def test_the_database_table_lists_every_table():
    from telcoenv.domains.network.schema import network_metadata

    section = README.split("## The network database")[1].split("\n## ")[0]
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE))
    assert documented == set(network_metadata().tables)
