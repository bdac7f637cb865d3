"""The research-assistant example: two sub-agents answer in one step, and the lead merges them."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import orjson
from websockets.asyncio.client import connect as ws_connect

from tests.chat.live_server import serve_in_thread
from think import create_app, open_agent
from think.messages import Message, ToolPart
from think.protocol.client_codec import encode_client_frame
from think.protocol.frames import ChatRequest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "research_assistant.py"
QUESTION = "Should our town build a tram line?"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("examples_research_assistant", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_lead_delegates_to_both_children_and_merges_their_answers(data_dir: Path) -> None:
    module = load()
    async with open_agent(module.OfflineResearchLead, "town", data_dir=data_dir) as lead:
        result = await lead.save_messages(QUESTION)
        assert result.status == "completed"
        parts = [p for m in lead.messages for p in m.parts if isinstance(p, ToolPart)]
        assert sorted(p.name for p in parts) == ["advocate", "critic"]
        assert all(p.state == "output-available" and p.input == {"prompt": QUESTION} for p in parts)
        outputs = {p.name: p.output for p in parts}
        assert outputs["advocate"] == f"It would cut car trips and noise ({QUESTION!r})."
        assert outputs["critic"] == f"It costs a lot up front and takes years ({QUESTION!r})."
        merged = lead.messages[-1].text
        assert merged.startswith(f"For: {outputs['advocate']}\nAgainst: {outputs['critic']}\n")

        # Each child is an agent of its own, with its own transcript of the question and its answer.
        started = [f["event"] for f in lead.agent_tool_runs.frames() if f["event"]["kind"] == "started"]
        assert sorted(e["agentType"] for e in started) == ["offline-advocate", "offline-critic"]
        for event in started:
            cls = module.OfflineAdvocate if event["agentType"] == "offline-advocate" else module.OfflineCritic
            child = await lead.sub_agent(cls, event["runId"])
            transcript = [Message.from_json(m) if isinstance(m, dict) else m for m in await child.get_messages()]
            assert [m.role for m in transcript] == ["user", "assistant"]
            assert transcript[0].text == QUESTION
            assert transcript[1].text == outputs["advocate" if cls is module.OfflineAdvocate else "critic"]


async def test_a_browser_sees_both_children_stream_under_their_tool_calls(tmp_path: Path) -> None:
    module = load()
    app = create_app([module.OfflineResearchLead], data_dir=tmp_path / "served")
    with serve_in_thread(app) as server:
        async with ws_connect(server.agent_url("offline-research-lead", "web")) as socket:
            await socket.send(encode_client_frame(ChatRequest(id="turn-1", messages=[Message.user(QUESTION)])))
            frames: list[dict[str, Any]] = []
            with anyio.fail_after(20):
                while not (frames and frames[-1]["type"] == "cf_agent_use_chat_response" and frames[-1].get("done")):
                    frames.append(orjson.loads(await socket.recv()))
    events = [f for f in frames if f["type"] == "agent-tool-event"]
    by_call: dict[str, list[str]] = {}
    for event in events:
        by_call.setdefault(event["parentToolCallId"], []).append(event["event"]["kind"])
    assert len(by_call) == 2
    for kinds in by_call.values():
        assert kinds[0] == "started" and kinds[-1] == "finished" and "chunk" in kinds
