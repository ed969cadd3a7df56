"""The shipped examples that need no trainer run to the end and print what they promise (the
RL and TRL examples: test_examples_rl.py, test_examples_trl.py)."""

from __future__ import annotations

import contextlib
import importlib.util
import runpy

import pytest

from tests.conftest import EXAMPLES

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "script",
    [
        pytest.param("quickstart.py", marks=pytest.mark.slow),  # scores with the real USE model
        "validate_blueprints.py",
        "customer_care.py",
    ],
)
def test_examples_run(script, capsys):
    exits = script == "validate_blueprints.py"  # it ends with sys.exit (0: the error was shown)
    with pytest.raises(SystemExit) if exits else contextlib.nullcontext():
        runpy.run_path(str(EXAMPLES / script), run_name="__main__")
    out = capsys.readouterr().out
    if script == "quickstart.py":  # 4 calls ran for a 3-step gold chain (one more, refused)
        assert "REWARD (outcome): 0.908 RESOLVED: True" in out
        assert "'sas': 0.75" in out and "universal-sentence-encoder-multilingual" in out
    elif script == "customer_care.py":  # the invalid first call costs SAS, not the verdict
        assert "RESOLVED: True ANSWER: True ARGS: 1.0" in out and "(customer_id, msisdn)" in out
    else:
        assert "must be below max" in out


@pytest.mark.skipif(importlib.util.find_spec("mcp") is None, reason="the mcp SDK is not installed")
def test_serve_mcp_example_runs(capfd):
    """capfd, not capsys: the example's client hands the server process its stderr file."""
    runpy.run_path(str(EXAMPLES / "serve_mcp.py"), run_name="__main__")
    out = capfd.readouterr().out
    # The first of the 3 gold steps was attempted (with bad arguments: refused, so no step), then
    # the right diagnosis submitted with nothing done: its partial credit only (0.5 x 0.35).
    assert "message and reset" in out and "REFUSED: True" in out and "REWARD: 0.175" in out
