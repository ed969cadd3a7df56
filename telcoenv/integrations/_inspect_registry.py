"""Inspect's entry point (group ``inspect_ai``, name ``telcoenv``): one task per telcoenv
environment, registered as ``telcoenv/<env>`` (``inspect eval telcoenv/beam_misalignment``).

Inspect imports this module when a task name starts with ``telcoenv/``; the tasks are
:func:`telcoenv.integrations.inspect.telcoenv_task` for each environment of ``list_envs``.
"""

from __future__ import annotations

from inspect_ai import task

from telcoenv.integrations.inspect import env_task
from telcoenv.registration import list_envs

for _entry in list_envs():
    task(name=_entry.name)(env_task(_entry.name))
