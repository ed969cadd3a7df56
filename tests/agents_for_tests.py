"""Misbehaving agents for the evaluation tests, loaded by the runner as
``tests.agents_for_tests:<Class>`` (a class is a factory: the runner calls it with the agent
options)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from telcoenv.agents import OracleAgent


class Misbehaving:
    """An agent that ignores the start of an episode; its ``act`` misbehaves."""

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        pass


class Crashing(Misbehaving):
    def act(self, observation: str, info: dict[str, Any]) -> Any:
        raise RuntimeError("the model server returned HTTP 500")


class Garbage(Misbehaving):
    def act(self, observation: str, info: dict[str, Any]) -> Any:
        return object()  # not an action at all


class Hanging(Misbehaving):
    def act(self, observation: str, info: dict[str, Any]) -> Any:
        time.sleep(60)


class SlowOracle(OracleAgent):
    """The oracle, slowed down so a test can kill a run in the middle."""

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        time.sleep(0.02)
        return super().act(observation, info)


class CrashAfterTwoSteps(OracleAgent):
    """Two gold steps, then the model server fails."""

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self.acted = 0

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        self.acted += 1
        if self.acted > 2:
            raise RuntimeError("connection reset by peer")
        return super().act(observation, info)


class Exiting(Misbehaving):
    def act(self, observation: str, info: dict[str, Any]) -> Any:
        sys.exit("the agent called sys.exit")


class Dying(Misbehaving):
    def act(self, observation: str, info: dict[str, Any]) -> Any:
        os._exit(3)  # a crash in native code: the worker process is gone, nothing is raised


class DyingInArabic(OracleAgent):
    """The oracle in English; in Arabic its process dies (a crash in native code)."""

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self.arabic = info["language"] == "ar"

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        if self.arabic:
            os._exit(3)
        return super().act(observation, info)


class Planned(OracleAgent):
    """The oracle, but where ``plan`` (``"<blueprint id>/<language>"`` -> what) says so: its
    model server fails (``"raise"``) or its process dies (``"die"``) at the first action."""

    def __init__(self, plan: dict[str, str]) -> None:
        super().__init__()
        self.plan = plan

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        self.what = self.plan.get(f"{info['privileged']['blueprint_id']}/{info['language']}")

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        if self.what == "raise":
            raise RuntimeError("planned failure")
        if self.what == "die":
            os._exit(3)
        return super().act(observation, info)


class DeafHang(Misbehaving):
    """Hangs where the episode timeout's signal cannot reach it (as a call blocked in native
    code with signals masked): only the runner can end it, by killing its process."""

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(60)


class BrokenInWorkers(OracleAgent):
    """The oracle in the process that checks it (``parent``: its pid); it cannot be made in
    any other (a worker process lacks a library, a file or a credential)."""

    def __init__(self, parent: int) -> None:
        if os.getpid() != parent:
            raise ImportError("libcuda.so.1: cannot open shared object file")
        super().__init__()


class SwallowingHang(Misbehaving):
    """Hangs, retrying on any Exception: the episode timeout must still end it (it gives up
    after 10 s, so that a timeout it swallowed fails the test instead of hanging it)."""

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                time.sleep(0.5)
            except Exception:
                continue
        raise RuntimeError("gave up")


class Flaky(OracleAgent):
    """Fails while the file ``flag`` exists (so a later attempt of the same run succeeds)."""

    def __init__(self, flag: str) -> None:
        super().__init__()
        self.flag = Path(flag)

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        if self.flag.exists():
            raise RuntimeError("the model is overloaded")
        return super().act(observation, info)


class Counting(OracleAgent):
    """The oracle, slowed down, writing each episode it starts to ``log``."""

    def __init__(self, log: str, **_: Any) -> None:  # other options: credentials, settings
        super().__init__()
        self.log = log

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        super().reset(observation, info)
        with open(self.log, "a", encoding="utf-8") as handle:  # one short append: atomic
            handle.write(f"{info['episode_id']}\n")

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        time.sleep(0.05)
        return super().act(observation, info)


class StringDomains(OracleAgent):
    """Declares its domains as a bare string (read letter by letter, it named none)."""

    domains = "network"


class NumberDomains(OracleAgent):
    """Declares its domains as a number."""

    domains = 5
