"""telcoenv: Gymnasium environments that simulate a telecom operator's network operations.

>>> import telcoenv
>>> env = telcoenv.make("beam_misalignment", lang="en")
>>> statement, info = env.reset(seed=0)
>>> sorted(t["function"]["name"] for t in info["tools"])[:3]
['complaint_trend_analysis', 'coverage_map', 'create_ticket']
"""

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

register_envs(plugins=False)  # other packages' domains: at first make, env_id or list_envs
