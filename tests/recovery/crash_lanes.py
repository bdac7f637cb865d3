"""The lanes of the crash loop (`test_crash_loop.py`).

A lane is one real server process over its own data directory, SIGKILLed again and again and
restarted; the test runs the lanes side by side. Every kill point is chosen by what a real client
(or the tools' log) has seen, never by elapsed time, and where a window must be hit it is held
open: the tools and the answer of the crash agents hold while a gate file exists (see
`crash_agents`), and the backoff lane restarts with a 600 s backoff. After each restart a round
waits (with a generous guard) for the interrupted work to finish and checks it: the answer once,
everything persisted before the kill kept, the client's transcript equal to the server's.

* `ChatLane`: `crashy/chat` under uvicorn, killed after the client has seen the k-th chunk of the
  turn (spread over the whole turn), and every fifth round from inside a write of the chunk buffer.
* `DefaultLane`: the instance named `default` under a real `think serve`: killed mid-answer; the
  restarted server is killed again once the client has the ACKed replay and
  `cf_agent_chat_recovering` (inside the backoff); the third start finishes the turn.
* `SubmissionLane`: a durable submission (`jobs/j`, from an RPC method) killed while `fetch`
  (`recovery="rerun"`) and `record` run: `fetch` runs again, `record` is reported interrupted.
* `ClientToolLane`: `asker/a` killed while its own client tool `ask_user` waits for the browser
  and `record` runs: recovery parks; the client answers after the restart and the turn finishes.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from tests.recovery.crash_agents import answer
from tests.submissions.server_process import ServerProcess, spawn_think_serve, spawn_uvicorn
from think.client import AgentClient
from think.protocol.frames import ChatRecovering, ServerFrame, ToolResult

APP = "tests.recovery.crash_app:app"
READY = "/agents/crashy/probe/get-messages"
GUARD = 60.0
"""Seconds any single wait may take before the round fails (a failure guard, never a timer)."""
JSON = dict[str, Any]


def turn_messages(messages: list[JSON], question: str) -> list[JSON] | None:
    """The messages answering the user message `question` (None unless it is there exactly once)."""
    at = [i for i, m in enumerate(messages) if m["role"] == "user" and _text(m) == question]
    if len(at) != 1:
        return None
    out = []
    for message in messages[at[0] + 1:]:
        if message["role"] == "user":
            break
        out.append(message)
    return out


def turn_text(messages: list[JSON], question: str) -> str | None:
    """The assistant text after the user message `question` (None if that message is missing)."""
    answered = turn_messages(messages, question)
    return None if answered is None else "".join(_text(m) for m in answered)


def _text(message: JSON) -> str:
    return "".join(str(p.get("text", "")) for p in message["parts"])


def rows(db: Path, query: str, *params: object) -> list[tuple[Any, ...]]:
    """Rows of `query`, read as the (possibly dead) server left the database."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute(query, params).fetchall()
    finally:
        conn.close()


def persisted_text(db: Path, request_id: str) -> str:
    """The text a stream's buffered chunks hold: what the kill may not lose."""
    text = ""
    for (body,) in rows(db, "SELECT body FROM think_stream_chunks WHERE request_id = ? ORDER BY first_seq",
                        request_id):
        for line in body.split("\n"):
            chunk = json.loads(line)
            if chunk.get("type") == "text-delta":
                text += chunk["delta"]
    return text


def tool_log(path: Path) -> list[tuple[str, str, str]]:
    """`(event, call id or question, tool)` for every line the crash agents logged (`start`, `end`, `hold`)."""
    out = []
    for line in (path.read_text().splitlines() if path.exists() else []):
        event, call_id, *name = line.split()
        out.append((event, call_id, name[0] if name else "record"))
    return out


async def until(check: Callable[[], Awaitable[bool] | bool], *, within: float = GUARD) -> bool:
    """Poll `check` (another process makes it true) until it holds; False after `within` seconds."""
    with anyio.move_on_after(within):
        while True:
            result = check()
            if not isinstance(result, bool):
                result = await result
            if result:
                return True
            await anyio.sleep(0.05)
    return False


