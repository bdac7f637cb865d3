"""Calls between the processes of a cluster: an operation on an agent another process has open.

A sub-agent call, an MCP tool call, anything `think.runtime.remote.on_agent` runs, that finds its
agent open in another process is sent there as one `POST /_think/peer` (the owner's URL from
`think_nodes`): a JSON body `{op, class, class_path, name, payload}`, answered with a stream of
JSON lines, `{"event": …}` for what the op emits while it runs, then `{"result": …}`,
`{"error": {"type", "message"}}` or `{"moved": true}` (the agent is not open there any more).

What it trusts: only the other processes of the cluster. A peer call may run any public method
of any agent, so it must come from a process that can read the cluster database: each request
carries an HMAC-SHA256 (`x-think-peer`) of its time and body, keyed by the cluster's secret
(`think_cluster`, made by the first process), and is refused (403) without a valid one or when
its time is more than `MAX_SKEW` seconds off. Client requests never reach this route's ops.
The W3C trace context (`traceparent`) of the caller goes along, so the owner's spans join the
caller's trace. Cancelling the caller ends the request; the owner's op is cancelled with it
(a sub-agent turn is stopped through its signal and keeps its partial reply). A call is sent
again only when it cannot have run (the process was out of reach, or no longer had the agent
open); one whose process dies while running it fails with `PeerGone`.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import orjson
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from think.errors import StorageError
from think.observe.propagation import inject_headers
from think.runtime.base import AgentElsewhere
from think.runtime.remote import AgentMoved, Emit, RemoteCallFailed, run_peer_op

if TYPE_CHECKING:
    from think.cluster.runtime import ClusterRuntime

log = logging.getLogger("think.cluster")
PEER_PATH = "/_think/peer"
SIGNATURE = "x-think-peer"
SIGNED_AT = "x-think-peer-time"
MAX_SKEW = 60.0
"""Seconds a signed peer request stays valid (the processes' clocks must agree that well)."""


def sign(secret: bytes, signed_at: str, body: bytes) -> str:
    return hmac.new(secret, signed_at.encode() + b"\n" + body, hashlib.sha256).hexdigest()


def verified(secret: bytes, headers: Mapping[str, str], body: bytes) -> bool:
    """Whether a peer request was signed with the cluster's secret, recently."""
    signed_at, signature = headers.get(SIGNED_AT, ""), headers.get(SIGNATURE, "")
    try:
        fresh = abs(time.time() - float(signed_at)) <= MAX_SKEW
    except ValueError:
        return False
    return fresh and hmac.compare_digest(signature, sign(secret, signed_at, body))


async def call_peer(http: httpx.AsyncClient, secret: bytes, url: str, request: dict[str, Any],
                    on_event: Emit | None) -> Any:
    """Run `request` in the process at `url`; its result (see the module docstring)."""
    try:
        body = orjson.dumps(request)
    except TypeError as exc:
        raise TypeError(f"a call on an agent in another process takes JSON arguments: {exc}") from None
    signed_at = repr(time.time())
    headers = {SIGNED_AT: signed_at, SIGNATURE: sign(secret, signed_at, body), "content-type": "application/json"}
    inject_headers(headers)
    try:
        async with http.stream("POST", url.rstrip("/") + PEER_PATH, content=body, headers=headers) as response:
            if response.status_code != 200:
                text = (await response.aread()).decode(errors="replace")
                raise StorageError(f"the process at {url} refused the call ({response.status_code}): {text}")
            async for line in response.aiter_lines():
                if not line:
                    continue
                message = orjson.loads(line)
                if "event" in message:
                    if on_event is not None:
                        await on_event(message["event"])
                elif "result" in message:
                    return message["result"]
                elif "error" in message:
                    raise RemoteCallFailed(str(message["error"]["type"]), str(message["error"]["message"]))
                elif "moved" in message:
                    raise AgentMoved(f"{request['name']} is no longer open at {url}")
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # nothing ran there: look for the agent again
        raise AgentMoved(f"the process at {url} is out of reach: {exc!r}") from exc
    except httpx.HTTPError as exc:
        raise PeerGone(f"the process at {url} went away during the call: {exc!r}") from exc
    raise PeerGone(f"the process at {url} went away during the call")


class PeerGone(StorageError):
    """The agent's process went away while it ran the call: what it did up to then stands (it
    committed it), the rest did not happen; the call is not sent again (it may have run)."""


def peer_endpoint(runtime: ClusterRuntime) -> Any:
    """`POST /_think/peer`: run another process's call on an agent open (or free) here."""

    async def endpoint(request: Request) -> Response:
        body = await request.body()
        if not verified(runtime.store.secret, request.headers, body):
            return PlainTextResponse("Not a process of this cluster", status_code=403)
        call = orjson.loads(body)
        cls = runtime.agent_class(str(call["class"]), call.get("class_path"))
        if cls is None:
            return PlainTextResponse(f"Unknown agent class {call['class']!r}", status_code=400)

        async def lines() -> AsyncIterator[bytes]:
            send, receive = anyio.create_memory_object_stream[bytes](64)

            async def run() -> None:
                async with send:
                    async def emit(event: Any) -> None:
                        await send.send(orjson.dumps({"event": event}) + b"\n")

                    try:  # (in the caller's trace context: `TraceContextMiddleware` made it current)
                        async with runtime.lease(cls, str(call["name"])) as agent:
                            result = await run_peer_op(agent, str(call["op"]), call.get("payload") or {}, emit)
                        line = orjson.dumps({"result": result})
                    except AgentElsewhere:
                        line = orjson.dumps({"moved": True})
                    except Exception as exc:
                        log.info("peer call %s on %s failed: %r", call["op"], call["name"], exc)
                        line = orjson.dumps({"error": {"type": type(exc).__name__, "message": str(exc)}})
                    await send.send(line + b"\n")

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(run)
                async with receive:
                    async for line in receive:
                        yield line

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    return endpoint
