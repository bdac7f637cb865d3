"""`think chat <url>`: chat with a served agent from the terminal, on top of `AgentClient`.

    think chat ws://localhost:8000/agents/assistant/alice

It prints the conversation so far, then reads what you type and streams the answer as it arrives:
reasoning (dimmed), text, tool calls with their inputs and outputs, errors. A tool that needs a
person's approval is asked about (y/n) when its turn ends. Ctrl-C during an answer stops it (the
partial answer is kept on the server; nothing more of it is printed after "stopping the
answer…"); Ctrl-C again, Ctrl-D or `/quit` leaves. On a terminal answers are rendered as markdown
and wrapped at word boundaries (see `think.client.printer`). Commands: `/clear`,
`/regenerate`, `/history`, `/help`, `/quit`.

When stdout is not a terminal (or with `--plain`) the output is plain text, one labelled line per
block (`you:`, `assistant:`, `thinking:`, `tool:`, `error:`), and what is read from stdin is
echoed as `you: …`, so a script can drive it through pipes.

Input is read by `input()` in a daemon thread, one line at a time when asked for, so the event
loop keeps receiving frames meanwhile and leaving never waits for a read to finish.
"""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

import anyio
import anyio.from_thread
import anyio.lowlevel
import httpx
import orjson
from anyio import TASK_STATUS_IGNORED
from anyio.abc import TaskGroup, TaskStatus
from rich.console import Console
from rich.text import Text
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from think._version import __version__
from think.client.agent_client import AgentClient, nanoid
from think.client.calls import ChatTurn
from think.client.printer import Printer, StreamView, compact
from think.messages import JSONObject, Message, ToolPart
from think.protocol.frames import (
    ServerFrame,
    StreamPending,
    StreamResumeNone,
    StreamResumeRequest,
    StreamResuming,
    ToolApproval,
)
from think.usage.meter import describe

INFO_TIMEOUT = 3.0
"""Seconds to wait for `GET /_think/info` (the model shown in the header)."""
CONTINUATION_WAIT = 10.0
"""Seconds to wait for the server to continue after an approval (60 once it says it is pending)."""
CONTINUATION_PENDING_WAIT = 60.0
CANCEL_WAIT = 10.0
"""Seconds to wait for a stopped turn's end before giving up on it."""
HELP = """\
/clear       delete the conversation (on the server, for every tab)
/regenerate  a new answer to the last message
/history     print the conversation again
/help        this list
/quit        leave (also Ctrl-D, or Ctrl-C when no answer is streaming)
Ctrl-C while an answer streams stops it."""


class ChatUrlError(ValueError):
    """The URL given to `think chat` cannot address an agent."""


@dataclass(frozen=True)
class ChatTarget:
    """Where `think chat` connects: the WebSocket URL and what the header shows."""

    ws_url: str
    http_root: str
    """`scheme://host:port` over HTTP(S), for `/_think/info`."""
    agent: str
    name: str


