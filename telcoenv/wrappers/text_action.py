"""RawTextAction: raw completion text in, a parsed action out (pluggable parsers)."""

from __future__ import annotations

from typing import Any

import gymnasium

from telcoenv.spaces import Unicode
from telcoenv.wrappers.parsers import PARSERS, Parser


class RawTextAction(gymnasium.ActionWrapper):
    """Accept raw model completions as actions.

    ``parser`` is ``"json"`` (a JSON tool call or list of calls, possibly in a code fence),
    ``"hermes"`` (``<tool_call>...</tool_call>`` blocks) or a callable ``text -> action``. Text
    with no tool call reaches the environment as a message to the engineer; the final
    resolution is a ``submit_resolution`` tool call like any other.
    """

    def __init__(self, env: gymnasium.Env, parser: str | Parser = "hermes") -> None:
        super().__init__(env)
        if isinstance(parser, str):
            if parser not in PARSERS:
                raise ValueError(f"unknown parser {parser!r}; use one of {sorted(PARSERS)}")
            parser = PARSERS[parser]
        elif not callable(parser):
            raise TypeError(
                f"parser must be one of {sorted(PARSERS)} or a callable text -> action, "
                f"got {parser!r}"
            )
        self.parser = parser
        self.action_space = Unicode()

    def action(self, action: Any) -> Any:
        return self.parser(action) if isinstance(action, str) else action
