"""Shared fixtures: the packaged catalogue and a gold-path episode runner."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from telcoenv.catalog import Catalog, data_root
from telcoenv.domains.network.loading import network_catalog
from telcoenv.env import TelcoEnv

#: The 15 network tools, in the order of the tools/ specs listing (submit_resolution excluded).
NETWORK_TOOLS = [
    "oss_query",
    "kpi_timeseries",
    "coverage_map",
    "neighbor_audit",
    "optimize_cell",
    "optimize_slice",
    "push_config",
    "create_ticket",
    "recommend_param_change",
    "subscriber_insight",
    "device_cap_lookup",
    "sla_policy_fetch",
    "traffic_forecast",
    "complaint_trend_analysis",
    "spectrum_license_info",
]


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return network_catalog()


def gold_actions(info: dict) -> list[dict]:
    """The gold chain of a privileged reset info as tool-call actions."""
    return [
        {"name": c["tool"], "arguments": c["arguments"]} for c in info["privileged"]["gold_chain"]
    ]


def submit(intent: str = "unknown", summary: str = "summary") -> dict:
    return {"name": "submit_resolution", "arguments": {"intent": intent, "summary": summary}}


@pytest.fixture
def beam_env() -> TelcoEnv:
    return TelcoEnv("beam_misalignment", privileged=True, embedder=None)


@pytest.fixture
def data_copy(tmp_path: Path) -> Path:
    """A writable copy of the packaged data files (intents.yaml, blueprints/, tools/)."""
    root = data_root()
    shutil.copytree(root / "blueprints", tmp_path / "blueprints")
    shutil.copytree(root / "tools", tmp_path / "tools")
    shutil.copy(root / "intents.yaml", tmp_path / "intents.yaml")
    return tmp_path


def deep_list(depth: int) -> list:
    """A list nested ``depth`` levels deep, built without recursion."""
    root: list = []
    node = root
    for _ in range(depth):
        node.append([])
        node = node[0]
    return root


collect_ignore = ["plugins"]  # the plug-in domain package is imported by its own tests
