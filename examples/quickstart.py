"""Quickstart: make an environment, investigate with tools, fix, submit, read the metrics."""

import json

import telcoenv

env = telcoenv.make("beam_misalignment", lang="en")  # IRA/RA use the multilingual embedder
statement, info = env.reset(seed=42)
print("ENGINEER:", statement)
print("TOOLS:", [tool["function"]["name"] for tool in info["tools"]])

# A plain message goes to the engineer; a tool call is an OpenAI-style {"name", "arguments"}.
print("ENGINEER:", env.step("Which cluster is affected?")[0])
network = env.unwrapped.trace.start_state  # what the engineer just told us
cell, cluster = network["serving_cell"]["cell_id"], network["cluster_id"]

observation, *_ = env.step(
    {"name": "coverage_map", "arguments": {"area": cluster, "resolution": "100m"}}
)
print("SSB BEAM SHARES:", json.loads(observation)["ssb_beams"]["user_share_per_beam"])
observation, *_ = env.step({"name": "oss_query", "arguments": {"cell_id": cell, "window": "6h"}})
offset = json.loads(observation)["configuration"]["beam_azimuth_offset_deg"]
print("BEAM OFFSET:", offset)

# A malformed call is an error observation, never an exception (and, refused, no step of the
# chain the metrics compare).
print("ERROR:", env.step({"name": "optimize_cell", "arguments": {"cell_id": cell}})[0][:90])

env.step(
    {
        "name": "optimize_cell",
        "arguments": {"cell_id": cell, "changes": {"beam_azimuth_offset_deg": 0}},
    }
)
env.step(
    {
        "name": "create_ticket",
        "arguments": {
            "cell_id": cell,
            "severity": "minor",
            "team": "field_ops",
            "summary": "Beam weights re-aligned; please check the antenna mounting.",
        },
    }
)
observation, reward, terminated, truncated, info = env.step(
    {
        "name": "submit_resolution",
        "arguments": {
            "intent": "Beam Misalignment",
            "summary": f"The SSB beams of {cell} were steered {offset} degrees off "
            "boresight. We re-aligned the beam weights (offset 0) and opened a "
            "field ticket to check the antenna mounting.",
        },
    }
)
metrics = info["metrics"]
# The outcome reward: resolved (0.6 and more), less a little for the extra oss_query call.
print("REWARD (outcome):", round(reward, 3), "RESOLVED:", info["resolved"])
print("PARTS:", {k: round(v, 3) for k, v in info["reward_components"].items()})
print("CHAINS:", metrics["predicted_chain"], "vs gold", metrics["gold_chain"])
print(
    "METRICS:",
    {k: round(metrics[k], 3) for k in ("ira", "msc", "eap", "sas", "ra")},
    "embedder:",
    metrics["embedder"],
)
