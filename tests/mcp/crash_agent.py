"""A process that adds the demo server and dies (SIGKILL from the test) in the middle of an MCP call.

    python -m tests.mcp.crash_agent DATA_DIR MCP_URL

It prints `CALLING` when the call of `demo_slow` has started; the test kills it then.
"""

from __future__ import annotations

import sys

import anyio

from tests.mcp.test_client_tools import Mcp
from think.hooks import ToolCallContext, ToolDecision
from think.runtime.embedded import EmbeddedRuntime


class Crashing(Mcp):
    async def before_tool_call(self, ctx: ToolCallContext) -> ToolDecision | None:
        print("CALLING", flush=True)
        return None


async def main(data_dir: str, url: str) -> None:
    runtime = EmbeddedRuntime(data_dir)
    async with runtime.lease(Crashing, "crash") as agent:
        await agent.add_mcp_server("demo", url)
        await agent.chat('use demo_slow {"seconds": 120}')


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
