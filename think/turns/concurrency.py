"""Overlapping chat submits: what `message_concurrency` does with a message sent while the agent
is busy (Think's `messageConcurrency`).

A submit *overlaps* when a turn of the same queue generation is running or queued, or another
submit was accepted and has not finished. Only chat submits are subject to the strategy;
regenerations, continuations and programmatic turns always queue.

* `"queue"` (default): every submit is saved and answered in order.
* `"latest"`: every submit is saved; an overlapping one that reaches the front of the queue
  while a newer overlapping submit exists runs no model call (its sender gets an empty `done`);
  the newest answers, seeing every saved message.
* `"merge"`: the same as `"latest"` (the messages are always saved, so the survivor sees them all).
* `"drop"`: an overlapping submit is refused: not saved, its sender gets the transcript and `done`.
* `{"strategy": "debounce", "debounce": 0.75}`: like `"latest"`, and the surviving submit first
  waits until `debounce` seconds after it was sent (a newer one arriving meanwhile supersedes it).
* `"steer"` (not in Think): an overlapping submit joins the running turn at its next step boundary
  (`think.turns.steer`): saved after the reply so far, seen by the model's next call; a turn that
  ends before a boundary is followed by it at once. Submits steered before one boundary are
  answered together by the newest (the older senders get an empty `done`).

After a clear (a new queue generation) earlier submits are stale and later ones do not overlap them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import anyio

from think.errors import ConfigurationError

Strategy = Literal["queue", "latest", "merge", "drop", "debounce", "steer"]
MessageConcurrency: TypeAlias = Literal["queue", "latest", "merge", "drop", "steer"] | Mapping[str, Any]
DEFAULT_DEBOUNCE = 0.75
"""Seconds a `"debounce"` waits for more messages, as in Think (750 ms)."""


@dataclass(frozen=True)
class ConcurrencyPolicy:
    strategy: Strategy = "queue"
    debounce: float = DEFAULT_DEBOUNCE
    """Seconds, for `"debounce"`."""

    @classmethod
    def parse(cls, value: MessageConcurrency) -> ConcurrencyPolicy:
        """A `message_concurrency` value as a policy; `ConfigurationError` for anything else.

        A debounce that is not a finite, non-negative number falls back to 0.75 s, as in Think.
        """
        if isinstance(value, str):
            if value not in ("queue", "latest", "merge", "drop", "steer"):
                raise ConfigurationError(f"message_concurrency must be 'queue', 'latest', 'merge', 'drop', 'steer' or "
                                         f"{{'strategy': 'debounce', 'debounce': …}}, not {value!r}")
            return cls(value)
        if isinstance(value, Mapping) and value.get("strategy") == "debounce":
            seconds = value.get("debounce", DEFAULT_DEBOUNCE)
            for old in ("debounce_ms", "debounceMs"):
                if old in value and "debounce" not in value:
                    warnings.warn(f"message_concurrency {old!r} (milliseconds) is deprecated; use 'debounce' "
                                  "in seconds", DeprecationWarning, stacklevel=3)
                    ms = value[old]
                    seconds = ms / 1000 if isinstance(ms, int | float) and not isinstance(ms, bool) else ms
            if (isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds)
                    or seconds < 0):
                seconds = DEFAULT_DEBOUNCE
            return cls("debounce", float(seconds))
        raise ConfigurationError(f"message_concurrency {value!r} is not a strategy this agent knows")


@dataclass
class Submit:
    """One accepted chat submit."""

    seq: int
    generation: int
    overlapping: bool
    sent_at: float


class SubmitAdmission:
    """Tracks accepted chat submits and decides, per strategy, which of them answer."""

    def __init__(self) -> None:
        self._seq = 0
        self._open: dict[int, Submit] = {}
        self._newest_overlapping: dict[int, int] = {}  # generation → seq
        self._arrived = anyio.Event()

    def accept(self, policy: ConcurrencyPolicy, *, busy: bool, generation: int) -> Submit | None:
        """Register a submit; None when the strategy drops it (`busy`: another turn is running or
        queued)."""
        overlapping = busy or any(s.generation == generation for s in self._open.values())
        if overlapping and policy.strategy == "drop":
            return None
        self._seq += 1
        submit = Submit(self._seq, generation, overlapping, anyio.current_time())
        self._open[submit.seq] = submit
        if overlapping:
            self._newest_overlapping[generation] = submit.seq
        self._arrived.set()
        self._arrived = anyio.Event()
        return submit

    def finished(self, submit: Submit) -> None:
        self._open.pop(submit.seq, None)
        if not any(s.generation == submit.generation for s in self._open.values()):
            self._newest_overlapping.pop(submit.generation, None)

    def superseded(self, policy: ConcurrencyPolicy, submit: Submit) -> bool:
        """A newer overlapping submit exists, and the strategy keeps only the newest."""
        return (policy.strategy in ("latest", "merge", "debounce") and submit.overlapping
                and self._newest_overlapping.get(submit.generation, submit.seq) > submit.seq)

    def admit(self, policy: ConcurrencyPolicy, submit: Submit) -> Callable[[], Awaitable[bool]] | None:
        """What the turn calls at the front of the queue (after saving its messages): True to run
        the model, False when superseded. None when the strategy never holds a submit back."""
        if policy.strategy in ("queue", "drop", "steer") or not submit.overlapping:
            return None

        async def admitted() -> bool:
            while not self.superseded(policy, submit):
                if policy.strategy != "debounce":
                    return True
                remaining = submit.sent_at + policy.debounce - anyio.current_time()
                if remaining <= 0:
                    return True
                arrived = self._arrived
                with anyio.move_on_after(remaining):
                    await arrived.wait()
            return False

        return admitted

    def reset(self) -> None:
        """Forget every submit (the chat was cleared)."""
        self._open.clear()
        self._newest_overlapping.clear()
        self._arrived.set()
        self._arrived = anyio.Event()
