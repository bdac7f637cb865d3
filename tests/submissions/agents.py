"""Agents for the submission tests, importable by a server subprocess (`server_app.py`).

`Ledgered` answers "Echo: <text>". Every model call is appended to the file named by
`THINK_TEST_CALLS` (one line per call: the user text), so a test can count model calls across
processes. A prompt starting with "slow" sleeps `THINK_TEST_SLOW` seconds (default 60) before
answering, but only on its first call (so a restarted process answers it at once).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from think import Think, callable
from think.models.base import ModelRequest
from think.models.events import Finish, StreamEvent, TextDelta


class LedgerModel:
    model_id = "ledger"

    def __init__(self, gate: anyio.Event | None = None) -> None:
        self.gate = gate
        self.calls: list[str] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        said = request.last_user_text
        earlier = self._record(said)
        if said.startswith("gated") and self.gate is not None:
            await self.gate.wait()
        if said.startswith("slow") and not earlier:
            yield TextDelta("Working on it… ")
            await anyio.sleep(float(os.environ.get("THINK_TEST_SLOW", "60")))
        yield TextDelta(f"Echo: {said}")
        yield Finish("stop")

    def _record(self, said: str) -> int:
        """Log the call; how many calls with this text came before it."""
        self.calls.append(said)
        path = os.environ.get("THINK_TEST_CALLS")
        if not path:
            return self.calls.count(said) - 1
        log = Path(path)
        earlier = log.read_text().splitlines().count(said) if log.exists() else 0
        with log.open("a") as out:
            out.write(said + "\n")
        return earlier


class Ledgered(Think):
    submission_wake_after = 1.0

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.gate = anyio.Event()
        self.model = LedgerModel(self.gate)
        self.statuses: list[tuple[str, str]] = []

    def get_model(self) -> LedgerModel:
        return self.model

    async def on_submission_status(self, submission: Any) -> None:
        self.statuses.append((submission.submission_id, submission.status))

    @callable
    async def submit(self, text: str, key: str | None = None) -> dict[str, Any]:
        return (await self.submit_messages([text], idempotency_key=key)).to_json()

    @callable
    def inspect(self, submission_id: str) -> dict[str, Any] | None:
        found = self.inspect_submission(submission_id)
        return found.to_json() if found is not None else None

    @callable
    def transcript(self) -> list[str]:
        return [f"{m.role}: {m.text}" for m in self.messages]

    @callable
    def schedule_reminder(self, seconds: float, note: str) -> str:
        return self.schedule(seconds, "remind", {"note": note}).id

    async def remind(self, payload: dict[str, Any]) -> None:
        path = os.environ.get("THINK_TEST_REMINDERS")
        if path:
            with Path(path).open("a") as out:
                out.write(f"{self.name}: {payload['note']}\n")
