"""`write_data` and `report_progress`: data parts a tool adds to the running turn's reply."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from think import Think, open_agent, tool
from think.errors import ProtocolError
from think.messages import JSONObject
from think.stream.fanout import ChunkEvent, TurnEvent
from think.testing.models import ScriptedModel, call
from think.tools.tool import ToolContext

SAID: list[Any] = []


@tool
async def forecast(ctx: ToolContext) -> str:
    """Look up the weather, showing it as it comes."""
    agent = ctx.agent
    SAID.append(await agent.write_data("weather", {"city": "Lisbon", "sky": "cloudy"}, id="w1"))
    SAID.append(await agent.write_data("weather", {"city": "Lisbon", "sky": "clear"}, id="w1"))  # replaces it
    SAID.append(await agent.write_data("status", {"step": 1}, transient=True))
    SAID.append(await agent.report_progress(fraction=0.1, message="starting"))
    SAID.append(await agent.report_progress(fraction=0.2))  # within 200 ms of the last: dropped
    SAID.append(await agent.report_progress(milestone="fetched", data={"rows": 3}))
    SAID.append(await agent.report_progress(milestone="parsed"))
    SAID.append(await agent.report_progress(fraction=1.0, message="done"))  # a done report always goes
    return "clear"


class Forecaster(Think):
    model: ClassVar[ScriptedModel]

    def get_model(self) -> ScriptedModel:
        return type(self).model

    def get_tools(self) -> list[Any]:
        return [forecast]


async def test_data_parts_reach_the_stream_and_the_stored_reply(data_dir: Path) -> None:
    SAID.clear()
    Forecaster.model = ScriptedModel([call("forecast"), "It is clear."])
    async with open_agent(Forecaster, "f", data_dir=data_dir) as agent:
        chunks: list[JSONObject] = []
        seqs: list[int] = []

        async def listen(event: TurnEvent) -> None:
            if isinstance(event, ChunkEvent):
                chunks.append(event.chunk)
                seqs.append(event.seq)

        agent.fanout.subscribe(listen)
        await agent.save_messages(["Weather?"])
        assert SAID == [True, True, True, "emitted", "coalesced", "emitted", "emitted", "emitted"]
        data = [c for c in chunks if c["type"].startswith("data-")]
        assert [c["type"] for c in data] == ["data-weather", "data-weather", "data-status", "data-agent-progress",
                                             "data-agent-milestone", "data-agent-milestone", "data-agent-progress"]
        assert data[2]["transient"] is True and data[3]["transient"] is True
        (call_id,) = [c["toolCallId"] for c in chunks if c["type"] == "tool-input-available"]
        # Reported from inside the tool: tagged with its call, so a client shows it on that card.
        assert data[3]["data"] == {"fraction": 0.1, "message": "starting", "toolCallId": call_id}
        assert data[4]["data"]["toolCallId"] == call_id and data[6]["data"]["toolCallId"] == call_id
        assert data[4]["data"]["name"] == "fetched" and data[4]["data"]["sequence"] == 0
        assert data[4]["data"]["data"] == {"rows": 3} and isinstance(data[4]["data"]["at"], int)
        assert data[5]["data"]["sequence"] == 1
        stored = [p.to_json() for p in agent.messages[-1].parts if p.type.startswith("data-")]
        # Kept: the weather part (replaced in place) and the milestones; transient parts are not.
        assert [(p["type"], p["data"].get("sky") or p["data"].get("name")) for p in stored] == [
            ("data-weather", "clear"), ("data-agent-milestone", "fetched"), ("data-agent-milestone", "parsed")]
        assert seqs == list(range(len(chunks)))  # one stream: the data parts took their places in it

    SAID.clear()
    Forecaster.model = ScriptedModel([call("forecast"), "Still clear."])
    async with open_agent(Forecaster, "f", data_dir=data_dir) as agent:  # after a restart
        await agent.save_messages(["Again?"])
        milestones = [p.to_json()["data"]["sequence"] for p in agent.messages[-1].parts
                      if p.type == "data-agent-milestone"]
        assert milestones == [2, 3]  # numbering goes on from the stored transcript


async def test_outside_a_turn_there_is_nothing_to_write_to(data_dir: Path) -> None:
    Forecaster.model = ScriptedModel([])
    async with open_agent(Forecaster, "idle", data_dir=data_dir) as agent:
        assert await agent.write_data("weather", {}) is False
        assert await agent.report_progress(fraction=0.5) == "inactive"
        with pytest.raises(ProtocolError):
            await agent.write_data("two words", {})
