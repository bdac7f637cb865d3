"""A coding assistant: it edits files in its workspace, runs them with `bash` and checks them with `execute`.

    think serve examples/coding_assistant.py:CodingAssistant     # chat; the files panel shows its work
    python examples/coding_assistant.py                          # offline: a scripted model plays it

Every agent has the workspace file tools (`read`, `write`, `edit`, `list`, `find`, `grep`,
`delete`) and `bash`; this one gives `bash` a longer time limit and adds `execute` (code mode).

* The workspace is a filesystem stored in the agent's SQLite file, so the project survives
  restarts and clients read it over RPC (`list_workspace`, `read_workspace_file`).
* `bash` runs real bash under bubblewrap over a snapshot of the workspace: no network, its own
  process and memory limits, and only changes to workspace files are written back. Where
  bubblewrap is missing (`apt-get install bubblewrap`), its calls return an error the model sees.
* `execute` runs a Python program in the pydantic-monty sandbox: no files, network or imports of
  its own; `state.*` is the workspace, `tools.*` the tools of `get_tools()` (here: none besides
  `execute`), so it is the tool for checks over many files at once.
"""

from __future__ import annotations

import asyncio
from typing import Any

from think import Think, open_agent
from think.messages import ToolPart
from think.sandbox import BashOptions
from think.testing import ScriptedModel, call
from think.tools.execute import create_execute_tool

FIZZBUZZ = '''import sys


def fizzbuzz(n: int) -> str:
    return "Fizz" * (n % 3 == 0) + "Buzz" * (n % 5 == 0) or str(n)


if __name__ == "__main__":
    for i in range(1, int(sys.argv[1]) + 1):
        print(fizzbuzz(i))
'''

CHECK = """
lines = state.read_file("/out/fizzbuzz.txt").splitlines()
{"lines": len(lines), "fizzbuzz_at": [i + 1 for i, line in enumerate(lines) if line == "FizzBuzz"]}
"""


class CodingAssistant(Think):
    """Writes, runs and checks small programs in its workspace."""

    workspace_bash = BashOptions(timeout=60)
    welcome = "A coding assistant with a workspace, a sandboxed shell and code mode. Its files are in the panel."
    suggestions = ("Write fizzbuzz in Python, run it up to 15 and check the output.",
                   "List the files in the workspace.",
                   "Count the lines of every .py file.")

    def get_system_prompt(self) -> str:
        return ("You are a careful coding assistant. Keep the project in the workspace under /src, write files "
                "with `write` or `edit`, run them with `bash` (python3 is there; there is no network), and use "
                "`execute` for checks across many files. Show what you ran and what it printed.")

    def get_tools(self) -> list[Any]:
        return [create_execute_tool(self, timeout=10)]


class OfflineCodingAssistant(CodingAssistant):
    def get_model(self) -> ScriptedModel:
        return ScriptedModel([
            call("write", path="/src/fizzbuzz.py", content=FIZZBUZZ),
            call("bash", script="mkdir -p /out && python3 /src/fizzbuzz.py 15 | tee /out/fizzbuzz.txt | tail -n 3"),
            call("execute", code=CHECK),
            "fizzbuzz.py prints 15 lines and FizzBuzz only at 15; the output is in /out/fizzbuzz.txt.",
        ])


async def main() -> None:
    async with open_agent(OfflineCodingAssistant, "demo", data_dir=".think-example") as agent:
        await agent.clear_messages()
        await agent.save_messages("Write fizzbuzz in Python, run it up to 15 and check the output.")
        for part in (p for m in agent.messages for p in m.parts):
            if isinstance(part, ToolPart):
                print(part.name, part.output)
        print(agent.messages[-1].text)


if __name__ == "__main__":
    asyncio.run(main())
