"""The symptom tier's words name a family, not the intent (issue 41, item 5): a word-level
classifier on the opening, and on the opening with the customer's first reply to a question
every agent asks (the line number) or to a follow-up of the tier (when they noticed), is right
in at most 40 % of episodes (chance 1/12); a message that asks what they need gets their
request, which names the intent by design. benchmarks/check_care_openings.py measures it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


@pytest.mark.slow  # about 1,000 episodes in a subprocess
def test_the_opening_and_first_reply_name_a_family_not_the_intent():
    command = ["benchmarks/check_care_openings.py", "--seeds", "12", "--json"]
    done = subprocess.run(
        [sys.executable, *command], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    for name in ("opening", "opening+line", "opening+noticed"):
        assert figures[name] <= 0.40, (name, figures)
    # The classifier learns: told what they need, it names the intent most of the time.
    assert figures["opening+clarify"] >= 0.6, figures
