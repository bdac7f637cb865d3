"""The A2A endpoints driven by the `a2a-sdk` client (JSON-RPC binding) against a live server: the
agent card, streamed and blocking messages, a conversation over several tasks, an approval as
`input-required` answered on the same task, cancel, subscribe, idempotent resends, and the same
transcript seen over the WebSocket."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client.errors import A2AClientError
from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, SubscribeToTaskRequest
from a2a.utils.errors import A2AError

from tests.chat.live_server import LiveServer, serve_in_thread
from tests.ui_protocols.a2a_client import a2a_client, as_dict, collect, data, kinds, streamed_text, task_of, text
from tests.ui_protocols.agents import ProtocolChat
from think.client import AgentClient
from think.runtime import EmbeddedRuntime
from think.server import create_app

AGENT = "protocol-chat"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    data_dir = tmp_path_factory.mktemp("a2a") / "data"
    app = create_app([ProtocolChat], runtime=EmbeddedRuntime(Path(data_dir), idle_timeout=60),
                     protocols=["cf_agent", "a2a"])
    with serve_in_thread(app) as live:
        yield live


def _stored(server: LiveServer, context_id: str) -> list[dict[str, Any]]:
    return list(httpx.get(server.http_url(AGENT, context_id, "get-messages"), timeout=10).json())


def _texts(stored: list[dict[str, Any]]) -> list[str]:
    return ["".join(p.get("text", "") for p in m["parts"] if p["type"] == "text") for m in stored]


def _part(stored: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    return next(p for m in stored for p in m["parts"] if p.get("toolCallId") == call_id)


def test_the_agent_card_names_the_endpoint_and_the_skills(server: LiveServer) -> None:
    card = httpx.get(server.base_url + f"/agents/{AGENT}/.well-known/agent-card.json", timeout=10).json()
    assert card["name"] == "ProtocolChat" and card["description"] == "Answers questions and counts."
    assert card["supportedInterfaces"] == [{"url": f"{server.base_url}/agents/{AGENT}/a2a",
                                            "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]
    assert card["capabilities"] == {"streaming": True, "pushNotifications": False}
    skills = {s["id"]: s for s in card["skills"]}
    assert set(skills) == {"chat", "notify", "count_up"}  # get_location is a client tool: not a skill
    assert skills["notify"]["description"] == "Notify the team."
    root = httpx.get(server.base_url + "/.well-known/agent-card.json", timeout=10).json()
    assert root == card  # the first (here: the only) chat agent class


async def test_a_streamed_message_is_a_task_that_completes(server: LiveServer) -> None:
    async with a2a_client(server.base_url, AGENT) as client:
        events = await collect(client, text("hello there"))
        task_id, context_id = task_of(events)
        assert kinds(events)[:2] == ["task:SUBMITTED", "status:WORKING"]
        assert kinds(events)[-1] == "status:COMPLETED"
        assert streamed_text(events) == "Echo: hello there"
        task = as_dict(await client.get_task(GetTaskRequest(id=task_id)))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"] == [{"artifactId": "answer", "name": "answer", "parts": [{"text": "Echo: hello there"}]}]
    assert [(m["role"], m["parts"][0]["text"]) for m in task["history"]] == [
        ("ROLE_USER", "hello there"), ("ROLE_AGENT", "Echo: hello there")]
    # the context is an agent instance: the same transcript over HTTP (and the WebSocket)
    stored = _stored(server, context_id)
    assert [m["id"] for m in stored] == [m["messageId"] for m in task["history"]]
    assert stored[0]["metadata"]["channel"] == "web"


async def test_a_blocking_message_returns_the_finished_task_and_a_context_holds_many(server: LiveServer) -> None:
    async with a2a_client(server.base_url, AGENT, streaming=False) as client:
        (first,) = await collect(client, text("one"))
        context_id = first["task"]["contextId"]
        assert first["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        (second,) = await collect(client, text("two", context_id=context_id))
    assert second["task"]["contextId"] == context_id and second["task"]["id"] != first["task"]["id"]
    assert second["task"]["artifacts"][0]["parts"][0]["text"] == "Echo: two"
    assert _texts(_stored(server, context_id)) == ["one", "Echo: one", "two", "Echo: two"]


async def test_an_approval_is_input_required_and_answered_on_the_task(server: LiveServer) -> None:
    async with a2a_client(server.base_url, AGENT) as client:
        asked = await collect(client, text("notify the team"))
        task_id, context_id = task_of(asked)
        assert kinds(asked)[-1] == "status:INPUT_REQUIRED"
        with pytest.raises((A2AClientError, A2AError), match="waits for an approval"):
            await collect(client, text("what do you mean?", context_id=context_id, task_id=task_id))
        answered = await collect(client, text("yes", context_id=context_id, task_id=task_id))
        assert kinds(answered)[0] == "task:WORKING" and kinds(answered)[-1] == "status:COMPLETED"
        assert streamed_text(answered) == "Done: Sent: hello"
        task = as_dict(await client.get_task(GetTaskRequest(id=task_id)))
        with pytest.raises((A2AClientError, A2AError), match="not waiting for input"):
            await collect(client, text("yes", context_id=context_id, task_id=task_id))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["text"] == "Done: Sent: hello"
    assert _part(_stored(server, context_id), "n1")["state"] == "output-available"


async def test_a_data_part_denies_the_call(server: LiveServer) -> None:
    async with a2a_client(server.base_url, AGENT) as client:
        task_id, context_id = task_of(await collect(client, text("notify the team")))
        answered = await collect(client, data({"approved": False}, context_id=context_id, task_id=task_id))
    assert kinds(answered)[-1] == "status:COMPLETED"
    assert _part(_stored(server, context_id), "n1")["state"] == "output-denied"


async def test_cancel_stops_a_running_task_and_keeps_its_partial(server: LiveServer) -> None:
    async with a2a_client(server.base_url, AGENT, streaming=False, polling=True) as client:
        (started,) = await collect(client, text("gated work"), return_immediately=True)
        task_id, context_id = started["task"]["id"], started["task"]["contextId"]
        assert started["task"]["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
        async with AgentClient.connect(server.agent_url(AGENT, context_id), wait_timeout=10) as tab:
            # a WebSocket tab of the conversation sees the A2A task's turn stream
            await tab.wait_until(lambda c: any(t.message.text.strip() == "w01 w02 w03" for t in c.turns.values()))
            canceled = as_dict(await client.cancel_task(CancelTaskRequest(id=task_id)))
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        again = as_dict(await client.get_task(GetTaskRequest(id=task_id)))
        assert again["status"]["state"] == "TASK_STATE_CANCELED"
        assert again["artifacts"][0]["parts"][0]["text"].split() == ["w01", "w02", "w03"]  # the partial is kept
        with pytest.raises((A2AClientError, A2AError), match="TASK_STATE_CANCELED"):
            await client.cancel_task(CancelTaskRequest(id=task_id))  # a terminal task is not cancelable
    assert _texts(_stored(server, context_id))[-1].split() == ["w01", "w02", "w03"]


async def test_subscribe_follows_a_running_task_to_its_end(server: LiveServer) -> None:
    async with a2a_client(server.base_url, AGENT, streaming=False, polling=True) as starter, \
            a2a_client(server.base_url, AGENT) as client:
        (started,) = await collect(starter, text("gated work"), return_immediately=True)
        task_id, context_id = started["task"]["id"], started["task"]["contextId"]
        async with AgentClient.connect(server.agent_url(AGENT, context_id), wait_timeout=10) as tab:
            await tab.wait_until(lambda c: any(t.message.text.strip() == "w01 w02 w03" for t in c.turns.values()))
            events: list[dict[str, Any]] = []
            async for event in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                events.append(as_dict(event))
                if len(events) == 1:
                    assert kinds(events) == ["task:WORKING"]
                    await tab.call("open_gate")
    assert kinds(events)[-1] == "status:COMPLETED"
    assert "w04 w05" in streamed_text(events)
    assert events[-1]["statusUpdate"]["status"]["message"]["parts"][0]["text"] == "w01 w02 w03 w04 w05"


async def test_a_resent_message_is_the_same_task(server: LiveServer) -> None:
    message_id = f"m-{secrets.token_hex(4)}"
    async with a2a_client(server.base_url, AGENT, streaming=False) as client:
        (first,) = await collect(client, text("only once", message_id=message_id))
        context_id = first["task"]["contextId"]
        (again,) = await collect(client, text("only once", message_id=message_id, context_id=context_id))
    assert again["task"]["id"] == first["task"]["id"]
    assert _texts(_stored(server, context_id)) == ["only once", "Echo: only once"]


def test_on_before_connect_is_asked_for_the_card_and_the_conversation(tmp_path: Path) -> None:
    asked: list[tuple[str, str]] = []

    def gate(conn: Any, class_name: str, name: str) -> bool | None:
        asked.append((class_name, name))
        return None if name in ("", "open") else False

    app = create_app([ProtocolChat], runtime=EmbeddedRuntime(tmp_path / "data", idle_timeout=60),
                     protocols=["cf_agent", "a2a"], on_before_connect=gate)
    with serve_in_thread(app) as live:
        assert httpx.get(live.base_url + "/.well-known/agent-card.json", timeout=10).status_code == 200
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                "params": {"message": {"messageId": "x", "role": "ROLE_USER", "parts": [{"text": "hi"}],
                                       "contextId": "closed"}}}
        refused = httpx.post(live.base_url + f"/agents/{AGENT}/a2a", json=body, timeout=10,
                             headers={"A2A-Version": "1.0"})
        assert refused.status_code == 403
        body["params"]["message"]["contextId"] = "open"  # type: ignore[index]
        answered = httpx.post(live.base_url + f"/agents/{AGENT}/a2a", json=body, timeout=10,
                              headers={"A2A-Version": "1.0"})
    assert answered.status_code == 200 and answered.json()["result"]["task"]["contextId"] == "open"
    assert asked == [("ProtocolChat", ""), ("ProtocolChat", "closed"), ("ProtocolChat", "open")]
