"""Helpers for the A2A tests: the SDK's client on a live server, messages, and event summaries."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageConfiguration, SendMessageRequest, StreamResponse
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Value


@asynccontextmanager
async def a2a_client(base_url: str, agent: str, *, streaming: bool = True,
                     polling: bool = False) -> AsyncIterator[Client]:
    """The SDK's client for `agent`, resolved from its agent card."""
    async with httpx.AsyncClient(timeout=30) as http:
        factory = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming, polling=polling))
        client = await factory.create_from_url(f"{base_url}/agents/{agent}")
        try:
            yield client
        finally:
            await client.close()


def text(words: str, *, context_id: str = "", task_id: str = "", message_id: str | None = None) -> Message:
    return Message(message_id=message_id or str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=words)],
                   context_id=context_id, task_id=task_id)


def data(value: dict[str, Any], *, context_id: str, task_id: str) -> Message:
    part = Part()
    part.data.CopyFrom(_value(value))
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[part], context_id=context_id,
                   task_id=task_id)


def _value(value: Any) -> Value:
    out = Value()
    from google.protobuf.json_format import ParseDict

    ParseDict(value, out)
    return out


def request(message: Message, *, return_immediately: bool = False) -> SendMessageRequest:
    return SendMessageRequest(message=message,
                              configuration=SendMessageConfiguration(return_immediately=return_immediately))


async def collect(client: Client, message: Message, **options: Any) -> list[dict[str, Any]]:
    """Every StreamResponse of one SendMessage, as dicts."""
    return [as_dict(event) async for event in client.send_message(request(message, **options))]


def as_dict(event: StreamResponse | Any) -> dict[str, Any]:
    return dict(MessageToDict(event))


def kinds(events: list[dict[str, Any]]) -> list[str]:
    """`task:<state>`, `status:<state>`, `artifact` for each event."""
    out = []
    for event in events:
        if "task" in event:
            out.append("task:" + event["task"]["status"]["state"].removeprefix("TASK_STATE_"))
        elif "statusUpdate" in event:
            out.append("status:" + event["statusUpdate"]["status"]["state"].removeprefix("TASK_STATE_"))
        elif "artifactUpdate" in event:
            out.append("artifact")
    return out


def streamed_text(events: list[dict[str, Any]]) -> str:
    return "".join(p.get("text", "") for e in events if "artifactUpdate" in e
                   for p in e["artifactUpdate"]["artifact"]["parts"])


def task_of(events: list[dict[str, Any]]) -> tuple[str, str]:
    """(task id, context id) from the first event."""
    task = events[0]["task"]
    return task["id"], task["contextId"]
