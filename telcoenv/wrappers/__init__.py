"""Wrappers for training loops: raw-text actions, chat observations, trajectory recording,
tool budgets. Order them outside in: ``RawTextAction(ToolBudget(TrajectoryRecorder(env)))``;
``ChatMessages`` and ``TrajectoryRecorder`` both number tool calls, so use one transcript
owner per stack (the recorder records the parsed calls)."""

from telcoenv.wrappers.budget import ToolBudget
from telcoenv.wrappers.chat import ChatMessages, ChatTranscript
from telcoenv.wrappers.parsers import PARSERS, parse_function_tags, parse_hermes, parse_json_call
from telcoenv.wrappers.recorder import TrajectoryRecorder, load_trajectories, replay
from telcoenv.wrappers.text_action import RawTextAction

__all__ = [
    "PARSERS",
    "ChatMessages",
    "ChatTranscript",
    "RawTextAction",
    "ToolBudget",
    "TrajectoryRecorder",
    "load_trajectories",
    "parse_function_tags",
    "parse_hermes",
    "parse_json_call",
    "replay",
]
