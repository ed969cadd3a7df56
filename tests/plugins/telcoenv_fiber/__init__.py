"""A third telcoenv domain from outside the package: home fibre access.

It exists to prove the plug-in contract. It touches no telcoenv file: its intents and blueprints
are data (``domain.yaml``), its tools typed functions behind JSON specs (``tools/``), its state
a plain dict (no database), its counterpart a subscriber, and it is found through the
``telcoenv.domains`` entry point that ``telcoenv_fiber-0.1.0.dist-info`` declares.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict

from telcoenv.catalog import Catalog, load_tools
from telcoenv.domains import EpisodeSetup
from telcoenv.errors import ToolError
from telcoenv.specs import IntentModel, Language
from telcoenv.tooling import Toolbox, ToolRegistry
from telcoenv.trace import EpisodeTrace

HERE = Path(__file__).parent


class FiberIntent(IntentModel):
    """The core's intent fields are all this domain needs."""


class FiberBlueprint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    blueprint_id: str
    intent: str
    rx_power_dbm: tuple[float, float]


class FiberState:
    """What tools see: the ONTs of the subscriber's street, by id."""

    def __init__(self, onts: dict[str, dict[str, Any]]) -> None:
        self.onts = onts


class _Store:
    """Episodes live in memory only."""

    persistent = False

    def close(self) -> None:
        pass


TOOLS = ToolRegistry()


@TOOLS.tool
def ont_status(state: FiberState, ont_id: str) -> dict[str, Any]:
    if ont_id not in state.onts:
        raise ToolError(f"unknown ONT {ont_id!r}; ONTs: {sorted(state.onts)}", kind="not_found")
    return {"ont_id": ont_id, **state.onts[ont_id]}


@TOOLS.tool
def reboot_ont(state: FiberState, ont_id: str) -> dict[str, Any]:
    ont = ont_status(state, ont_id)
    if ont["rx_power_dbm"] < -28:
        return {"ont_id": ont_id, "status": "offline", "note": "no light: a field visit is needed"}
    state.onts[ont_id]["status"] = "online"
    return {"ont_id": ont_id, "status": "online"}


INSTRUCTIONS = (
    "You support a home fibre subscriber. Find their ONT with the tools, fix what you can, then "
    "call submit_resolution with the problem and a summary. Reply in {language}.{intent_list}"
)


class FiberDomain:
    name = "fiber"
    taxonomy_env = "FiberAccess"
    counterpart = "subscriber"
    counterpart_required = False
    instructions = INSTRUCTIONS

    def __init__(self) -> None:
        data = yaml.safe_load((HERE / "domain.yaml").read_text(encoding="utf-8"))
        intents = tuple(FiberIntent(**i) for i in data["intents"])
        blueprints = [FiberBlueprint(**b) for b in data["blueprints"]]
        self.catalog = Catalog(
            categories=data["categories"],
            intents=intents,  # type: ignore[arg-type]
            blueprints={i.key: tuple(b for b in blueprints if b.intent == i.key) for i in intents},  # type: ignore[arg-type]
            tools=load_tools(HERE / "tools", domain=self.name),
        )
        self.toolbox = Toolbox(self.catalog.tools, TOOLS)

    def connect(self, url: str | None = None) -> _Store:
        return _Store()

    def start_episode(
        self,
        intent: FiberIntent,
        blueprint: FiberBlueprint,
        rng: np.random.Generator,
        lang: Language,
        database: _Store,
        episode_id: str,
    ) -> EpisodeSetup:
        numbers = rng.choice(10_000, size=3, replace=False)
        ids = [f"ONT-{int(n):04d}" for n in numbers]
        power = round(float(rng.uniform(*blueprint.rx_power_dbm)), 1)
        onts = {i: {"status": "online", "rx_power_dbm": -18.5} for i in ids[1:]}
        onts[ids[0]] = {"status": "offline", "rx_power_dbm": power}
        statement = {
            "en": f"My internet is down since the power cut. The box says {ids[0]}.",
            "ar": f"انقطع الإنترنت منذ انقطاع الكهرباء. الجهاز مكتوب عليه {ids[0]}.",
        }[lang]
        summary = {
            "en": f"{ids[0]} was offline after a power cut; a remote reboot brought it online.",
            "ar": f"كان {ids[0]} غير متصل بعد انقطاع الكهرباء؛ أعادته إعادة التشغيل عن بعد.",
        }
        return EpisodeSetup(
            facts={"rx_power_dbm": power},
            state=FiberState(copy.deepcopy(onts)),
            gold_values={"ont_id": ids[0]},
            problem_statement=statement,
            gold_summary=summary,
            truth={"ont_id": ids[0], "start": onts},
        )

    def tool_context(self, setup: EpisodeSetup, seed: Any, step: int) -> FiberState:
        return setup.state

    def reply(
        self,
        setup: EpisodeSetup,
        blueprint: FiberBlueprint,
        message: str,
        lang: Language,
        rng: np.random.Generator,
        *,
        ended: bool,
    ) -> str:
        if ended:
            return "Thanks, bye." if lang == "en" else "شكرا، مع السلامة."
        if self.asks_approval(message):
            return "Yes, go ahead." if lang == "en" else "نعم، تفضل."
        return "The light on the box is red." if lang == "en" else "الضوء على الجهاز أحمر."

    def start_state(self, setup: EpisodeSetup) -> dict[str, Any]:
        return {"onts": copy.deepcopy(setup.truth["start"])}

    def privileged(self, setup: EpisodeSetup, intent: FiberIntent) -> dict[str, Any]:
        return {"ont_id": setup.truth["ont_id"]}

    def asks_approval(self, message: str) -> bool:
        return any(word in message.lower() for word in ("may i", "can i", "ok to"))

    def verify(
        self, setup: EpisodeSetup, intent: FiberIntent, trace: EpisodeTrace
    ) -> dict[str, Any]:
        online = setup.state.onts[setup.truth["ont_id"]]["status"] == "online"
        return {"resolved": online, "checks": {"ONT online": online}, "collateral_changes": []}


@cache
def fiber_domain() -> FiberDomain:
    return FiberDomain()
