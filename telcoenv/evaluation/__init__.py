"""Batch evaluation: run an agent over the benchmark grid, store every episode, report."""

#: The results store ``telcoenv evaluate`` and ``report`` use without ``--db`` (here, not in
#: ``store``: the command line names it without importing SQLAlchemy).
DEFAULT_DB = "sqlite:///telcoenv-results.sqlite"
