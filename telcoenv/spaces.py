"""Gymnasium spaces for text observations and tool-call actions.

``gymnasium.spaces.Text`` checks every character against a charset and cannot hold JSON or
Arabic without a huge charset, so telcoenv uses spaces whose ``contains`` checks the type only
(as BrowserGym and tau2-bench do). ``ToolCallSpace.sample`` returns a cheap, schema-valid random
tool call, which is what ``gymnasium.utils.env_checker.check_env`` steps with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from telcoenv.specs import ToolSpec


class Unicode(spaces.Space[str]):
    """Any Python string (JSON, Arabic, ...)."""

    def __init__(self, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        return isinstance(x, str)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        return "".join(chr(int(c)) for c in self.np_random.integers(32, 127, 16))

    def __repr__(self) -> str:
        return "Unicode()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unicode)


def sample_from_schema(schema: Mapping[str, Any], rng: np.random.Generator) -> Any:
    """A random value that satisfies the small JSON-Schema subset the tool specs use."""
    if "enum" in schema:
        return schema["enum"][int(rng.integers(len(schema["enum"])))]
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        names = list(schema.get("required", []))
        optional = [n for n in properties if n not in names]
        if optional and (not names or rng.random() < 0.5):
            names.append(optional[int(rng.integers(len(optional)))])
        return {n: sample_from_schema(properties[n], rng) for n in names}
    if kind == "boolean":
        return bool(rng.random() < 0.5)
    if kind in ("number", "integer"):
        low, high = schema.get("minimum", 0), schema.get("maximum", 100)
        step = schema.get("multipleOf", 1 if kind == "integer" else None)
        if step:
            return type(step)(low + step * int(rng.integers(0, int((high - low) / step) + 1)))
        return round(float(rng.uniform(low, high)), 2)
    if "pattern" in schema:  # the specs' only patterns are time windows
        return f"{int(rng.integers(1, 13))}h"
    return "NR-URB-MACRO-" + str(int(rng.integers(100, 1000)))


class ToolCallSpace(spaces.Space[dict[str, Any]]):
    """Actions of a telcoenv episode: a tool call dict, an assistant message or a string.

    ``contains`` accepts every shape ``step`` understands; ``sample`` draws a network tool and
    schema-valid arguments (never ``submit_resolution``).
    """

    def __init__(
        self, tools: Mapping[str, ToolSpec], seed: int | np.random.Generator | None = None
    ) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)
        self.tools = {n: s for n, s in sorted(tools.items()) if s.kind != "reserved"}

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        return isinstance(x, dict | str)

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        names = list(self.tools)
        name = names[int(self.np_random.integers(len(names)))]
        return {
            "name": name,
            "arguments": sample_from_schema(self.tools[name].parameters, self.np_random),
        }

    def __repr__(self) -> str:
        return f"ToolCallSpace({len(self.tools)} tools)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolCallSpace) and other.tools.keys() == self.tools.keys()


class Messages(spaces.Space[list[dict[str, Any]]]):
    """A conversation: a list of OpenAI chat messages (dicts with a ``role``)."""

    def __init__(self, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        return isinstance(x, list) and all(isinstance(m, dict) and "role" in m for m in x)

    def sample(self, mask: Any = None, probability: Any = None) -> list[dict[str, Any]]:
        return [{"role": "user", "content": Unicode(seed=self.np_random).sample()}]

    def __repr__(self) -> str:
        return "Messages()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Messages)
