"""Exploit policies of the customer-care domain, and the correct work said in other words that
must still pass."""

from __future__ import annotations

from typing import Any

from telcoenv.audit.exploits import Scripted, submit


class ConstantAnswer(Scripted):
    """Knows the intent (an upper bound: a perfect classifier of the opening) and submits at
    once the answer that was most often right for it on other seeds: what a policy learns when
    answers do not depend on the data. Reads ``info["privileged"]["intent"]`` only."""

    name = "constant answer (intent known)"
    needs_privileged = True

    def __init__(self, constants: dict[str, str]) -> None:
        self.constants = constants

    def start(self, observation: str, info: dict[str, Any]) -> None:
        self.intent = self.catalog.intent(info["privileged"]["intent"])

    def finish(self) -> dict[str, Any]:
        answer = self.constants.get(self.intent.key)
        return submit(self.label(self.intent), "Resolved.", answer)
