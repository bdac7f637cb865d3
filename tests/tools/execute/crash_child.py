"""Run in a child process: `python -m tests.tools.execute.crash_child DATA_DIR MODE`.

`crash`: a turn whose code makes three host calls and then one that SIGKILLs this process.
`pause`: a turn that pauses at a call needing approval, then SIGKILLs itself with the pause stored.
`approve`: the same pause, approved in this process; the code goes on after the approved call and
is killed in the next one (`die`).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from tests.tools.execute.agents import CrashCoder
from think import open_agent
from think.testing.models import ScriptedModel, call

CRASH_CODE = """
total = 0
for i in range(3):
    total += tools.bump(n=i)
try:
    note = tools.die()
except RuntimeError as e:
    note = str(e)
{"total": total, "note": note}
"""
PAUSE_CODE = """
a = tools.bump(n=1)
r = tools.send_email(to="ada@example.com", body=str(a))
{"bumped": a, "mail": r}
"""
APPROVE_CODE = """
a = tools.bump(n=1)
r = tools.send_email(to="ada@example.com", body=str(a))
b = tools.bump(n=2)
try:
    note = tools.die()
except RuntimeError as e:
    note = str(e)
{"bumped": a + b, "mail": r, "note": note}
"""


async def main(data_dir: str, mode: str) -> None:
    code = {"crash": CRASH_CODE, "pause": PAUSE_CODE, "approve": APPROVE_CODE}[mode]
    CrashCoder.model = ScriptedModel([call("execute", code=code), "Waiting for approval."])
    async with open_agent(CrashCoder, "c", data_dir=data_dir) as agent:
        await agent.save_messages(["go"])
        if mode == "pause":
            assert agent.pending_executions(), "the execution did not pause"
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "approve":
            [pending] = agent.pending_executions()
            await agent.approve_execution(pending["execution_id"])  # `die` kills the process in there


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
