"""Exception types raised at telcoenv's API edge (never inside ``TelcoEnv.step``)."""

from __future__ import annotations


class TelcoEnvError(Exception):
    """Base class of every error telcoenv raises."""


class CatalogError(TelcoEnvError):
    """A data file (intents, blueprint, tool spec, KPI catalogue) is malformed.

    The message names the file, the field (a dotted path) and what is wrong.
    """

    def __init__(self, file: str, field: str, problem: str) -> None:
        self.file, self.field, self.problem = file, field, problem
        super().__init__(f"{file}: {field or '<root>'}: {problem}")


class UnknownEnvironmentError(TelcoEnvError, KeyError):
    """``telcoenv.make`` was given a name that is not registered."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class UnknownIntentError(TelcoEnvError, KeyError):
    """An intent key, env name or blueprint id is not in the catalogue."""

    def __str__(self) -> str:
        return str(self.args[0])


class EpisodeOptionError(TelcoEnvError, ValueError):
    """``reset(options=...)`` holds an unknown key or an invalid value."""


class ToolError(TelcoEnvError):
    """A tool refused a call (unknown cell, out-of-range value, ...).

    Raised by tool implementations and turned into an error observation by the environment.
    """

    def __init__(self, message: str, *, kind: str = "execution") -> None:
        self.kind = kind
        super().__init__(message)


class EmbedderUnavailableError(TelcoEnvError):
    """A sentence-embedding model cannot be loaded, or the embedder spec is unknown; the message
    says what to install or which specs are valid."""


class RewardError(TelcoEnvError):
    """A user reward function failed or returned a value that is not a finite number."""
