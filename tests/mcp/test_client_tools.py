"""An agent uses a real MCP server's tools (streamable HTTP, SSE and stdio subprocesses) in turns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.mcp.conftest import STDIO_ARGS, STDIO_COMMAND, DemoServer
from tests.mcp.helpers import server_state, until
from think import Think, open_agent
from think.mcp.tools import MAX_OUTPUT_CHARS
from think.models.base import ModelRequest
from think.testing.models import Reply, ScriptedModel, call


def script(request: ModelRequest) -> Reply:
    """`use <tool> <json args>` calls that tool; after a tool result the model says what it saw."""
    last = request.messages[-1]
    if last.role == "tool":
        return "Done."
    said = request.last_user_text
    _, name, *rest = said.split(" ", 2)
    import orjson

    return [call(name, **(orjson.loads(rest[0]) if rest else {}))]


class Mcp(Think):
    model = ScriptedModel(script)

    def get_model(self) -> ScriptedModel:
        return self.model


def tool_part(agent: Think) -> Any:
    reply = agent.messages[-1]
    assert reply.role == "assistant"
    return reply.tool_parts[0]


async def test_a_turn_calls_an_mcp_tool_over_streamable_http(data_dir: Path, demo_server: DemoServer) -> None:
    async with open_agent(Mcp, "http", data_dir=data_dir) as agent:
        added = await agent.add_mcp_server("demo", demo_server.url)
        assert added["state"] == "ready", added
        assert set(agent.mcp.tools()) >= {"demo_echo", "demo_pixel", "demo_weather", "demo_fail", "demo_slow"}
        echo = agent.mcp.tools()["demo_echo"]
        assert "'echo'" in echo.description and echo.input_schema["required"] == ["text"]

        result = await agent.chat('use demo_echo {"text": "hello"}')
        assert result.status == "completed", result
        part = tool_part(agent)
        assert (part.state, part.output) == ("output-available", "echo: hello")
        assert agent.messages[-1].text == "Done."

        await agent.chat('use demo_weather {"city": "Prague"}')
        assert tool_part(agent).output == {"city": "Prague", "celsius": 21.5}

        await agent.chat("use demo_pixel")
        image = tool_part(agent).output
        assert image["type"] == "file" and image["mediaType"] == "image/png"
        assert image["data"].startswith("data:image/png;base64,iVBOR")
        sent = agent.model.requests[-1].messages  # the model got the image as an attachment
        assert any(getattr(c, "media_type", None) == "image/png" for m in sent for c in getattr(m, "content", ()))

        await agent.chat('use demo_fail {"reason": "test"}')
        part = tool_part(agent)
        assert part.state == "output-error" and "Error executing tool fail" in (part.error_text or "")

        await agent.chat('use demo_huge {"size": 200000}')
        output = tool_part(agent).output
        assert len(output) < MAX_OUTPUT_CHARS + 100 and output.endswith("characters truncated)")


async def test_a_server_that_dies_mid_call_is_a_tool_error_and_the_turn_ends(data_dir: Path,
                                                                              demo_server: DemoServer) -> None:
    async with open_agent(Mcp, "crash", data_dir=data_dir) as agent:
        added = await agent.add_mcp_server("demo", demo_server.url)
        result = await agent.chat("use demo_crash")
        assert result.status == "completed", result
        part = tool_part(agent)
        assert part.state == "output-error", part
        assert "demo" in (part.error_text or ""), part.error_text
        assert agent.messages[-1].text == "Done."
        await until(agent, lambda: server_state(agent, added["id"]) == "failed", what="the server marked failed")
        assert "demo_echo" not in agent.mcp.tools()  # a failed server's tools leave the next turn


async def test_stdio_server_tools_and_a_crash(data_dir: Path) -> None:
    async with open_agent(Mcp, "stdio", data_dir=data_dir) as agent:
        added = await agent.add_mcp_server("local", command=STDIO_COMMAND, args=STDIO_ARGS)
        assert added["state"] == "ready", added
        assert agent.mcp_servers()[0]["server_url"].startswith("stdio:")
        await agent.chat('use local_echo {"text": "over stdio"}')
        assert tool_part(agent).output == "echo: over stdio"
        await agent.chat("use local_crash")
        part = tool_part(agent)
        assert part.state == "output-error" and "local" in (part.error_text or "")
        # the connection is marked failed, then comes back on its own (a new subprocess) after the backoff
        await until(agent, lambda: server_state(agent, added["id"]) == "failed", what="the stdio server failed")
        await until(agent, lambda: server_state(agent, added["id"]) == "ready", what="the stdio server back")
        await agent.chat('use local_echo {"text": "again"}')
        assert tool_part(agent).output == "echo: again"


async def test_sse_transport(data_dir: Path, demo_server: DemoServer) -> None:
    async with open_agent(Mcp, "sse", data_dir=data_dir) as agent:
        added = await agent.add_mcp_server("old", demo_server.sse_url, transport="sse")
        assert added["state"] == "ready", added
        await agent.chat('use old_echo {"text": "sse"}')
        assert tool_part(agent).output == "echo: sse"


class Impatient(Mcp):
    mcp_call_timeout = 0.5


async def test_a_slow_tool_times_out_as_a_tool_error(data_dir: Path, demo_server: DemoServer) -> None:
    async with open_agent(Impatient, "slow", data_dir=data_dir) as agent:
        await agent.add_mcp_server("demo", demo_server.url)
        result = await agent.chat('use demo_slow {"seconds": 30}')
        assert result.status == "completed"
        part = tool_part(agent)
        assert part.state == "output-error" and "did not answer within 0.5 s" in (part.error_text or "")
        await agent.chat('use demo_echo {"text": "still fine"}')
        assert tool_part(agent).output == "echo: still fine"


async def test_a_tool_list_change_is_picked_up(data_dir: Path, demo_server: DemoServer) -> None:
    async with open_agent(Mcp, "grow", data_dir=data_dir) as agent:
        await agent.add_mcp_server("demo", demo_server.url)
        assert "demo_late" not in agent.mcp.tools()
        await agent.chat("use demo_grow")
        await until(agent, lambda: "demo_late" in agent.mcp.tools(), what="the new tool")
        await agent.chat("use demo_late")
        assert tool_part(agent).output == "late tool here"


class WithoutTools(Mcp):
    include_mcp_tools = False


async def test_include_mcp_tools_false_keeps_direct_calls(data_dir: Path, demo_server: DemoServer) -> None:
    async with open_agent(WithoutTools, "direct", data_dir=data_dir) as agent:
        added = await agent.add_mcp_server("demo", demo_server.url)
        await agent.chat('use demo_echo {"text": "x"}')
        assert "demo_echo" not in {t.name for t in agent.model.requests[-1].tools}
        result = await agent.call_mcp_tool(added["id"], "echo", {"text": "direct"})
        assert result.content[0].text == "echo: direct"  # type: ignore[union-attr]
        assert [p["name"] for p in agent.list_prompts()] == ["greet"]
        prompt = await agent.get_prompt(added["id"], "greet", {"name": "Ada"})
        assert prompt.messages[0].content.text == "Say hello to Ada."  # type: ignore[union-attr]
        assert [r["uri"] for r in agent.list_resources()] == ["demo://readme"]
        read = await agent.read_resource(added["id"], "demo://readme")
        assert read.contents[0].text == "This is the demo server."  # type: ignore[union-attr]
