"""The journal of one sandbox run: every host call, in order, with its answer.

The host dispatcher is the only way out of the sandbox, so this record is complete and cannot be
forged by the guest. It is also what a re-run replays: an entry that is already in the journal is
answered from it (the call is not made again), and a guest that asks for something else at that
point has diverged (nondeterministic code), which stops the run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

JSONValue = Any


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One host call: `(seq, namespace, method, args, result | error, duration)`."""

    seq: int
    namespace: str
    method: str
    args: dict[str, JSONValue]
    result: JSONValue = None
    error: str | None = None
    """`"ExcType: message"` when the call raised (the guest saw that exception)."""
    duration: float = 0.0
    """Seconds the call ran (the JSON form keeps milliseconds, `ms`)."""
    done: bool = True
    """False for the marker written before the call runs: still there after a crash, it says the
    call was in flight when the process died (its result is unknown)."""

    def to_json(self) -> dict[str, JSONValue]:
        out: dict[str, JSONValue] = {"seq": self.seq, "namespace": self.namespace, "method": self.method,
                                     "args": self.args, "ms": round(self.duration * 1000, 3)}
        if not self.done:
            out["in_flight"] = True
        elif self.error is not None:
            out["error"] = self.error
        else:
            out["result"] = self.result
        return out

    @classmethod
    def from_json(cls, data: dict[str, JSONValue]) -> JournalEntry:
        return cls(seq=int(data["seq"]), namespace=str(data["namespace"]), method=str(data["method"]),
                   args=dict(data.get("args") or {}), result=data.get("result"), error=data.get("error"),
                   duration=float(data.get("ms") or 0.0) / 1000, done=not data.get("in_flight"))


class Diverged(Exception):
    """A replayed run asked for a different call than the journal recorded at that position."""


OnEntry = Callable[[JournalEntry], None]


class Journal:
    """The calls of one run so far, plus the recorded calls a re-run answers from."""

    def __init__(self, replay: Sequence[JournalEntry] = (), on_entry: OnEntry | None = None,
                 on_start: OnEntry | None = None) -> None:
        self.entries: list[JournalEntry] = []
        self._replay = list(replay)
        self._on_entry = on_entry
        self._on_start = on_start
        self.replayed = 0
        """Calls answered from the recorded journal instead of being made."""

    @property
    def next_seq(self) -> int:
        return len(self.entries)

    def recorded(self, namespace: str, method: str, args: dict[str, JSONValue]) -> JournalEntry | None:
        """The recorded answer for the next call, when this run is replaying one (an entry with
        `done=False` if that call was in flight: the caller decides whether to make it again);
        raises `Diverged` when the guest asks for a different call than it made the first time."""
        seq = self.next_seq
        if seq >= len(self._replay):
            return None
        entry = self._replay[seq]
        if (entry.namespace, entry.method, entry.args) != (namespace, method, args):
            raise Diverged(f"the code called {namespace}.{method} where its journal has "
                           f"{entry.namespace}.{entry.method} (call {seq}); it is not deterministic")
        if not entry.done:
            return entry
        self.entries.append(entry)
        self.replayed += 1
        return entry

    def start(self, namespace: str, method: str, args: dict[str, JSONValue]) -> None:
        """Mark the next call as running (persisted by `on_start` before the call is made)."""
        if self._on_start is not None:
            self._on_start(JournalEntry(self.next_seq, namespace, method, args, done=False))

    def add(self, entry: JournalEntry) -> None:
        self.entries.append(entry)
        if self._on_entry is not None:
            self._on_entry(entry)
