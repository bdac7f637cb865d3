"""Run in a child process: `python -m tests.extensions.crash_child DATA_DIR MODE`.

The model loads an extension in a turn; the process SIGKILLs itself inside that load, just before
(`before`) or just after (`after`) the extension's row is written: the two sides of the one write
that makes a load durable.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from tests.extensions.agents import NOTES, Assistant
from think import open_agent
from think.extensions.store import ExtensionStore
from think.testing.models import ScriptedModel, call


def arm(mode: str) -> None:
    original = ExtensionStore.save

    def save(self: ExtensionStore, name: str, manifest: dict[str, object], source: str) -> None:
        if mode == "after":
            original(self, name, manifest, source)
        os.kill(os.getpid(), signal.SIGKILL)

    ExtensionStore.save = save  # type: ignore[method-assign]


async def main(data_dir: str, mode: str) -> None:
    Assistant.model = ScriptedModel([call("load_extension", name="notes", source=NOTES, workspace_access="read-write"),
                                     "Loaded."])
    async with open_agent(Assistant, "k", data_dir=data_dir) as agent:
        arm(mode)
        await agent.save_messages(["Load the notes tool"])
    raise SystemExit("the load finished; it should have been killed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
