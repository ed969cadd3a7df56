"""The loop of a rule-based agent written as a generator: it yields an action, gets the next
observation back, and the budget's last step is always its submission.

The honest baselines (``investigator``, ``care_investigator``) play their rules as one
generator (``_play``) and say what they know in ``_submit``; this base drives it, counts the
steps, and submits when the rules end, the budget is about to run out or an observation breaks
them (an agent never raises on what it sees).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Generator
from typing import Any

Action = dict[str, Any] | str


class GeneratorAgent(ABC):
    """Drives ``self._play()`` (a generator of actions fed the observations) step by step."""

    max_steps: int

    @abstractmethod
    def _play(self) -> Generator[Action, str, None]:
        """The episode's actions, each sent the observation it got."""

    @abstractmethod
    def _submit(self) -> Action:
        """The submission when the play ends or the step budget runs out."""

    def _start_play(self) -> None:
        """A new episode's play, from its first action (call in ``reset``)."""
        self._steps = 0
        self._policy: Generator[Action, str, None] | None = self._play()
        self._started = False

    def act(self, observation: str, info: dict[str, Any]) -> Action:
        steps = info.get("steps") if isinstance(info, dict) else None
        self._steps = steps if isinstance(steps, int) else self._steps + 1
        if self._policy is None or self._steps >= self.max_steps - 1:
            return self._submit()  # the last step of the budget is the submission
        try:
            if self._started:
                action = self._policy.send(observation if isinstance(observation, str) else "")
            else:
                self._started = True
                action = next(self._policy)
        except StopIteration:
            self._policy = None
            return self._submit()
        except Exception:  # an observation the rules did not foresee: submit what is known
            self._policy = None
            return self._submit()
        return action