def held_env(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A data dir, the tools' log and the env of a server whose answers hold before `w5` while
    the returned gate file exists (it logs `hold <question>` when it does)."""
    gate = tmp_path / "answer-gate"
    gate.write_text("held")
    tools = tmp_path / "tools.txt"
    return gate, tools, {"THINK_DATA_DIR": str(tmp_path / "data"), "THINK_TEST_WAKE_AFTER": "1.0",
                         "THINK_TEST_TOOLS": str(tools), "THINK_TEST_ANSWER_GATE": str(gate),
                         "THINK_TEST_HOLD_AT": "5"}


def holds(tools: Path) -> int:
    """How many times an answer has held (see `held_env`)."""
    return sum(line.startswith("hold ") for line in (tools.read_text().splitlines() if tools.exists() else []))


class Lane:
    """One server process over its own data directory, and the rounds it is killed in."""

    name = "lane"
    agent = "crashy/chat"

    def __init__(self, root: Path, rounds: int, counts: Counter[str], failures: list[str], seed: int) -> None:
        self.root = root / self.name
        self.data = self.root / "data"
        self.tools = self.root / "tools.txt"
        self.gate = self.root / "gate"
        self.answer_gate = self.root / "answer-gate"
        self.rounds = rounds
        self.counts = counts
        self.failures = failures
        self.rng = random.Random(seed)
        self.env = {"THINK_DATA_DIR": str(self.data), "THINK_TEST_TOOLS": str(self.tools),
                    "THINK_TEST_GATE": str(self.gate), "THINK_TEST_ANSWER_GATE": str(self.answer_gate),
                    "THINK_TEST_BACKOFF": "0.05"}
        self.server: ServerProcess | None = None

    @property
    def db(self) -> Path:
        kind, name = self.agent.split("/")
        return self.data / kind / f"{name}.db"

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"{self.server.ws}/agents/{self.agent}"

    def spawn(self, env: dict[str, str]) -> ServerProcess:
        return spawn_uvicorn(APP, env)

    async def start(self, **env: str) -> None:
        self.server = self.spawn({**self.env, **env})
        await self.server.ready(READY)

    def kill(self, where: str) -> None:
        assert self.server is not None
        self.server.kill()
        self.counts["kills"] += 1
        self.counts[f"{self.name}: killed {where}"] += 1

    def fail(self, what: str, detail: str) -> None:
        self.counts[what] += 1
        self.failures.append(f"{self.name}: {detail}")

    def client(self, **options: Any) -> AgentClient:
        return AgentClient(self.url, call_timeout=GUARD, wait_timeout=GUARD, **options)

    async def run(self) -> None:
        self.root.mkdir(parents=True)
        try:
            await self.loop()
        finally:
            if self.server is not None:
                self.server.stop()

    async def loop(self) -> None:
        raise NotImplementedError

    # ---- checks ------------------------------------------------------------------------------

    async def finished(self, client: AgentClient, question: str, kept: str) -> list[JSON]:
        """Wait until the turn answering `question` has finished on the server and the client
        agrees; count what is wrong. Returns the stored transcript."""
        full = answer(question)
        stored: list[JSON] = []

        async def done() -> bool:
            nonlocal stored
            stored = [m.to_json() for m in await client.get_messages()]
            text = turn_text(stored, question)
            return (text is not None and full in text and not rows(self.db, "SELECT 1 FROM think_chat_fibers")
                    and all(t.done for t in client.turns.values()) and self._same(client, stored))

        if not await until(done):
            text = turn_text(stored, question)
            if text is None or full not in text:
                self.fail("incomplete answers", f"{question}: {text!r}")
            elif rows(self.db, "SELECT 1 FROM think_chat_fibers"):
                self.fail("incomplete answers", f"{question}: a fiber is left")
            elif not all(t.done for t in client.turns.values()):
                self.fail("client turns never done", f"{question}: {list(client.turns.values())!r}")
            else:
                self.fail("client transcript differs", f"{question}: client {client.messages!r} != {stored!r}")
            return stored
        text = turn_text(stored, question) or ""
        if kept not in text:
            self.fail("messages lost", f"{question}: persisted {kept!r} missing from {text!r}")
        if text.count("END.") != 1 or text.count("Answer to") != 1:
            self.fail("answers not exactly once", f"{question}: {text!r}")
        self.counts["answers checked"] += 1
        return stored

    @staticmethod
    def _same(client: AgentClient, stored: list[JSON]) -> bool:
        seen = [m.to_json() for m in client.messages]
        return [(m["id"], m["parts"]) for m in seen] == [(m["id"], m["parts"]) for m in stored]

    def parts(self, stored: list[JSON], question: str) -> dict[str, JSON]:
        """The tool parts of the turn answering `question`, by tool name."""
        return {str(p["type"])[5:]: p for m in turn_messages(stored, question) or []
                for p in m["parts"] if str(p["type"]).startswith("tool-")}

    def started(self, skip: int) -> set[str]:
        """Names of the tools whose start was logged after the first `skip` lines."""
        return {name for event, _, name in tool_log(self.tools)[skip:] if event == "start"}


class ChatLane(Lane):
    name = "chat"
    agent = "crashy/chat"

    async def loop(self) -> None:
        kill_file = self.root / "kill-in-flush"
        pending: tuple[str, str] | None = None  # the killed round's question and persisted text
        for n in range(self.rounds + 1):
            await self.start(THINK_TEST_KILL_FILE=str(kill_file))
            async with self.client() as client:
                if pending is not None:
                    await self.finished(client, *pending)
                if n == self.rounds:
                    break
                question = f"chat{n}"
                in_flush = n % 5 == 2
                if in_flush:
                    kill_file.write_text(str(self.rng.randint(1, 5)))  # it dies in its k-th flush (5-7 a turn)
                turn = await client.send_chat(question)
                if in_flush:
                    assert self.server is not None
                    if await until(lambda: self.server is not None and self.server.process.poll() is not None):
                        self.counts["kills"] += 1
                        self.counts["chat: killed inside a buffer flush"] += 1
                    else:
                        self.fail("flush kills missed", question)
                        self.kill("late")
                else:
                    k = 1 + (n % 10) * 3 + self.rng.randint(0, 2)  # a turn has ~35 chunks
                    await client.wait_until(lambda c, k=k, t=turn: len(t.chunks) >= k or t.done)  # type: ignore[misc]
                    self.kill("after the turn ended" if turn.done else f"at chunk {k // 10 * 10}+")
            pending = question, persisted_text(self.db, turn.request_id)


class DefaultLane(Lane):
    """The instance `default` under `think serve`; each round is killed twice."""

    name = "default"
    agent = "crashy/default"

    def spawn(self, env: dict[str, str]) -> ServerProcess:
        return spawn_think_serve(["tests.recovery.crash_agents:Crashy"], env)

    async def loop(self) -> None:
        pending: tuple[str, str] | None = None
        for n in range(self.rounds + 1):
            hold = 1 + (n * 5) % 14  # the answer holds before this word while the gate exists
            self.answer_gate.unlink(missing_ok=True)
            await self.start(THINK_TEST_HOLD_AT=str(hold))
            async with self.client() as client:
                if pending is not None:
                    await self.finished(client, *pending)
                if n == self.rounds:
                    break
                question = f"default{n}"
                self.answer_gate.write_text("held")
                turn = await client.send_chat(question)
                await client.wait_until(lambda c, w=f"w{hold - 1}", t=turn: w in t.text)  # type: ignore[misc]
                self.kill("mid-answer")
            kept = persisted_text(self.db, turn.request_id)
            pending = question, kept
            # Restart with a backoff no round outlasts: the recovery is provably in its backoff
            # when the client has the (ACKed) replay and the recovering frame.
            recovering: list[bool] = []

            def seen(frame: ServerFrame, into: list[bool] = recovering) -> None:
                if isinstance(frame, ChatRecovering):
                    into.append(frame.recovering)

            await self.start(THINK_TEST_BACKOFF="600")
            async with self.client(on_frame=seen) as client:
                await client.wait_until(lambda c, r=recovering: c.resumed is not None and c.resumed.done and True in r)  # type: ignore[misc]
                self.kill("in the recovery backoff after an ACKed replay")
            attempts = [a for (a,) in rows(self.db, "SELECT attempt FROM think_chat_fibers")]
            if attempts != [1]:
                self.fail("backoff kills missed", f"{question}: fibers left {attempts}")


class SubmissionLane(Lane):
    name = "submissions"
    agent = "jobs/j"

    async def loop(self) -> None:
        pending: tuple[str, str] | None = None
        for n in range(self.rounds + 1):
            self.gate.unlink(missing_ok=True)
            await self.start()
            async with self.client() as client:
                if pending is not None:
                    await self.check(client, *pending)
                if n == self.rounds:
                    break
                question = f"job{n}"
                self.gate.write_text("held")
                skip = len(tool_log(self.tools))
                submission_id = str(await client.call("submit", question))  # its turn's request id
                if not await until(lambda s=skip: self.started(s) == {"fetch", "record"}):
                    self.fail("tool kills missed", question)
                self.kill("while a rerun tool and a reported tool run")
            pending = question, persisted_text(self.db, submission_id)

    async def check(self, client: AgentClient, question: str, kept: str) -> None:
        def completed() -> bool:
            return [s for (s,) in rows(self.db, "SELECT status FROM think_submissions WHERE idempotency_key = ?",
                                       question)] == ["completed"]

        if not await until(completed):
            self.fail("incomplete answers", f"{question}: the submission did not complete")
            return
        stored = await self.finished(client, question, kept)
        parts = self.parts(stored, question)
        fetched, recorded = parts.get("fetch", {}), parts.get("record", {})
        if (fetched.get("state"), fetched.get("output")) != ("output-available", f"fetched {question}"):
            self.fail("rerun tools not rerun", f"{question}: {fetched!r}")
        if recorded.get("state") != "output-error":
            self.fail("reported tools not reported", f"{question}: {recorded!r}")


class ClientToolLane(Lane):
    name = "client-tools"
    agent = "asker/a"

    async def loop(self) -> None:
        pending: tuple[str, str] | None = None
        for n in range(self.rounds + 1):
            self.gate.unlink(missing_ok=True)
            await self.start()
            async with self.client() as client:
                if pending is not None:
                    await self.answer_and_check(client, *pending)
                if n == self.rounds:
                    break
                question = f"ask{n}"
                self.gate.write_text("held")
                skip = len(tool_log(self.tools))
                turn = await client.send_chat(question)
                if not await until(lambda s=skip: "record" in self.started(s)):
                    self.fail("tool kills missed", question)
                self.kill("while its client tool waits and a server tool runs")
            pending = question, persisted_text(self.db, turn.request_id)

    async def answer_and_check(self, client: AgentClient, question: str, kept: str) -> None:
        parked: dict[str, JSON] = {}

        async def is_parked() -> bool:
            nonlocal parked
            parked = self.parts([m.to_json() for m in await client.get_messages()], question)
            return (parked.get("ask_user", {}).get("state") == "input-available"
                    and parked.get("record", {}).get("state") == "output-error"
                    and not rows(self.db, "SELECT 1 FROM think_chat_fibers"))

        if not await until(is_parked):
            self.fail("client tools not parked", f"{question}: {parked!r}")
            return
        await client.send(ToolResult(tool_call_id=str(parked["ask_user"]["toolCallId"]), tool_name="ask_user",
                                     output=f"blue {question}", auto_continue=True))
        stored = await self.finished(client, question, kept)
        asked = self.parts(stored, question).get("ask_user", {})
        if (asked.get("state"), asked.get("output")) != ("output-available", f"blue {question}"):
            self.fail("client answers lost", f"{question}: {asked!r}")
