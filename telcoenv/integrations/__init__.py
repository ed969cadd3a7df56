"""Adapters from telcoenv to training frameworks.

Each adapter is a thin module over :class:`telcoenv.env.TelcoEnv` and lives behind an optional
extra, so that ``import telcoenv`` never needs a training framework: for example
:mod:`telcoenv.integrations.trl` (TRL's ``GRPOTrainer(environment_factory=...)``) is installed
with ``pip install "telcoenv[trl]"``.
"""
