"""An MCP server's tool in a turn: `execute_tool <merged name>` holds `mcp.call_tool <server>/<tool>`."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.trace import StatusCode

from tests.mcp.conftest import STDIO_ARGS, STDIO_COMMAND, env
from tests.mcp.test_client_tools import Mcp
from tests.observe.conftest import Telemetry
from tests.observe.test_turn_spans import named, tree
from think import open_agent


async def test_an_mcp_tool_call_is_a_span_inside_its_tool_call(telemetry: Telemetry, data_dir: Path) -> None:
    async with open_agent(Mcp, "traced", data_dir=data_dir) as agent:
        added = await agent.add_mcp_server("local", command=STDIO_COMMAND, args=STDIO_ARGS, env=env())
        assert added["state"] == "ready"
        telemetry.spans.clear()
        await agent.chat('use local_echo {"text": "hi"}')
        await agent.chat('use local_fail {"reason": "test"}')
    spans = telemetry.finished()
    shape = tree(spans)
    assert (0, "invoke_agent mcp") in shape
    assert shape.count((1, "execute_tool local_echo")) == 1 and shape.count((2, "mcp.call_tool local/echo")) == 1
    assert (2, "mcp.call_tool local/fail") in shape
    ok, failed = named(spans, "mcp.call_tool local/echo")[0], named(spans, "mcp.call_tool local/fail")[0]
    assert dict(ok.attributes or {}) == {"mcp.server.name": "local", "mcp.tool.name": "echo",
                                         "mcp.transport": "stdio", "gen_ai.tool.name": "echo",
                                         "think.outcome": "ok"}
    assert ok.status.status_code == StatusCode.UNSET
    assert failed.status.status_code == StatusCode.ERROR and failed.status.description == "the tool answered isError"
