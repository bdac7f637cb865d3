"""The AI SDK UI message stream over HTTP: what `useChat`'s `DefaultChatTransport` speaks.

    POST /agents/<agent>/<name>/chat                  {id, messages, trigger, messageId, …body}
         → 200 text/event-stream  data: <UIMessageChunk>\\n\\n … data: [DONE]\\n\\n
    GET  /agents/<agent>/<name>/chat/<chatId>/stream  → the running reply replayed, then live; 204 if none
    GET  /agents/<agent>/<name>/chat                  → the transcript (UIMessage[]) for `messages:`

The agent instance is the chat: `<name>` picks the transcript; the body's `id` and the URL's
`chatId` (the client's chat id) are not used. Every request is admitted by the app's
`on_before_connect` first. A request becomes the frames a WebSocket tab sends and is handled by
that agent's `ChatChannel` (`think.server.chat`), so it is reconciled and trusted exactly like a
`cf_agent_use_chat_request` (`think.turns.trust`): the server's transcript stands, only new user
messages are taken, and a tool answer in the last assistant message (`addToolOutput`,
`addToolApprovalResponse`) is applied only where a client may answer (`answers.py`). The turn
keeps running when the response is closed; `…/stream` picks it up from the durable buffer.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio
import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from think.agent import Think
from think.messages import Message
from think.protocol.codec import InvalidFrame, UnknownFrame, encode_message_list, parse_frame
from think.protocol.frames import ChatRequest, StreamResumeAck, StreamResumeRequest
from think.runtime.base import AgentElsewhere
from think.server.agents import AgentHost
from think.turns.tool_results import mid_batch
from think.ui_protocols import ProtocolContext, UIProtocol
from think.ui_protocols.ai_sdk.answers import AnswerRefused, answers_in, apply_answers
from think.ui_protocols.ai_sdk.stream import DONE, HEADERS, ChatStream, Frame, sse

log = logging.getLogger("think.ui_protocols.ai_sdk")

MAX_BODY_BYTES = 4 * 1024 * 1024
"""A larger request body is refused with 413."""
TRIGGERS = ("submit-message", "regenerate-message")

Release = Callable[[], Awaitable[None]]


class _EventStream(StreamingResponse):
    """The SSE response; `release` runs when it ends, however it ends. A client that goes away is
    noticed at once (not at the next write: a turn may stream nothing for a long while), so its
    place on the channel is given up then."""

    def __init__(self, stream: ChatStream, first: list[Frame], release: Release) -> None:
        super().__init__(stream.events(first), headers=HEADERS)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as tasks:

                async def stream() -> None:
                    with contextlib.suppress(OSError):  # the client went away mid-write
                        await self.stream_response(send)
                    tasks.cancel_scope.cancel()

                tasks.start_soon(stream)
                await self.listen_for_disconnect(receive)
                tasks.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._release()


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


class _Endpoints:
    def __init__(self, context: ProtocolContext) -> None:
        self.context = context

    async def _chat_agent(self, request: Request) -> tuple[type[Think], str] | Response:
        admitted = await self.context.admit(request)
        if isinstance(admitted, Response):
            return admitted
        cls, name = admitted
        if not issubclass(cls, Think):
            return _error(404, f"{cls.__name__} is not a chat agent")
        return cls, name

    async def _open(self, cls: type[Think], name: str) -> tuple[AgentHost, ChatStream, Release] | Response:
        """The agent's host with a new `ChatStream` on its channel, and what closes both."""
        stack = AsyncExitStack()
        try:
            host = await stack.enter_async_context(self.context.registry.use(cls, name))
        except AgentElsewhere:
            raise  # open in another process of a cluster: the request is forwarded there
        except Exception:
            log.exception("agent %s %r failed to start", cls.__name__, name)
            return _error(500, "The agent failed to start")
        stream = ChatStream()
        host.connections.add(stream)

        async def release() -> None:  # once, however many ways the request ends
            if stream.released:
                return
            stream.released = True
            stream.end()
            host.disconnect(stream)
            await stack.aclose()

        return host, stream, release

    async def chat(self, request: Request) -> Response:
        target = await self._chat_agent(request)  # before the body is read
        if isinstance(target, Response):
            return target
        if request.method == "GET":
            async with self.context.registry.runtime.lease(*target) as agent:
                assert isinstance(agent, Think)
                return Response(encode_message_list(agent.session.history_json()), media_type="application/json")
        parsed = await _read_request(request)
        if isinstance(parsed, Response):
            return parsed
        frame, messages = parsed
        opened = await self._open(*target)
        if isinstance(opened, Response):
            return opened
        host, stream, release = opened
        try:
            assert host.chat is not None
            answers = answers_in(host, messages, frame)
            if answers.frames:  # the reply is the continuation the answers ask for
                try:
                    applied = await apply_answers(host, stream, answers.frames)
                except AnswerRefused as exc:
                    await release()
                    return _error(409, str(exc))
                stream.prefix = b"".join(sse({"type": "tool-output-denied", "toolCallId": call_id})
                                         for call_id in applied.denied)
                if applied.continuation is None:  # queued behind a running continuation: follow what runs
                    return await self._follow(request, host, stream, release)
                if _waits_for_client(host):  # the rest of the batch is still to be answered
                    await release()
                    return Response(stream.prefix + DONE, headers=HEADERS)
                stream.request_id = applied.continuation
                return _EventStream(stream, stream.take(), release)
            if answers.repeated:  # sent again (a retry): the stream it started, if it still runs
                return await self._follow(request, host, stream, release, idle=_error(
                    409, "Those tool calls are answered already; nothing runs for them now"))
            stream.request_id = frame.id
            await host.chat.receive(stream, frame)
            first = stream.take()
            if (refusal := _refusal(first)) is not None:
                await release()
                return _error(400, refusal)
            return _EventStream(stream, first, release)
        except BaseException:
            await release()
            raise

    async def resume(self, request: Request) -> Response:
        target = await self._chat_agent(request)
        if isinstance(target, Response):
            return target
        opened = await self._open(*target)
        if isinstance(opened, Response):
            return opened
        return await self._follow(request, *opened)

    async def _follow(self, request: Request, host: AgentHost, stream: ChatStream, release: Release,
                      idle: Response | None = None) -> Response:
        """The resume handshake as a tab does it: the active stream replayed, then live; `idle`
        (204) when none runs."""
        try:
            assert host.chat is not None
            await host.chat.receive(stream, StreamResumeRequest(None))
            request_id = await _offered(request, host, stream)
            if request_id is None:
                await release()
                return idle or Response(status_code=204)
            stream.request_id = request_id
            stream.rebase = _continued(host, request_id)
            await host.chat.receive(stream, StreamResumeAck(request_id))
            return _EventStream(stream, stream.take(), release)
        except BaseException:
            await release()
            raise


