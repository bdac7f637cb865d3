"""Served agents as an MCP server: `create_app(..., mcp=True)` mounts the SDK's streamable HTTP app at `/mcp`.

Each chat agent class served becomes a tool `chat_<agent>` (`{name, message, operation_id?}`)
that runs one turn of the agent instance `name` and returns the final answer's text, with a
progress notification per streamed text delta while it runs. Each instance's transcript is a
resource `think://<agent>/<name>/messages` (JSON, the stored `UIMessage`s). A method marked
`@callable(mcp=True)` is a tool `<agent>_<method>` taking `name` and the method's parameters.

The turn is a durable submission (`think.submissions`), not a task of the MCP request: if the
MCP connection drops, the turn goes on in the agent, and a call with the same `operation_id`
(the submission's idempotency key) waits for that same turn and returns its answer instead of
running a second one. What it trusts: whoever can reach `/mcp` may chat with every served
agent, like whoever can reach `/agents/...`; guard both with the app's own authentication.
"""

from __future__ import annotations

import inspect
import logging
import typing
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from mcp.server.mcpserver import Context, MCPServer
from starlette.routing import BaseRoute

from think.agent import Think
from think.messages import Message
from think.protocol.codec import encode_message_list
from think.runtime.agent import Agent
from think.runtime.base import AgentRuntime
from think.runtime.remote import Emit, on_agent, peer_op
from think.runtime.rpc import callable_info
from think.stream.fanout import ChunkEvent, TurnEvent
from think.submissions.store import Submission

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

log = logging.getLogger("think.mcp")
URI_SCHEME = "think"


def answer_text(history: Sequence[Message], submission: Submission) -> str:
    """The assistant's text after the submission's user message(s) in `history`."""
    ids = set(submission.message_ids)
    start = max((i for i, m in enumerate(history) if m.id in ids), default=None)
    if start is None:
        return ""
    texts: list[str] = []
    for message in history[start + 1:]:
        if message.role == "user":
            break
        if message.role == "assistant" and message.text:
            texts.append(message.text)
    return "\n\n".join(texts)


def _tool_name(cls: type[Agent]) -> str:
    return "chat_" + cls.kebab_name().replace("-", "_")


async def chat_here(agent: Think, message: str, operation_id: str | None,
                    report: Callable[[int, str], Awaitable[None]]) -> str:
    """One turn of `agent` (open here) on `message`, reporting each text delta; its answer."""
    submission = await agent.submit_messages([message], idempotency_key=operation_id)
    request_ids: set[str] = set()
    progress = 0

    async def on_event(event: TurnEvent) -> None:
        nonlocal progress
        if not (isinstance(event, ChunkEvent) and event.chunk.get("type") == "text-delta"):
            return
        if not request_ids:
            current = agent.inspect_submission(submission.submission_id)
            if current is None or current.request_id is None:
                return
            request_ids.add(current.request_id)
        if event.request_id in request_ids:
            progress += 1
            try:
                await report(progress, str(event.chunk.get("delta", "")))
            except Exception:  # the MCP client went away: the turn goes on
                log.debug("progress for %s not delivered", submission.submission_id, exc_info=True)

    unsubscribe = agent.fanout.subscribe(on_event)
    try:
        done = await agent.wait_for_submission(submission.submission_id)
    finally:
        unsubscribe()
    if done.status != "completed":
        raise RuntimeError(f"the turn ended {done.status}" + (f": {done.error}" if done.error else ""))
    return answer_text(agent.session.history(), done)


@peer_op("mcp.chat")
async def _chat_for_peer(agent: Agent, payload: dict[str, Any], emit: Emit) -> str:
    async def report(progress: int, delta: str) -> None:
        await emit({"progress": progress, "message": delta})

    return await chat_here(cast(Think, agent), str(payload["message"]), payload.get("operation_id"), report)


@peer_op("mcp.messages")
async def _messages_for_peer(agent: Agent, payload: dict[str, Any], emit: Emit) -> str:
    return _messages_text(cast(Think, agent))


def _messages_text(agent: Think) -> str:
    encoded = encode_message_list(agent.session.history_json())
    return encoded.decode() if isinstance(encoded, bytes) else str(encoded)


