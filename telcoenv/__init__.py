"""telcoenv: Gymnasium environments that simulate a telecom operator's network operations.

>>> import telcoenv
>>> env = telcoenv.make("beam_misalignment", lang="en")
>>> statement, info = env.reset(seed=0)
>>> sorted(t["function"]["name"] for t in info["tools"])[:3]
['complaint_trend_analysis', 'coverage_map', 'create_ticket']
"""

import importlib.util

from telcoenv.errors import (
    CatalogError,
    DatabaseError,
    EmbedderUnavailableError,
    EpisodeOptionError,
    ModelServerError,
    ReleaseWarning,
    RewardError,
    RunMismatchError,
    StoreError,
    TelcoEnvError,
    ToolCallError,
    ToolError,
    UnknownAgentError,
    UnknownEnvironmentError,
    UnknownIntentError,
    UsageError,
)
from telcoenv.registration import EnvEntry, env_id, list_envs, make, register_envs

__version__ = "0.1.0"

__all__ = [
    "CatalogError",
    "DatabaseError",
    "EmbedderUnavailableError",
    "EnvEntry",
    "EpisodeOptionError",
    "ModelServerError",
    "ReleaseWarning",
    "RewardError",
    "RunMismatchError",
    "StoreError",
    "TelcoEnvError",
    "ToolCallError",
    "ToolError",
    "UnknownAgentError",
    "UnknownEnvironmentError",
    "UnknownIntentError",
    "UsageError",
    "__version__",
    "env_id",
    "list_envs",
    "make",
    "register_envs",
]

# verifiers finds its plug-in (taskset id "telcoenv") by importing this package and reading the
# classes named in __all__. They import verifiers, so they load on first access, and are named
# only where verifiers is installed (a star import works without it).
_VERIFIERS_PLUGIN = ("TelcoHarness", "TelcoTaskset", "TelcoVerifiersEnv")
if importlib.util.find_spec("verifiers") is not None:
    __all__ += _VERIFIERS_PLUGIN

register_envs(plugins=False)  # other packages' domains: at first make, env_id or list_envs


def __getattr__(name: str) -> type:
    if name in _VERIFIERS_PLUGIN:
        from telcoenv.integrations import verifiers

        return getattr(verifiers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