def chat_target(url: str) -> ChatTarget:
    """Check and normalize a `ws(s)://` or `http(s)://` agent URL (`…/agents/<agent>/<name>`)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in ("ws", "wss", "http", "https"):
        raise ChatUrlError(f"{url!r} is not a ws://, wss://, http:// or https:// URL "
                           "(expected something like ws://localhost:8000/agents/<agent>/<name>)")
    if not parts.hostname:
        raise ChatUrlError(f"{url!r} has no host (expected ws://host:port/agents/<agent>/<name>)")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise ChatUrlError(f"{url!r} has an invalid port: {exc}") from None
    segments = [s for s in parts.path.split("/") if s]
    if len(segments) < 2:
        raise ChatUrlError(f"{url!r} does not name an agent instance: the path must end with "
                           "<agent>/<name>, as in ws://host:port/agents/assistant/alice")
    secure = scheme in ("wss", "https")
    path = "/" + "/".join(segments)
    ws_url = urlunsplit(("wss" if secure else "ws", parts.netloc, path, parts.query, ""))
    http_root = urlunsplit(("https" if secure else "http", parts.netloc, "", "", ""))
    return ChatTarget(ws_url, http_root, agent=segments[-2], name=segments[-1])


async def server_info(http_root: str) -> JSONObject | None:
    """`GET /_think/info` (served by `think serve`): the model and the server version, if present."""
    try:
        async with httpx.AsyncClient(timeout=INFO_TIMEOUT) as http:
            response = await http.get(f"{http_root}/_think/info")
        if response.status_code != 200:
            return None
        info = orjson.loads(response.content)
    except (httpx.HTTPError, orjson.JSONDecodeError):
        return None
    return info if isinstance(info, dict) else None


# ---- reading lines ----------------------------------------------------------------------------------


class _Read:
    def __init__(self) -> None:
        self.done = anyio.Event()
        self.line: str | None = None


class LineReader:
    """Reads lines with `input()` in a daemon thread, one line per `readline()` call.

    A cancelled `readline()` leaves its read in progress; the next call picks up that line (the
    prompt is not shown twice). The thread is a daemon: leaving never waits for a pending read.
    """

    def __init__(self, read: Callable[[str], str] = input) -> None:
        self._read = read
        self._requests: queue.SimpleQueue[tuple[str, _Read, Any]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pending: _Read | None = None
        self._eof = False

    async def readline(self, prompt: str = "") -> str | None:
        """The next line (without its end of line), or None at the end of the input."""
        if self._eof:
            return None
        if self._pending is None:
            self._pending = _Read()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="think-chat-input", daemon=True)
                self._thread.start()
            self._requests.put((prompt, self._pending, anyio.lowlevel.current_token()))
        read = self._pending
        await read.done.wait()
        self._pending = None
        if read.line is None:
            self._eof = True
        return read.line

    def _run(self) -> None:
        while True:
            prompt, read, token = self._requests.get()
            try:
                read.line = self._read(prompt)
            except (EOFError, OSError, ValueError):  # end of input, or stdin closed under us
                read.line = None
            try:
                anyio.from_thread.run_sync(read.done.set, token=token)
            except RuntimeError:  # the event loop is gone
                return
            if read.line is None:
                return


class FdLines:
    """`read(prompt)` for piped input: lines read with `os.read` from a file descriptor.

    Not `sys.stdin`: a daemon thread blocked in `sys.stdin.readline()` holds the buffered
    reader's lock, and the interpreter aborts when it needs that lock at exit. A thread blocked
    in `os.read` holds nothing.
    """

    def __init__(self, fd: int, *, encoding: str = "utf-8") -> None:
        self.fd = fd
        self.encoding = encoding
        self._buffer = b""
        self._eof = False

    def __call__(self, prompt: str = "") -> str:
        while b"\n" not in self._buffer and not self._eof:
            data = os.read(self.fd, 65536)
            if not data:
                self._eof = True
            self._buffer += data
        if not self._buffer:
            raise EOFError
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(self.encoding, errors="replace").removesuffix("\r")


# ---- the chat -----------------------------------------------------------------------------------------


class _Leave(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class TerminalChat:
    """One `think chat` session. `await TerminalChat(target).run()` returns the exit code."""

    def __init__(self, target: ChatTarget, *, console: Console, plain: bool,
                 reader: LineReader | None = None, error_console: Console | None = None) -> None:
        self.target = target
        self.console = console
        self.errors = error_console or console
        self.plain = plain
        self.out = Printer(console, plain=plain)
        self.reader = reader or LineReader()
        self.client: AgentClient | None = None
        self._streaming: ChatTurn | None = None
        self._cancel_sent = False
        self._leave_code: int | None = None
        self._scope: anyio.CancelScope | None = None
        self._stream_scope: anyio.CancelScope | None = None
        self._view: StreamView | None = None
        self._probe_answers: dict[str, ServerFrame] = {}
        self._closing = False

    # ---- session ------------------------------------------------------------------------------

    async def run(self) -> int:
        client = AgentClient(self.target.ws_url, on_frame=self._on_frame, turn_timeout=None, wait_timeout=None,
                             call_timeout=30.0)
        try:
            await client.__aenter__()
        except Exception as exc:
            self.errors.print(Text(f"think chat: {_connect_error(self.target.ws_url, exc)}", style="bold red"),
                              soft_wrap=True, highlight=False)
            return 1
        self.client = client
        try:
            async with anyio.create_task_group() as tasks:
                await tasks.start(self._watch_signals, tasks)  # Ctrl-C is ours from here on
                tasks.start_soon(self._watch_connection)
                self._header(await server_info(self.target.http_root), await self._history())
                code = await self._session()
                tasks.cancel_scope.cancel()
            return code
        finally:
            self._closing = True
            await client.close()  # in this task and scope: it exits the task group the client entered

    async def _session(self) -> int:
        with anyio.CancelScope() as self._scope:
            try:
                if self.client is not None and self.client.resumed is not None:
                    self.out.line("notice", "an answer is streaming; following it")
                    await self._stream(self.client.resumed)
                await self._loop()
                return 0
            except _Leave as leave:
                return leave.code
        return self._leave_code if self._leave_code is not None else 0

    def _leave(self, code: int) -> None:
        if self._leave_code is None:
            self._leave_code = code
        if self._scope is not None:
            self._scope.cancel()

    async def _history(self) -> list[Message]:
        """The conversation so far. While a turn streams the server sends no transcript on the
        socket (it would clobber the streaming message), so ask over HTTP, as useAgentChat does."""
        assert self.client is not None
        if self.client.resumed is None:
            return self.client.messages
        try:
            return await self.client.get_messages()
        except (httpx.HTTPError, ValueError):
            return self.client.messages

    def _header(self, info: JSONObject | None, history: list[Message]) -> None:
        assert self.client is not None
        identity = self.client.identity
        agent = identity.agent if identity is not None else self.target.agent
        name = identity.name if identity is not None else self.target.name
        model = str(info.get("model")) if info and info.get("model") else "unknown (no /_think/info on this server)"
        server = f"think {info['version']}" if info and info.get("version") else "unknown"
        self.out.line("notice", f"think chat {__version__} · {self.target.ws_url}")
        self.out.line("notice", f"agent {agent} · instance {name} · model {model} · server {server}")
        if history:
            self.out.line("notice", f"history ({_count(history)}):")
            for message in history:
                self.out.message(message)
        else:
            self.out.line("notice", "no messages yet")
        self.out.line("notice", "type a message; /help for commands; Ctrl-C stops an answer, Ctrl-D quits")

    def _on_frame(self, frame: ServerFrame) -> None:
        match frame:
            case StreamResumeNone(probe_id=probe) | StreamPending(probe_id=probe) | StreamResuming(probe_id=probe):
                if probe is not None:
                    self._probe_answers[probe] = frame

    async def _watch_signals(self, tasks: TaskGroup, *, task_status: TaskStatus[None] = TASK_STATUS_IGNORED) -> None:
        try:
            receiver = anyio.open_signal_receiver(signal.SIGINT)
            with receiver as signals:
                task_status.started()
                async for _ in signals:
                    self._interrupt(tasks)
        except NotImplementedError:  # no signal handlers on this platform: KeyboardInterrupt it is
            task_status.started()

    def _interrupt(self, tasks: TaskGroup) -> None:
        turn = self._streaming
        if turn is not None and not turn.done and not self._cancel_sent:
            self._cancel_sent = True
            self.out.line("notice", "stopping the answer… (Ctrl-C again to quit)")
            if self._view is not None:
                self._view.mute()  # nothing more of this answer is printed
            if self.client is not None:
                tasks.start_soon(self._send_cancel, self.client, turn)
            return
        self.out.close_block()
        if not self.plain:
            self.console.print()  # off the prompt line
        self._leave(130)

    async def _send_cancel(self, client: AgentClient, turn: ChatTurn) -> None:
        with contextlib.suppress(ConnectionClosed, ConnectionError):
            await client.cancel(turn.request_id)
        with anyio.move_on_after(CANCEL_WAIT):
            await turn.wait()
        if not turn.done and self._streaming is turn and self._stream_scope is not None:
            self.out.line("error", f"the server did not stop the answer within {CANCEL_WAIT:.0f} s")
            self._stream_scope.cancel()

    async def _watch_connection(self) -> None:
        assert self.client is not None
        await self.client.wait_closed()
        if self._closing:
            return
        code, reason = self.client.close_code, self.client.close_reason
        self.out.line("error", f"the server closed the connection ({code}{' ' + reason if reason else ''})")
        self._leave(1)

    # ---- the prompt loop --------------------------------------------------------------------------

    async def _loop(self) -> None:
        while True:
            line = await self.reader.readline("" if self.plain else "› ")
            if line is None:  # Ctrl-D, or the end of piped input
                if not self.plain:
                    self.console.print()
                return
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                if await self._command(text):
                    return
                continue
            if self.plain:
                self.out.line("you", text)
            assert self.client is not None
            await self._send(functools.partial(self.client.send_chat, text))

    async def _command(self, text: str) -> bool:
        """Run a slash command; True to leave."""
        assert self.client is not None
        command = text.split()[0].lower()
        match command:
            case "/quit" | "/exit" | "/q":
                return True
            case "/help" | "/?":
                for row in HELP.splitlines():
                    self.out.line("notice", row)
            case "/history":
                messages = self.client.messages
                self.out.line("notice", f"history ({_count(messages)}):" if messages else "no messages yet")
                for message in messages:
                    self.out.message(message)
            case "/clear":
                await self.client.clear()
                self.out.line("notice", "conversation cleared")
            case "/regenerate" | "/retry":
                if not any(m.role == "user" for m in self.client.messages):
                    self.out.line("notice", "nothing to regenerate yet")
                else:
                    self.out.line("notice", "regenerating the last answer")
                    await self._send(self.client.regenerate)
            case _:
                self.out.line("error", f"unknown command {command} (try /help)")
        return False

    async def _send(self, start: Callable[[], Awaitable[ChatTurn]]) -> None:
        try:
            turn = await start()
        except (ConnectionClosed, ConnectionError) as exc:
            self.out.line("error", f"the connection is gone: {exc}")
            raise _Leave(1) from None
        await self._stream(turn)
        await self._approvals()

    # ---- streaming --------------------------------------------------------------------------------

    async def _stream(self, turn: ChatTurn, *, shown_outputs: set[str] | None = None) -> StreamView:
        view = self._view = StreamView(self.out, shown_outputs=set(shown_outputs or ()))
        self._streaming, self._cancel_sent = turn, False
        try:
            with anyio.CancelScope() as self._stream_scope:
                async for chunk in turn:
                    view.apply(chunk)
        finally:
            self._streaming = self._stream_scope = self._view = None
            view.close()
        if not turn.done:
            return view  # given up on (see _send_cancel)
        if view.muted:
            return view  # stopped with Ctrl-C: "stopping the answer…" was the last word on it
        if turn.outcome == "aborted":
            self.out.line("notice", "stopped")
        elif turn.error is not None:
            self.out.line("error", turn.error)
        elif turn.outcome is None:
            self.out.line("error", "the answer ended without a result (the connection dropped?)")
        self._usage()
        return view

    def _usage(self) -> None:
        """The tokens (and cost) of the answer just shown, and of the whole conversation so far."""
        assert self.client is not None
        usages = [m.metadata.get("usage") for m in self.client.messages
                  if m.role == "assistant" and isinstance(m.metadata, dict)]
        if usages and (answer := describe(usages[-1:])) is not None:
            self.out.line("notice", f"tokens {answer} (conversation: {describe(usages)})")

    # ---- approvals --------------------------------------------------------------------------------

    async def _approvals(self) -> None:
        """Ask about the tool calls of the last answer that wait for a person's approval."""
        assert self.client is not None
        last = next((m for m in reversed(self.client.messages) if m.role == "assistant"), None)
        pending = [p for p in last.tool_parts if p.state == "approval-requested"] if last else []
        if not pending:
            return
        answers: list[tuple[ToolPart, bool]] = []
        for part in pending:
            question = f"Allow {part.name} {compact(part.input)}? [y/N] "
            if self.plain:
                self.out.line("notice", question.rstrip())
            else:
                self.out.close_block()
            line = await self.reader.readline("" if self.plain else question)
            if line is None:
                raise _Leave(0)
            approved = line.strip().lower() in ("y", "yes")
            if self.plain:
                self.out.line("you", "y" if approved else "n")
            answers.append((part, approved))
        await self._answer_approvals(answers)

    async def _answer_approvals(self, answers: list[tuple[ToolPart, bool]]) -> None:
        """Send the answers the way `useAgentChat` does, then follow the server's continuation."""
        client = self.client
        assert client is not None
        known_turns = set(client.turns)
        known_messages = {m.id for m in client.messages}
        errors_before = len(client.errors)
        for part, approved in answers:
            # cf_agent_tool_approval, keyed by toolCallId, with autoContinue as the stock client sends it.
            await client.send(ToolApproval(tool_call_id=part.tool_call_id, approved=approved, auto_continue=True))
        probe = nanoid()
        await client.send(StreamResumeRequest(probe))  # in the same tick, like the stock client
        turn = await self._continuation(client, probe, known_turns, errors_before)
        reported: set[str] = set()
        # A denial is settled at once: say so before what the model answers next. An approved
        # call's output comes in the continuation's stream.
        self._report_tool_outcomes(answers, reported, only_denied=True)
        if turn is not None:
            view = await self._stream(turn, shown_outputs=reported)
            reported |= view.shown_outputs
        self._report_tool_outcomes(answers, reported)
        if turn is None or not turn.chunks:
            # The continuation finished before we could attach to it (or did not run): show what
            # it produced from the transcript the server sent at its end.
            for message in client.messages:
                if message.id not in known_messages and message.role == "assistant":
                    self.out.message(message)

    def _report_tool_outcomes(self, answers: list[tuple[ToolPart, bool]], reported: set[str], *,
                              only_denied: bool = False) -> None:
        """Print the settled outcome of answered tool calls not shown yet."""
        assert self.client is not None
        for part, _approved in answers:
            if part.tool_call_id in reported:
                continue
            current = _find_tool_part(self.client.messages, part.tool_call_id)
            if current is None or (only_denied and current.state != "output-denied"):
                continue
            if current.settled:
                reported.add(part.tool_call_id)
                self.out.tool_part(current, with_call=False)

    async def _continuation(self, client: AgentClient, probe: str, known_turns: set[str],
                            errors_before: int) -> ChatTurn | None:
        """The turn that continues after approvals, or None if the server does not continue."""

        def new_turn() -> ChatTurn | None:
            return next((t for request_id, t in client.turns.items() if request_id not in known_turns), None)

        wait = CONTINUATION_WAIT
        while True:
            if (turn := new_turn()) is not None:
                return turn
            if len(client.errors) > errors_before:
                self.out.line("error", f"the server refused the approval: {client.errors[-1]}")
                return None
            answer = self._probe_answers.get(probe)
            if isinstance(answer, StreamResumeNone):
                return None
            if isinstance(answer, StreamPending) and wait < CONTINUATION_PENDING_WAIT:
                wait = CONTINUATION_PENDING_WAIT
            def progress(c: AgentClient) -> tuple[int, int, type | None]:
                answer = self._probe_answers.get(probe)
                return len(c.turns), len(c.errors), None if answer is None else type(answer)

            seen = progress(client)

            def moved(c: AgentClient, seen: tuple[int, int, type | None] = seen) -> bool:
                return progress(c) != seen

            with anyio.move_on_after(wait) as scope:
                await client.wait_until(moved)
            if scope.cancelled_caught:
                self.out.line("error", f"the server did not continue within {wait:.0f} s")
                return None


