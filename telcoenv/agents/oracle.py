"""The oracle: the gold chain with correct arguments, and a resolution written from the outputs.

It reads ``info["privileged"]`` (the environment must be made with ``privileged=True``), so it
is an upper bound for the metrics, not a baseline: any score below the maximum is a bug. In a
customer-care episode it first asks the customer for what they know (their line number, a trip,
a budget; as an agent without privileges must), then runs the gold chain and submits the gold
answer.
"""

from __future__ import annotations

import json
from typing import Any

from telcoenv.domains import get_domain
from telcoenv.tooling import RESERVED_SUBMIT

# The arguments that say what a change sets, named when the counterpart is asked to approve it.
_NAMED = ("plan_id", "addon_id", "subscription_id", "email", "amount")


class OracleAgent:
    """Calls the gold chain in order, then submits the true label and a grounded summary."""

    needs_privileged = True
    # Any domain: it plays the privileged gold chain, whatever domain it comes from.
    domains: tuple[str, ...] | None = None

    def __init__(self) -> None:
        self._plan: list[dict[str, Any]] = []
        self._prices: dict[str, float] = {}
        self._fees: dict[str, float] = {}  # early-change fees quoted, by plan id
        self._label = ""
        self._summary = ""
        self._notes: list[str] = []
        self._language = "en"

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        privileged = info.get("privileged")
        if privileged is None:
            raise ValueError("the oracle needs an environment made with privileged=True")
        self._tools = get_domain(info.get("domain", "network")).catalog.tools
        self._plan = [
            {"name": c["tool"], "arguments": c["arguments"]} for c in privileged["gold_chain"]
        ]
        self._language = info["language"]
        self._prices: dict[str, float] = {}
        self._fees: dict[str, float] = {}  # early-change fees quoted, by plan id
        self._label = privileged["label"][self._language]
        self._answer = privileged.get("gold_answer")
        self._notes = []
        questions: list[Any] = []
        if "customer_knows" in privileged:  # customer care: ask what only the customer knows
            questions = self._questions(privileged["customer_knows"])
            self._summary = self._label + "."
        else:
            self._plan += self._remeasurement(self._plan)
            # The gold summary is the intent's template filled with this episode's values; the
            # oracle states it and adds what the write tools returned (change and ticket ids).
            self._summary = privileged["gold_summary"][self._language]
        if info.get("require_approval"):  # ask for approval before every change
            tools = self._tools
            self._plan = [
                step
                for action in self._plan
                for step in (
                    [{"ask": action}, action] if tools[action["name"]].approval else [action]
                )
            ]
        self._plan = [*questions, *self._plan]

    def _questions(self, known: list[str]) -> list[str]:
        """Plain messages asking the customer for each thing they know but the BSS does not."""
        asks = {
            "msisdn": ("What is your mobile number?", "ما رقم جوالك؟"),
            "trip": (
                "Where are you travelling, and on what date?",
                "إلى أين ستسافر، وفي أي تاريخ؟",
            ),
            "budget": ("What is your monthly budget?", "ما ميزانيتك الشهرية؟"),
            "need_gb": ("How much data do you need?", "كم من البيانات تحتاج؟"),
        }
        index = 0 if self._language == "en" else 1
        return [asks[topic][index] for topic in known if topic in asks]

    def _remeasurement(self, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """After a configuration change, repeat the chain's last measurement to verify it.

        The repeat is a re-measurement (see ``ActionRecord.remeasure``): it does not count in
        the tool-sequence metrics, so the oracle stays at their maximum.
        """
        tools = self._tools
        changed = any(tools[a["name"]].approval for a in plan)  # a network change
        # The symptom's series (kpi_timeseries) shows the effect as its mean before and after
        # the change in a tenth of the OSS record's length (a shorter trajectory to train on);
        # a chain without one re-reads the counters (oss_query), or else what it read (the
        # neighbour audit of a PCI change, the coverage map of a beam or handover fix).
        preference = ("kpi_timeseries", "oss_query")
        reads = sorted(
            (a for a in plan if tools[a["name"]].effect == "read"),
            key=lambda a: preference.index(a["name"]) if a["name"] in preference else 2,
        )
        return [dict(reads[0])] if changed and reads else []

    def _ask(self, action: dict[str, Any]) -> str:
        """The plain message that asks the counterpart to approve a change: the change's
        target, what it sets (a plan, an add-on, a subscription, an email, an amount) and the
        price the outputs so far gave for it (the customer agrees to a described change)."""
        arguments = action["arguments"]
        named = [str(arguments[k]) for k in _NAMED if k in arguments]
        price = next((self._prices[n] for n in named if n in self._prices), None)
        fee = next((self._fees[n] for n in named if n in self._fees), None)
        told = [f"({price:.2f} SAR)"] if price else []
        told += [f"(early change fee {fee:.2f} SAR)"] if fee else []
        what = " ".join([action["name"], *named, *told])
        target = next(
            (
                arguments[k]
                for k in ("cell_id", "slice_id", "config_id", "msisdn")
                if k in arguments
            ),
            arguments.get("customer_id", ""),
        )
        if self._language == "en":
            return f"May I apply {what} on {target}?"
        return f"هل يمكنني تنفيذ {what} على {target}؟"

    def act(self, observation: str, info: dict[str, Any]) -> dict[str, Any] | str:
        if info.get("steps", 0) > 0:
            self._note(observation)
            self._learn_prices(observation)
        if self._plan:
            step = self._plan.pop(0)
            return self._ask(step["ask"]) if isinstance(step, dict) and "ask" in step else step
        arguments = {"intent": self._label, "summary": " ".join([self._summary, *self._notes])}
        if self._answer is not None:
            arguments["answer"] = self._answer
        return {"name": RESERVED_SUBMIT, "arguments": arguments}

    def _learn_prices(self, observation: str) -> None:
        """The prices (VAT included) an output gives for plans and add-ons, by id."""
        if '"price"' not in observation:
            return
        try:
            pending: list[Any] = [json.loads(observation)]
        except ValueError:
            return
        while pending:
            item = pending.pop()
            if isinstance(item, dict):
                key = item.get("plan_id") or item.get("addon_id")
                if isinstance(key, str) and isinstance(item.get("price"), (int, float)):
                    self._prices[key] = float(item["price"])
                # A quote for moving a line to the plan: its early-change fee, if any.
                fee = (item.get("change_for_line") or {}).get("early_change_fee")
                if isinstance(fee, dict) and isinstance(item.get("plan"), dict):
                    self._fees[str(item["plan"].get("plan_id"))] = float(fee["amount"])
                pending.extend(item.values())
            elif isinstance(item, list):
                pending.extend(item)

    def _note(self, observation: str) -> None:
        if not any(
            f'"{key}"' in observation for key in ("ticket_id", "change_id", "subscription_id")
        ):
            return  # only tickets and applied changes make it into the summary
        output = json.loads(observation)
        if "ticket_id" in output:
            self._notes.append(
                f"Ticket {output['ticket_id']}."
                if self._language == "en"
                else f"التذكرة {output['ticket_id']}."
            )
        elif "subscription_id" in output:
            self._notes.append(f"{output['subscription_id']}: {output.get('status', 'active')}.")
        elif output.get("change_id"):
            self._notes.append(
                f"Change {output['change_id']}."
                if self._language == "en"
                else f"التغيير {output['change_id']}."
            )
