"""Misbehaving agents for the evaluation tests (loaded as module:factory)."""

from __future__ import annotations

import time
from typing import Any

from telcoenv.agents import OracleAgent


class Crashing:
    def reset(self, observation: str, info: dict[str, Any]) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        raise RuntimeError("the model server returned HTTP 500")


class Garbage:
    def reset(self, observation: str, info: dict[str, Any]) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        return object()  # not an action at all


class Hanging:
    def reset(self, observation: str, info: dict[str, Any]) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        time.sleep(60)


class SlowOracle(OracleAgent):
    """The oracle, slowed down so a test can kill a run in the middle."""

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        time.sleep(0.02)
        return super().act(observation, info)


def crashing() -> Crashing:
    return Crashing()


def garbage() -> Garbage:
    return Garbage()


def hanging() -> Hanging:
    return Hanging()


def slow_oracle() -> SlowOracle:
    return SlowOracle()