async def _offered(request: Request, host: AgentHost, stream: ChatStream) -> str | None:
    """The id of the stream the channel offers `stream` (`cf_agent_stream_resuming`); None when
    it has none, or the client went away while a turn it was told about had not started yet. A
    continuation that waits for the client's own answers to the rest of its batch streams
    nothing until they come: none too."""
    offered: list[str] = []
    async with anyio.create_task_group() as tasks:

        async def client_gone() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                pass
            tasks.cancel_scope.cancel()

        tasks.start_soon(client_gone)
        while True:
            frame = await stream.next()
            if frame.type == "cf_agent_stream_resume_none":
                break
            if frame.type == "cf_agent_stream_resuming":
                offered.append(str(frame.data["id"]))
                break
            if frame.type == "cf_agent_stream_pending" and _waits_for_client(host):
                break
            # cf_agent_stream_pending: a turn was accepted and is about to stream; wait for it
        tasks.cancel_scope.cancel()
    return offered[0] if offered else None


def _waits_for_client(host: AgentHost) -> bool:
    """A continuation is asked for, but some calls of its batch still wait for a client's answer."""
    agent = host.agent
    assert isinstance(agent, Think)
    history = agent.session.history()
    return agent.continuations.pending is not None and mid_batch(history[-1] if history else None)


async def _read_request(request: Request) -> tuple[ChatRequest, list[Any]] | Response:
    """The request body as the channel's chat request (and its raw messages), or a 4xx."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return _error(413, f"The request body is larger than {MAX_BODY_BYTES} bytes")
    raw = bytearray()
    async for piece in request.stream():
        raw += piece
        if len(raw) > MAX_BODY_BYTES:
            return _error(413, f"The request body is larger than {MAX_BODY_BYTES} bytes")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return _error(400, f"The request body is not valid JSON: {exc}")
    if not isinstance(body, dict):
        return _error(400, "The request body must be a JSON object")
    trigger = body.get("trigger", TRIGGERS[0])
    if trigger not in TRIGGERS:
        return _error(400, f"trigger must be one of {', '.join(TRIGGERS)}, not {trigger!r}")
    messages = body.get("messages")
    if not isinstance(messages, list):
        return _error(400, "The request body has no \"messages\" array")
    custom = {key: value for key, value in body.items() if key not in ("id", "messageId")}
    envelope = {"type": "cf_agent_use_chat_request", "id": uuid.uuid4().hex,
                "init": {"method": "POST", "body": orjson.dumps(custom).decode()}}
    try:
        frame = parse_frame(orjson.dumps(envelope))
    except (InvalidFrame, UnknownFrame) as exc:
        return _error(400, str(exc))
    assert isinstance(frame, ChatRequest)
    return frame, messages


def _continued(host: AgentHost, request_id: str) -> Message | None:
    """The stored message a live continuation `request_id` adds to (None for any other stream:
    a first turn's replay starts its own message, a recovery's replay starts with the message)."""
    agent = host.agent
    assert isinstance(agent, Think)
    live = agent.streams.live
    if live is None or live.request_id != request_id or not live.continuation or live.extends:
        return None
    history = agent.session.history()
    return history[-1] if history and history[-1].role == "assistant" else None


def _refusal(frames: list[Frame]) -> str | None:
    """Why the channel refused the request at once (its first frame ends it in an error), if it did."""
    if not frames:
        return None
    data = frames[0].data
    if frames[0].type == "cf_agent_use_chat_response" and data.get("done") and data.get("error"):
        return str(data.get("body") or "The request was refused")
    return None


def _routes(context: ProtocolContext) -> list[BaseRoute]:
    endpoints = _Endpoints(context)
    base = context.base + "/{agent}/{name}/chat"
    return [
        Route(base, context.http(endpoints.chat), methods=["GET", "POST", "OPTIONS"]),
        Route(base + "/{chat_id}/stream", context.http(endpoints.resume), methods=["GET", "OPTIONS"]),
    ]


protocol = UIProtocol(name="ai-sdk", routes=_routes)
"""`create_app(..., protocols=["ai-sdk"])` mounts this."""
