"""Exploit policies of the customer-care domain, and the correct work said in other words that
must still pass."""

from __future__ import annotations

from typing import Any, ClassVar

from telcoenv.agents.oracle import OracleAgent
from telcoenv.audit.exploits import Scripted, submit
from telcoenv.tooling import RESERVED_SUBMIT


class ConstantAnswer(Scripted):
    """Knows the intent (an upper bound: a perfect classifier of the opening) and submits at
    once the answer that was most often right for it on other seeds: what a policy learns when
    answers do not depend on the data. Reads ``info["privileged"]["intent"]`` only."""

    name = "constant answer (intent known)"
    needs_privileged = True
    applies = staticmethod(lambda info: info["privileged"].get("gold_answer") is not None)

    def __init__(self, constants: dict[str, str]) -> None:
        self.constants = constants

    def start(self, observation: str, info: dict[str, Any]) -> None:
        self.intent = self.catalog.intent(info["privileged"]["intent"])

    def finish(self) -> dict[str, Any]:
        answer = self.constants.get(self.intent.key)
        return submit(self.label(self.intent), "Resolved.", answer)


class ConstantAfterReads:
    """Does the reads a resolution needs (the gold chain, scripted from the privileged info, as
    a policy that learnt the usual calls would) and then submits the constant answer instead of
    the one the data gives: it resolves only where the answer does not depend on the data."""

    name = "reads, then a constant answer"
    needs_privileged = True
    options: ClassVar[dict[str, Any]] = {}

    def __init__(self, constants: dict[str, str]) -> None:
        self.constants = constants
        self.oracle = OracleAgent()

    @staticmethod
    def applies(info: dict[str, Any]) -> bool:
        """Only episodes with a question: elsewhere there is no answer to make constant."""
        return info["privileged"].get("gold_answer") is not None

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        self.intent = info["privileged"]["intent"]
        self.oracle.reset(observation, info)

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        action = self.oracle.act(observation, info)
        if isinstance(action, dict) and action.get("name") == RESERVED_SUBMIT:
            arguments = dict(action["arguments"])
            if "answer" in arguments:
                arguments["answer"] = self.constants.get(self.intent, arguments["answer"])
            action = {**action, "arguments": arguments}
        return action
