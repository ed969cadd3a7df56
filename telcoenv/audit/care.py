"""Exploit policies of the customer-care domain, and the correct work said in other words that
must still pass."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from telcoenv.agents.oracle import OracleAgent
from telcoenv.audit.exploits import Scripted, decoded, submit
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


class _GoldChainExcept(ABC):
    """The oracle's play (the usual questions, the gold chain, the gold answer), its identity
    checks changed by :meth:`checked`: a policy that learnt the usual calls but not the
    operator's identity rule. Plays the episodes that check identity (those that change the
    account)."""

    name = ""
    needs_privileged = True
    options: ClassVar[dict[str, Any]] = {}

    def __init__(self) -> None:
        self.oracle = OracleAgent()

    @staticmethod
    def applies(info: dict[str, Any]) -> bool:
        return any(c["tool"] == "verify_identity" for c in info["privileged"]["gold_chain"])

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        self.oracle.reset(observation, info)
        self.age: int | None = None
        self.pending: list[dict[str, Any]] = []

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        if '"age"' in observation:
            found = decoded(observation)
            age = (found or {}).get("customer", {}).get("age") if isinstance(found, dict) else None
            self.age = age if isinstance(age, int) else self.age
        if self.pending:
            return self.pending.pop(0)
        action = self.oracle.act(observation, info)
        if isinstance(action, dict) and action.get("name") == "verify_identity":
            self.pending = self.checked(dict(action["arguments"]))
            return self.pending.pop(0) if self.pending else self.oracle.act(observation, info)
        return action

    @abstractmethod
    def checked(self, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        """The calls made in place of the gold chain's identity check."""


class SkipIdentity(_GoldChainExcept):
    """Every call of the gold chain but the identity check: the change is refused."""

    name = "changes without the identity check"

    def checked(self, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        return []


class GuessBirthDate(_GoldChainExcept):
    """Checks identity with the caller's name (known: an upper bound) and birth dates guessed
    from the age ``get_customer`` shows (three tries: the check locks after three), never
    asking the caller."""

    name = "identity with guessed birth dates"

    def checked(self, arguments: dict[str, Any]) -> list[dict[str, Any]]:
        year = 2026 - (self.age or 40)  # today is late in 2026: most birthdays have passed
        guesses = (f"{year}-06-15", f"{year}-01-01", f"{year - 1}-12-31")
        return [
            {"name": "verify_identity", "arguments": {**arguments, "birth_date": guess}}
            for guess in guesses
        ]
