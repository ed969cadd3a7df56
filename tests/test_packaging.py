"""An installed wheel carries intents.yaml, blueprints/ and tools/ and runs outside the checkout."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import telcoenv
from telcoenv.catalog import data_root
from telcoenv.agents import OracleAgent, run_episode
assert "_data" in str(data_root()), data_root()
env = telcoenv.make("pci_collision", lang="ar", privileged=True, embedder=None)
reward, info = run_episode(env, OracleAgent(), seed=4)
print(telcoenv.__file__, reward, len(telcoenv.list_envs()))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    return next(out.glob("telcoenv-*.whl"))


def test_wheel_contains_the_data_files(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "telcoenv/_data/intents.yaml" in names
    assert sum(
        n.startswith("telcoenv/_data/blueprints/") and n.endswith(".yaml") for n in names
    ) == 49 + len(list((ROOT / "blueprints" / "bss").glob("*/*.yaml")))
    assert "telcoenv/domains/bss/customer.yaml" in names
    assert "telcoenv/domains/bss/products.yaml" in names
    tools = sum(n.startswith("telcoenv/_data/tools/") for n in names)
    assert tools == len(list((ROOT / "tools").glob("*.json"))) >= 16
    assert "telcoenv/schemas/blueprint.schema.json" in names
    assert "telcoenv/domains/network/engineer.yaml" in names
    assert "telcoenv/domains/bss/products.yaml" in names


def test_installed_wheel_runs_outside_the_checkout(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(site), "PATH": ""},
    )
    assert result.returncode == 0, result.stderr
    location, reward, count = result.stdout.split()
    assert location.startswith(str(site)) and reward == "1.0" and count == "34"


def test_collection_works_without_the_optional_extras(tmp_path):
    """Doctest collection imports every module; one whose extra is missing is skipped, not an
    error that stops the whole run (a user without verl can run the tests)."""
    import os

    fake = tmp_path / "verl"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        'raise ModuleNotFoundError("No module named \'verl\'", name="verl")\n'
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "telcoenv/integrations",
            "tests/test_integration_verl.py",
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert done.returncode in (0, 5), done.stdout[-2000:]  # 5: nothing left to collect
    assert "error" not in done.stdout.lower()
