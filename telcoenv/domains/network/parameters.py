"""The configuration vocabulary of the network: parameter names, legal values, engineering profile.

The tool specs in ``tools/`` are the single source of a parameter's type and legal range
(``optimize_cell``'s ``changes`` and ``optimize_slice``'s ``policy``); the database schema, the
fault injection and the causal model read them from here.
"""

from __future__ import annotations

import datetime as dt
import re
from functools import cache, lru_cache
from typing import Any

from telcoenv.domains.network.loading import network_catalog
from telcoenv.errors import ToolError

#: Engineering profile of a healthy cell per role: what recommend_param_change compares with.
PROFILE: dict[str, dict[str, Any]] = {
    role: {
        "tilt_deg": tilt,
        "tx_power_dbm": power,
        "beam_azimuth_offset_deg": 0,
        "a3_offset_db": 3.0,
        "hysteresis_db": 2.0,
        "ttt_ms": 480,
        "cio_db": 0,
        "scheduler_type": "PF",
        "max_ue_per_tti": 16,
        "prb_reservation_pct": 5,
        "mlb_enabled": True,
        "mlb_threshold_pct": 70,
        "olla_bler_target_pct": 10,
        "t310_ms": 1000,
        "hqos_priority_weight_pct": 40,
    }
    for role, tilt, power in (("macro", 6, 46), ("micro", 8, 37), ("pico", 4, 24))
}
#: Configuration parameters of a cell (and of its stored baselines), in column order.
CELL_PARAMETERS: tuple[str, ...] = tuple(PROFILE["macro"])
#: Cell attributes that optimize_cell may change besides its configuration.
CELL_ATTRIBUTES: tuple[str, ...] = ("pci", "azimuth_deg")
#: Parameters of the site's transport link that optimize_cell sets on the serving cell.
BACKHAUL_PARAMETERS: tuple[str, ...] = ("bh_rt_queue_weight_pct", "bh_shaper_mbps")
#: Default policy of each slice type. eMBB is mostly non-GBR traffic (TS 23.501 §5.7.4): a
#: modest guaranteed floor, its excess competing at its priority level (a guarantee above its
#: traffic made the level do nothing).
SLICE_POLICY: dict[str, dict[str, Any]] = {
    "eMBB": {
        "admission_threshold_pct": 95,
        "priority_level": 3,
        "min_guaranteed_mbps": 20,
        "max_share_pct": 70,
        "latency_budget_ms": 50,
    },
    "URLLC": {
        "admission_threshold_pct": 95,
        "priority_level": 1,
        "min_guaranteed_mbps": 20,
        "max_share_pct": 30,
        "latency_budget_ms": 10,
    },
}
SLICE_PARAMETERS: tuple[str, ...] = tuple(SLICE_POLICY["eMBB"])
# Blueprint KPIs that are configuration read-outs: they set the parameter of the same meaning.
KPI_TO_CELL_PARAMETER = {
    "a3_offset_dB": "a3_offset_db",
    "ttt_ms": "ttt_ms",
    "hysteresis_dB": "hysteresis_db",
    "pci_self": "pci",
}
KPI_TO_SLICE_POLICY = {
    "policy_priority_level": "priority_level",
    "policy_min_guarantee_Mbps": "min_guaranteed_mbps",
}
#: Every blueprint KPI whose sampled value is a parameter value (``pci_neighbor``: a neighbour's
#: PCI, which published release blueprints sample): its range must hold legal values of it.
KPI_READOUTS: dict[str, str] = {
    **KPI_TO_CELL_PARAMETER,
    "pci_neighbor": "pci",
    **KPI_TO_SLICE_POLICY,
}
#: States of a cell: a fault may leave the serving cell DEGRADED or DOWN.
OPERATIONAL_STATES: tuple[str, ...] = ("ENABLED", "DEGRADED", "DOWN")


@cache
def change_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schema of every changeable parameter, from the optimize_cell/optimize_slice specs."""
    tools = network_catalog().tools
    return {
        **tools["optimize_cell"].parameters["properties"]["changes"]["properties"],
        **tools["optimize_slice"].parameters["properties"]["policy"]["properties"],
    }


def legal_values(parameter: str) -> tuple[float, ...] | None:
    """The discrete legal values of a parameter per its tool spec, if it has few of them."""
    schema = change_schemas().get(parameter)
    if schema is None:
        return None
    if "enum" in schema:
        return tuple(schema["enum"])
    step = schema.get("multipleOf")
    if step:
        count = round((schema["maximum"] - schema["minimum"]) / step)
        return tuple(round(schema["minimum"] + i * step, 6) for i in range(count + 1))
    return None


@lru_cache(maxsize=256)
def parse_window(window: str) -> dt.timedelta:
    """``"30m"`` / ``"3h"`` / ``"2d"`` to a timedelta (the tool schemas enforce the pattern)."""
    match = re.fullmatch(r"([1-9][0-9]{0,2})(m|h|d)", window)
    if match is None:
        raise ToolError(f"invalid window {window!r}: use e.g. '30m', '3h' or '1d'", kind="bad_args")
    amount, unit = int(match.group(1)), match.group(2)
    delta = {
        "m": dt.timedelta(minutes=amount),
        "h": dt.timedelta(hours=amount),
        "d": dt.timedelta(days=amount),
    }[unit]
    if delta > RETENTION:
        raise ToolError(
            f"window {window!r} is longer than the 7 days the OSS keeps", kind="bad_args"
        )
    return delta


#: How long the OSS keeps KPI samples.
RETENTION = dt.timedelta(days=7)
