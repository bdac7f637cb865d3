"""Run in a child process: `python -m tests.actions.crash_child DATA_DIR MODE`; it SIGKILLs itself.

`during-note` / `during-charge`: the action (no key / an explicit key) is killed inside `execute`,
after its side effect. `after`: `charge` finishes and the ledger settles it; the process is killed
before the tool's output reaches the transcript. `park`: a durable-pause action parks, then the
process dies. `approve`: it parks, is approved here, and dies inside `execute`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

from tests.actions.agents import Shop, die_if_armed
from think import open_agent
from think.testing.models import ScriptedModel, call


class CrashShop(Shop):
    async def after_tool_call(self, ctx: Any) -> None:
        if ctx.call.name == "charge":
            die_if_armed("after")


async def main(data_dir: str, mode: str) -> None:
    first = {"during-note": call("note", text="hello"), "during-charge": call("charge", invoice_id="inv-9", cents=7),
             "after": call("charge", invoice_id="inv-9", cents=7)}.get(mode, call("send_email", to="ada@example.com",
                                                                                subject="Report"))
    CrashShop.model = ScriptedModel([first, "Waiting for approval.", "never"])
    async with open_agent(CrashShop, "c", data_dir=data_dir) as agent:
        await agent.save_messages(["go"])
        [pending] = agent.pending_approvals()
        if mode == "park":
            os.kill(os.getpid(), signal.SIGKILL)
        await agent.approve_execution(pending["execution_id"])  # `send_email` kills the process in there


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