def _count(messages: list[Message]) -> str:
    return f"{len(messages)} message{'' if len(messages) == 1 else 's'}"


def _find_tool_part(messages: list[Message], tool_call_id: str) -> ToolPart | None:
    for message in reversed(messages):
        for part in message.tool_parts:
            if part.tool_call_id == tool_call_id:
                return part
    return None


def _connect_error(url: str, exc: BaseException) -> str:
    match exc:
        case InvalidStatus():
            response = exc.response
            body = response.body.decode(errors="replace").strip() if response.body else ""
            detail = f": {body}" if body else ""
            return (f"the server refused the connection to {url} "
                    f"(HTTP {response.status_code} {response.reason_phrase}{detail})")
        case InvalidURI():
            return f"{url} is not a valid WebSocket URL: {exc}"
        case InvalidHandshake():
            return f"{url} did not accept a WebSocket connection: {exc}"
        case ConnectionRefusedError():
            return f"cannot connect to {url}: connection refused (is the server running?)"
        case TimeoutError():
            return f"cannot connect to {url}: timed out"
        case OSError():
            return f"cannot connect to {url}: {exc.strerror or exc}"
        case ConnectionError():
            return f"cannot connect to {url}: {exc}"
    return f"cannot connect to {url}: {type(exc).__name__}: {exc}"


