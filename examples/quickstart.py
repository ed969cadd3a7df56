"""Quickstart: make an environment, read the problem, call a tool, submit a resolution."""

import json

import telcoenv

env = telcoenv.make("beam_misalignment", lang="en")
statement, info = env.reset(seed=42)
print("ENGINEER:", statement)
print("TOOLS:", [tool["function"]["name"] for tool in info["tools"]])

# Ask the engineer (a plain message), then call a tool (OpenAI-style tool call).
print("ENGINEER:", env.step("Which cluster is affected?")[0])
cluster = env.unwrapped.trace.network["cluster_id"]  # also quoted in the reply above
observation, reward, terminated, truncated, info = env.step(
    {"name": "coverage_map", "arguments": {"area": cluster, "resolution": "100m"}})
print("COVERAGE SUMMARY:", json.loads(observation)["summary"])

# A malformed call is an error observation, never an exception.
print("ERROR:", env.step({"name": "coverage_mapp", "arguments": {}})[0][:80])

observation, reward, terminated, truncated, info = env.step({
    "name": "submit_resolution",
    "arguments": {"intent": "Beam Misalignment",
                  "summary": "SSB beams steered off boresight; re-align the beam weights."}})
print("REWARD:", reward, "TERMINATED:", terminated)
print("PREDICTED CHAIN:", info["predicted_chain"])
print("GOLD CHAIN:", info["trace"].gold_tools)