def _chat_tool(runtime: AgentRuntime, cls: type[Think]) -> Any:
    async def chat(name: str, message: str, ctx: Context, operation_id: str | None = None) -> str:
        async def report(progress: int, delta: str) -> None:
            await ctx.report_progress(progress, message=delta)

        async def relayed(event: Any) -> None:  # a turn in another process of a cluster
            try:
                await report(int(event["progress"]), str(event["message"]))
            except Exception:
                log.debug("progress of a relayed turn not delivered", exc_info=True)

        return str(await on_agent(runtime, cls, name, "mcp.chat", {"message": message, "operation_id": operation_id},
                                  here=lambda agent: chat_here(agent, message, operation_id, report),
                                  on_event=relayed))

    chat.__doc__ = (f"Send a message to the {cls.__name__} agent instance `name` (created on first use) and "
                    "get its final answer. `operation_id` makes the call idempotent: asking again with the "
                    "same id returns the same turn's answer instead of running a new one.")
    return chat


def _callable_tool(runtime: AgentRuntime, cls: type[Agent], method_name: str, method: Any) -> Any:
    """A tool for an `@callable(mcp=True)` method: its parameters, after `name` (the instance)."""
    signature = inspect.signature(method)
    hints = typing.get_type_hints(method)
    params = [p.replace(annotation=hints.get(p.name, Any)) for p in list(signature.parameters.values())[1:]]
    instance = inspect.Parameter("name", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=str)

    async def call(**arguments: Any) -> Any:
        name = arguments.pop("name")

        async def here(agent: Agent) -> Any:
            result = getattr(agent, method_name)(**arguments)
            return await result if inspect.isawaitable(result) else result

        return await on_agent(runtime, cls, name, "call", {"method": method_name, "kwargs": arguments}, here)

    call.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[instance, *params], return_annotation=hints.get("return", Any))
    call.__annotations__ = {"name": str, **{p.name: p.annotation for p in params}, "return": hints.get("return", Any)}
    info = callable_info(method) or {}
    call.__doc__ = info.get("description") or inspect.getdoc(method) or method_name
    return call


def _messages_resource(runtime: AgentRuntime, cls: type[Think]) -> Any:
    async def messages(name: str) -> str:
        async def here(agent: Think) -> str:
            return _messages_text(agent)

        return str(await on_agent(runtime, cls, name, "mcp.messages", {}, here))

    return messages


def agents_mcp_server(runtime: AgentRuntime, classes: Sequence[type[Agent]]) -> MCPServer:
    """An `MCPServer` with a chat tool and a transcript resource per chat agent class."""
    server: MCPServer = MCPServer("think", instructions="Chat with this server's think agents: one tool per agent "
                                  "class; transcripts are resources think://<agent>/<name>/messages.")
    for cls in classes:
        if not issubclass(cls, Think):
            continue
        server.add_tool(_chat_tool(runtime, cls), name=_tool_name(cls), structured_output=False)
        for attr in dir(cls):
            method = getattr(cls, attr, None)
            info = callable_info(method)
            if info is not None and info.get("mcp") and not info.get("streaming"):
                tool = f"{cls.kebab_name().replace('-', '_')}_{attr}"
                server.add_tool(_callable_tool(runtime, cls, attr, method), name=tool, structured_output=False)
        uri = f"{URI_SCHEME}://{cls.kebab_name()}/{{name}}/messages"
        server.resource(uri, name=f"{cls.kebab_name()}_messages", mime_type="application/json",
                        description=f"The transcript of a {cls.__name__} instance (JSON UIMessages)")(
            _messages_resource(runtime, cls))
    return server


LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")


def transport_security(allowed_hosts: Sequence[str] | None) -> Any:
    """The SDK's DNS-rebinding guard for the endpoint: requests whose `Host` header is not one of
    `allowed_hosts` (`name` or `name:port`, `*` for any port) are refused, as are browser requests
    from other origins. None keeps the SDK's own rule (loopback names only)."""
    if allowed_hosts is None:
        return None
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = list(dict.fromkeys([*LOOPBACK_HOSTS, *allowed_hosts]))
    origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


def mcp_routes(runtime: AgentRuntime, classes: Sequence[type[Agent]], path: str = "/mcp", *,
               allowed_hosts: Sequence[str] | None = None) -> tuple[list[BaseRoute], AbstractAsyncContextManager[None]]:
    """The routes of the streamable HTTP endpoint at `path`, and the context manager to run
    around the app's life (the SDK's session manager). See `transport_security` for
    `allowed_hosts`."""
    server = agents_mcp_server(runtime, classes)
    app = server.streamable_http_app(streamable_http_path=path, transport_security=transport_security(allowed_hosts))
    return list(app.routes), server.session_manager.run()


__all__ = ["agents_mcp_server", "answer_text", "mcp_routes", "transport_security"]
