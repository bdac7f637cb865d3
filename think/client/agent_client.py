"""`AgentClient`: talk to an agent from Python the way `useAgent` + `useAgentChat` do.

    async with AgentClient.connect("ws://127.0.0.1:8000/agents/assistant/alice") as client:
        turn = await client.send_chat("Hello!")
        async for chunk in turn:                 # UI message chunks as they stream
            ...
        await turn                               # the done frame: turn.outcome, turn.error
        print(turn.message.text)                 # the assistant message, folded from the chunks
        print(await client.call("add", 2, 3))    # @callable methods

Connecting runs the stock client's handshake: it sends `cf_agent_stream_resume_request` with a
probe id and returns once the server answered it. If a turn was streaming, the client ACKs it
once and the replayed and live chunks go to `client.resumed`. `client.messages` is always the
latest transcript the server sent (plus the messages this client sent since). There is no
automatic reconnect: connect again (with the same `connection_id`) to resume.
"""

from __future__ import annotations

import logging
import secrets
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, Self
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
import httpx
from anyio.abc import TaskGroup
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from think.client.calls import ChatTurn, RpcCall, Signal
from think.messages import MESSAGES, JSONObject, Message
from think.protocol.client_codec import encode_client_frame, parse_server_frame
from think.protocol.codec import InvalidFrame, UnknownFrame
from think.protocol.frames import (
    REGENERATE,
    SUBMIT,
    ChatClear,
    ChatMessages,
    ChatRequest,
    ChatRequestCancel,
    ChatResponse,
    ClientFrame,
    ClientToolSchema,
    FileChange,
    Identity,
    McpServers,
    MessageUpdated,
    ProtocolErrorFrame,
    RpcRequest,
    RpcResponse,
    ServerFrame,
    SetState,
    State,
    StateError,
    StreamPending,
    StreamResumeAck,
    StreamResumeNone,
    StreamResumeRequest,
    StreamResuming,
    WorkspaceChanged,
)
from think.protocol.transcript import LazyMessages
from think.runtime.naming import kebab_case

log = logging.getLogger("think.client")

KEEP_FINISHED_TURNS = 100
"""Finished turns kept in `AgentClient.turns` (older ones are dropped)."""
KEEP_WORKSPACE_CHANGES = 10_000
"""Workspace changes kept in `AgentClient.workspace_changes` (older ones are dropped)."""


def nanoid(size: int = 8) -> str:
    """A random id like the stock client's (request ids, probe ids)."""
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-"
    return "".join(secrets.choice(alphabet) for _ in range(size))


def _split_url(url: str, connection_id: str) -> tuple[str, str]:
    parts = urlsplit(url)
    secure = parts.scheme in ("wss", "https")
    if parts.scheme not in ("ws", "wss", "http", "https"):
        raise ValueError(f"not a ws(s):// or http(s):// URL: {url!r}")
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "_pk"]
    path = parts.path.rstrip("/")
    ws = urlunsplit(("wss" if secure else "ws", parts.netloc, path, urlencode([*query, ("_pk", connection_id)]), ""))
    http = urlunsplit(("https" if secure else "http", parts.netloc, path, urlencode(query), ""))
    return ws, http


