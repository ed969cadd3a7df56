"""Every exception (and warning) type telcoenv raises, in one place; none is raised inside
``TelcoEnv.step`` for anything an agent sends."""

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


class UsageError(TelcoEnvError):
    """A command-line argument that cannot be used (exit code 2, one line, no traceback)."""


class StoreError(TelcoEnvError):
    """The results database cannot be opened or used."""


class RunMismatchError(StoreError):
    """A run is resumed with another configuration than the one it was started with."""


class ModelServerError(TelcoEnvError):
    """The chat-completions server failed after the retries, or refused the request."""


class UnknownAgentError(TelcoEnvError, ValueError):
    """An agent name or ``module:factory`` reference that cannot be loaded."""


class ReleaseWarning(UserWarning):
    """A file of the published release was repaired or skipped while it was read."""


class ToolCallError(TelcoEnvError, ValueError):
    """The environment refused a call (invalid arguments, unknown cell, episode ended, ...).

    The message is the environment's error message; ``kind`` its error type. TRL sends the
    message back to the model as the tool's response.
    """

    def __init__(self, message: str, *, kind: str) -> None:
        self.kind = kind
        super().__init__(message)


class DatabaseError(TelcoEnvError):
    """An episode database cannot be opened or used (bad URL, unreachable server, schema)."""