@contextlib.contextmanager
def _terminal_restored(stream: TextIO) -> Iterator[None]:
    """Put the terminal back as it was (a read interrupted by leaving may leave it raw)."""
    try:
        import termios
    except ImportError:  # not a POSIX terminal
        yield
        return
    fd = stream.fileno() if stream.isatty() else None
    saved = termios.tcgetattr(fd) if fd is not None else None
    try:
        yield
    finally:
        if fd is not None and saved is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def run_chat(url: str, *, plain: bool | None = None) -> int:
    """Run `think chat <url>` and return its exit code (2 for a URL that names no agent)."""
    stderr = Console(stderr=True, highlight=False)
    try:
        target = chat_target(url)
    except ChatUrlError as exc:
        stderr.print(Text(f"think chat: {exc}", style="bold red"), soft_wrap=True)
        return 2
    if plain is None:
        plain = not sys.stdout.isatty() or os.environ.get("TERM") == "dumb"
    if plain:
        console = Console(color_system=None, force_terminal=False, highlight=False, emoji=False, soft_wrap=True)
    else:
        console = Console(highlight=False)
        if sys.stdin.isatty():
            with contextlib.suppress(ImportError):
                import readline  # noqa: F401 - line editing and history for input()
    # A terminal gets input() (with readline's line editing); anything else is read from the fd.
    reader = LineReader(input if sys.stdin.isatty() else FdLines(sys.stdin.fileno()))
    chat = TerminalChat(target, console=console, plain=plain, error_console=stderr, reader=reader)
    with _terminal_restored(sys.stdin):
        try:
            return anyio.run(chat.run)
        except KeyboardInterrupt:  # where signal handlers are not available
            return 130