class AgentClient:
    """One WebSocket connection to one agent instance. See the module docstring."""

    def __init__(self, url: str, *, connection_id: str | None = None, headers: Mapping[str, str] | None = None,
                 on_frame: Callable[[ServerFrame], object] | None = None, open_timeout: float = 10.0,
                 call_timeout: float | None = 30.0, turn_timeout: float | None = 120.0,
                 wait_timeout: float | None = 30.0, max_size: int | None = 256 * 1024 * 1024,
                 compression: str | None = "deflate") -> None:
        self.connection_id = connection_id or nanoid(21)
        self.ws_url, self.http_url = _split_url(url, self.connection_id)
        self.headers = dict(headers or {})
        self.on_frame = on_frame
        """Called with every frame the server sends, before the client acts on it."""
        self.open_timeout = open_timeout
        self.call_timeout = call_timeout
        """Seconds an RPC call may take (the JS client's `defaultCallTimeout` is 30 s)."""
        self.turn_timeout = turn_timeout
        """Seconds `await turn` waits for a turn's end."""
        self.wait_timeout = wait_timeout
        """Seconds `wait_until` and `wait_closed` wait."""
        self._max_size = max_size
        self._compression = compression
        self.identity: Identity | None = None
        self.state: Any = None
        self.mcp: JSONObject = {}
        self.turns: OrderedDict[str, ChatTurn] = OrderedDict()
        """Turns seen on this connection (ours and other tabs'), oldest first."""
        self.resumed: ChatTurn | None = None
        """The turn that was streaming when we connected, if any."""
        self.errors: list[str] = []
        """`cf_agent_protocol_error` and `cf_agent_state_error` texts the server sent."""
        self.workspace_changes: deque[FileChange] = deque(maxlen=KEEP_WORKSPACE_CHANGES)
        """Changes of the agent's workspace (`think_workspace_change` frames), oldest first."""
        self.close_code: int | None = None
        self.close_reason: str = ""
        self._messages: Sequence[Message] = ()
        self._calls: dict[str, RpcCall] = {}
        self._acked: set[str] = set()
        self._probe: str | None = None
        self._socket: ClientConnection | None = None
        self._stack: AsyncExitStack | None = None
        self._tasks: TaskGroup | None = None
        self._received = Signal()
        self._handshake_done = False
        self._closed = False

    @classmethod
    def for_agent(cls, base_url: str, agent: str | type, name: str = "default", *, prefix: str = "agents",
                  **options: Any) -> AgentClient:
        """A client for `<base_url>/<prefix>/<kebab(agent)>/<name>` (agent: a class or its name)."""
        if isinstance(agent, str):
            segment = kebab_case(agent)
        else:
            kebab_name = getattr(agent, "kebab_name", None)
            segment = kebab_name() if kebab_name is not None else kebab_case(agent.__name__)
        path = "/".join(p for p in (prefix.strip("/"), segment, name) if p)
        return cls(f"{base_url.rstrip('/')}/{path}", **options)

    @classmethod
    @asynccontextmanager
    async def connect(cls, url: str, **options: Any) -> AsyncIterator[AgentClient]:
        """Connect, run the handshake, and close when the block ends."""
        async with cls(url, **options) as client:
            yield client

    # ---- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        stack = AsyncExitStack()
        try:
            self._socket = await stack.enter_async_context(ws_connect(
                self.ws_url, additional_headers=self.headers, max_size=self._max_size,
                compression=self._compression, open_timeout=self.open_timeout))
            self._tasks = await stack.enter_async_context(anyio.create_task_group())
            self._tasks.start_soon(self._read, self._socket)
            self._probe = nanoid()
            await self.send(StreamResumeRequest(self._probe))  # what the stock client does on open
            with anyio.fail_after(self.open_timeout):
                while not self._handshake_done:
                    if self._closed:
                        raise ConnectionError(f"the server closed the connection ({self.close_code} "
                                              f"{self.close_reason})")
                    await self._received.wait()
        except BaseException:
            if self._socket is not None:
                await self._socket.close()
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._socket is not None:
            await self._socket.close()
        if self._stack is not None:
            stack, self._stack = self._stack, None
            await stack.aclose()

    async def wait_closed(self) -> tuple[int | None, str]:
        """Wait until the server closes the connection; its close code and reason."""
        with anyio.fail_after(self.wait_timeout):
            while not self._closed:
                await self._received.wait()
        return self.close_code, self.close_reason

    @property
    def closed(self) -> bool:
        return self._closed

    # ---- receiving -------------------------------------------------------------------------------

    async def _read(self, socket: ClientConnection) -> None:
        try:
            async for text in socket:
                await self._dispatch(text)
        except ConnectionClosed:
            pass
        finally:
            self._closed = True
            self.close_code, self.close_reason = socket.close_code, socket.close_reason or ""
            reason = f"the connection closed ({self.close_code} {self.close_reason})".rstrip()
            for turn in self.turns.values():
                turn._abort(reason)
            for call in self._calls.values():
                call._abort(reason)
            self._received.fire()

    async def _dispatch(self, text: str | bytes) -> None:
        try:
            frame = parse_server_frame(text)
        except (UnknownFrame, InvalidFrame) as exc:
            log.debug("ignoring a frame: %s", exc)
            return
        if self.on_frame is not None:
            try:
                self.on_frame(frame)
            except Exception:  # the application's callback must not take the connection down
                log.exception("on_frame raised")
        match frame:
            case ChatResponse(id=request_id):
                self.turn(request_id)._apply(frame)
                self._trim_turns()
            case ChatMessages(messages=messages):
                self._messages = messages
            case ChatClear():
                self._messages = ()
            case MessageUpdated(message=message):
                self._messages = [message if m.id == message.id else m for m in self._messages]
            case Identity():
                self.identity = frame
            case State(state=state):
                self.state = state
            case McpServers(mcp=mcp):
                self.mcp = mcp
            case StreamResuming(id=request_id, probe_id=probe_id):
                if request_id not in self._acked:  # the stock client ACKs a stream once
                    self._acked.add(request_id)
                    self.resumed = self.turn(request_id)
                    self.resumed.replayed = True
                    await self.send(StreamResumeAck(request_id))
                self._answered(probe_id)
            case StreamResumeNone(probe_id=probe_id) | StreamPending(probe_id=probe_id):
                self._answered(probe_id)
            case RpcResponse(id=call_id):
                if (call := self._calls.get(call_id)) is not None:
                    call._apply(frame)
                    if call.done:
                        del self._calls[call_id]
            case WorkspaceChanged(changes=changes):
                self.workspace_changes.extend(changes)
            case ProtocolErrorFrame(error=error) | StateError(error=error):
                log.info("the server refused a frame: %s", error)
                self.errors.append(error)
        self._received.fire()

    def _answered(self, probe_id: str | None) -> None:
        if probe_id is not None and probe_id == self._probe:
            self._handshake_done = True

    def _trim_turns(self) -> None:
        while len(self.turns) > KEEP_FINISHED_TURNS:
            oldest = next(iter(self.turns.values()))
            if not oldest.done:
                break
            self.turns.popitem(last=False)

    async def wait_until(self, predicate: Callable[[AgentClient], bool]) -> None:
        """Wait until `predicate(client)` holds; it is checked after every frame received."""
        with anyio.fail_after(self.wait_timeout):
            while not predicate(self):
                if self._closed:
                    raise ConnectionError("the connection closed while waiting")
                await self._received.wait()

    # ---- the transcript --------------------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """The latest transcript (as the server sent it, plus what this client sent since)."""
        return list(self._messages)

    @property
    def message_count(self) -> int:
        return len(self._messages)

    async def get_messages(self) -> list[Message]:
        """The transcript over HTTP (`GET …/get-messages`), as `useAgentChat` loads it first."""
        async with httpx.AsyncClient(headers=self.headers, timeout=self.call_timeout) as http:
            response = await http.get(self._http_path("get-messages"))
        response.raise_for_status()
        return MESSAGES.validate_json(response.content) if response.content else []

    def _http_path(self, rest: str) -> str:
        parts = urlsplit(self.http_url)
        return urlunsplit((parts.scheme, parts.netloc, f"{parts.path}/{rest}", parts.query, ""))

    # ---- sending ---------------------------------------------------------------------------------

    async def send(self, frame: ClientFrame) -> None:
        """Send one frame as it is."""
        if self._socket is None:
            raise ConnectionError("not connected")
        await self._socket.send(encode_client_frame(frame))

    async def send_text(self, text: str | bytes) -> None:
        """Send raw text (bytes go as a binary frame): for testing what a server does with bad input."""
        if self._socket is None:
            raise ConnectionError("not connected")
        await self._socket.send(text)

    def turn(self, request_id: str) -> ChatTurn:
        """The turn with this request id (created if no frame of it has arrived yet)."""
        turn = self.turns.get(request_id)
        if turn is None:
            turn = self.turns[request_id] = ChatTurn(request_id, timeout=self.turn_timeout)
        return turn

    async def send_chat(self, message: str | Message | Sequence[Message] | None = None, *,
                        body: JSONObject | None = None, request_id: str | None = None,
                        trigger: str = SUBMIT, client_tools: Sequence[ClientToolSchema] | None = None) -> ChatTurn:
        """Send a chat request and return its turn (iterate it for chunks, await it for the end).

        A string or a `Message` is appended to the transcript and the whole transcript is sent,
        as `useChat` does; a list of messages is sent as the transcript instead.
        """
        # Messages the server sent are sent back as they came, not validated and re-encoded.
        if message is None:
            transcript = LazyMessages.of(self._messages)
        elif isinstance(message, str):
            transcript = LazyMessages.of(self._messages, Message.user(message))
        elif isinstance(message, Message):
            transcript = LazyMessages.of(self._messages, message)
        else:
            transcript = LazyMessages.of(list(message))
        request_id = request_id or nanoid()
        turn = self.turn(request_id)
        self._messages = transcript
        await self.send(ChatRequest(id=request_id, messages=transcript, trigger=trigger,
                                    client_tools=tuple(client_tools) if client_tools is not None else None,
                                    body=dict(body or {})))
        return turn

    async def regenerate(self, *, body: JSONObject | None = None, request_id: str | None = None) -> ChatTurn:
        """Ask for a new answer to the last user message (the last answer is replaced)."""
        transcript = self.messages
        while transcript and transcript[-1].role != "user":
            transcript.pop()
        return await self.send_chat(transcript, body=body, request_id=request_id, trigger=REGENERATE)

    async def cancel(self, request_id: str | None = None) -> None:
        """Stop a turn (default: the newest unfinished one); its partial reply is kept."""
        if request_id is None:
            running = [t for t in self.turns.values() if not t.done]
            if not running:
                return
            request_id = running[-1].request_id
        await self.send(ChatRequestCancel(request_id))

    async def clear(self) -> None:
        """Delete the conversation on the server (the other tabs are told)."""
        self._messages = ()
        await self.send(ChatClear())

    async def set_state(self, state: Any) -> None:
        self.state = state
        await self.send(SetState(state))

    async def start_call(self, method: str, *args: Any) -> RpcCall:
        """Start an RPC call; iterate the result for streamed chunks, `await call.wait()` for the end."""
        call_id = nanoid(12)
        call = self._calls[call_id] = RpcCall(call_id, method, timeout=self.call_timeout)
        await self.send(RpcRequest(id=call.id, method=method, args=args))
        return call

    async def call(self, method: str, *args: Any) -> Any:
        """Call a `@callable` method and return its result (RpcError if it failed)."""
        call = await self.start_call(method, *args)
        return await call.wait()
