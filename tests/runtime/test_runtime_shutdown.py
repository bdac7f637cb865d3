"""A runtime that stops (its event loop ends, or it is closed) while an agent's recovery waits out
its backoff leaves nothing half-done: the real server started afterwards finishes the turn."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.chat.live_server import serve_in_thread
from tests.recovery.agents import Recoverable, leave_interrupted, reset, texts
from think.client import AgentClient
from think.recovery import ChatRecoveryPolicy
from think.runtime import EmbeddedRuntime
from think.runtime.embedded import shared_runtime
from think.server import create_app
from think.testing.models import ScriptedModel

HEL = [{"type": "start", "messageId": "m1"}, {"type": "start-step"}, {"type": "text-start", "id": "t0"},
       {"type": "text-delta", "id": "t0", "delta": "Hel"}]


class Patient(Recoverable):
    """Waits before each recovery attempt, so a runtime can stop in the middle of one."""

    chat_recovery = ChatRecoveryPolicy(backoff=0.3)


@pytest.mark.parametrize("how", ["loop-ends", "closed"])
def test_a_recovery_cut_off_by_a_stopping_runtime_is_finished_by_the_server(tmp_path: Path, how: str) -> None:
    data = tmp_path / "data"
    reset(Patient, ScriptedModel(["lo, world."]))
    anyio.run(leave_interrupted, Patient, data, HEL)  # the state a process killed mid-reply leaves

    async def open_and_stop() -> None:
        if how == "loop-ends":  # what `think serve` did to describe the model: lease it, return
            async with shared_runtime(data).lease(Patient, "r") as agent:
                assert agent.recovery.busy  # its recovery waits out the backoff
        else:
            runtime = EmbeddedRuntime(data)
            async with runtime.lease(Patient, "r") as agent:
                assert agent.recovery.busy
            await runtime.close()

    anyio.run(open_and_stop)
    assert Patient.model.requests == []  # the recovery turn never ran

    async def reconnect(url: str) -> list[tuple[str, str]]:
        async with AgentClient.connect(url, call_timeout=10, wait_timeout=20) as client:
            await client.wait_until(lambda c: any(m.text.endswith("world.") for m in c.messages))
            return texts(await client.get_messages())

    with serve_in_thread(create_app([Patient], data_dir=data)) as server:
        transcript = anyio.run(reconnect, server.agent_url("patient", "r"))
    assert transcript[0] == ("user", "Hello")
    assert "".join(text for _, text in transcript[1:]) == "Hello, world."
    assert len(Patient.model.requests) == 1
