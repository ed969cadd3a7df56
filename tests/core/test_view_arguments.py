"""The ``detail`` argument of long outputs: one schema in every spec that has it, in both
domains, and exactly the tools whose implementation takes it offer it."""

from __future__ import annotations

import inspect
import json

from telcoenv.datafiles import data_root
from telcoenv.domains.bss.tools import TOOLS as CARE_TOOLS
from telcoenv.domains.network.tools import TOOLS as NETWORK_TOOLS
from telcoenv.tooling import FULL_HINT, VIEW_ARGUMENTS

DETAILED = {
    "kpi_timeseries",
    "coverage_map",
    "traffic_forecast",
    "get_bill",
    "get_payment_history",
    "list_plans",
}


def test_the_spec_offers_the_same_detail_argument_wherever_it_is_implemented():
    tools = {**NETWORK_TOOLS, **CARE_TOOLS}
    specs = {
        name: json.loads((data_root() / "tools" / f"{name}.json").read_text(encoding="utf-8"))
        for name in tools
    }
    offered = {n for n, s in specs.items() if "detail" in s["function"]["parameters"]["properties"]}
    implemented = {n for n, f in tools.items() if "detail" in inspect.signature(f).parameters}
    assert offered == implemented == DETAILED
    schemas = [specs[n]["function"]["parameters"]["properties"]["detail"] for n in offered]
    assert all(schema == schemas[0] for schema in schemas)
    assert schemas[0]["default"] == "summary" and "detail" not in specs["get_bill"]["function"][
        "parameters"
    ].get("required", [])
    assert {"detail"} == VIEW_ARGUMENTS and FULL_HINT == 'call again with detail="full"'
