"""Batch evaluation: run an agent over the benchmark grid, store every episode, report."""
