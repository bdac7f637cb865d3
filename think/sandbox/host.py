"""The sandbox host: the one place where untrusted Python runs.

Code runs in pydantic-monty, a separate interpreter for a Python subset, inside a worker process
of a pool shared by the whole process. The guest has no filesystem, no network, no environment
and no imports beyond Monty's own small standard library: every OS call it makes is answered
"not handled" (a `PermissionError` or `ModuleNotFoundError` in the guest). What it can do is
call the host functions it is given, grouped in namespaces (`tools.get_weather(city="Paris")`).
Each of those calls goes through `Dispatcher`, which is the only door out: it normalizes the
arguments, asks the function whether it needs a person's approval, enforces the host-call limit,
and journals the call (`think.sandbox.journal`).

What this module trusts: the host functions it is handed (they run with the agent's rights) and
the snapshot bytes it dumped itself (they are stored in the agent's own database). It trusts
nothing the guest produces: arguments and return values are converted to JSON values before
anything else sees them, and output is capped.

Limits (`HostLimits`): a wall-clock timeout for the whole run (compute and host calls), Monty's
own compute clock and heap cap, a recursion depth, a number of host calls, and the size of the
stdout and return value kept. A guest exception, a limit and a crashed worker all end as a
`RunOutcome` with `status="error"`; nothing the guest does raises out of `run`.

A call that needs approval ends the run as `status="paused"` with the interpreter's state dumped
at that call (`snapshot`, a few KB); `resume` loads it in a fresh worker, any process, and answers
the call. Used by `think.tools.execute`; extensions and `browser_execute` are to build on it too.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import anyio
import pydantic_monty as monty

from think.sandbox.journal import Diverged, Journal, JournalEntry
from think.sandbox.values import ValueTooLarge, cap_value, to_json

log = logging.getLogger("think.sandbox")

HOST_FUNCTION = "__think_host__"
"""The one external function the guest can reach; the namespace objects call it."""
MAX_ERROR_CHARS = 4_000
INTERRUPTED = ("interrupted: the process stopped while this call was running, so it was not made "
               "again (it may or may not have had its effect)")


@dataclass(frozen=True, slots=True)
class HostLimits:
    """What one run may use. Durations in seconds, sizes in bytes (output in characters)."""

    timeout: float = 30.0
    """Wall-clock time of the whole run, host calls included."""
    memory: int = 64 * 1024 * 1024
    """The guest's heap."""
    max_recursion: int = 200
    max_host_calls: int = 1000
    max_output: int = 64_000
    """Characters of stdout kept, and the largest return value (as JSON) passed back."""


@dataclass(frozen=True, slots=True)
class HostFunction:
    """A capability given to the guest: `namespace.name(**args)` runs `call(args)` on the host."""

    call: Callable[[dict[str, Any]], Awaitable[Any]]
    params: tuple[str, ...] = ()
    """Parameter names in order: positional arguments are mapped onto them."""
    needs_approval: Callable[[dict[str, Any]], Awaitable[bool]] | None = None
    """True for a call that must wait for a person: the run pauses there."""
    description: str = ""
    rerun: bool = False
    """After a crash cut this call off (it was running), make it again; False: the guest gets an
    "interrupted" `RuntimeError` there instead (the call may or may not have had its effect)."""


Namespaces = Mapping[str, Mapping[str, HostFunction]]


class HostCallRefused(Exception):
    """Raised by a host function to give the guest an exception of type `exc_type`."""

    def __init__(self, message: str, exc_type: str = "RuntimeError") -> None:
        super().__init__(message)
        self.exc_type = exc_type


@dataclass(frozen=True, slots=True)
class PendingCall:
    """The host call a paused run waits on."""

    namespace: str
    method: str
    args: dict[str, Any]


@dataclass(slots=True)
class RunOutcome:
    """How a run ended: `completed` (with `value`), `error`, or `paused` at `pending`."""

    status: Literal["completed", "error", "paused"]
    value: Any = None
    stdout: str = ""
    error: str | None = None
    journal: list[JournalEntry] = field(default_factory=list)
    pending: PendingCall | None = None
    snapshot: bytes | None = None
    duration: float = 0.0
    """Seconds the run took."""
    replayed: int = 0
    """Host calls answered from the recorded journal (a re-run after a crash)."""


# ---- the worker pool ------------------------------------------------------------------------------

_POOLS: dict[str | None, monty.AsyncMonty] = {}


async def worker_pool(binary: str | None = None) -> monty.AsyncMonty:
    """The process's pool of Monty workers for this worker binary (started on first use)."""
    pool = _POOLS.get(binary)
    if pool is not None:
        return pool
    pool = monty.AsyncMonty(binary_path=binary, min_processes=1, max_processes=4, max_checkouts_per_worker=500)
    await pool.__aenter__()
    if binary in _POOLS:  # another task started one meanwhile
        await pool.__aexit__(None, None, None)
        return _POOLS[binary]
    _POOLS[binary] = pool
    return pool


# ---- the namespaces the guest sees ----------------------------------------------------------------


def prelude(namespaces: Namespaces) -> str:
    """Python (run in the guest before its code) that defines one object per namespace whose
    methods call the host function. Names are checked identifiers, so nothing is injected."""
    lines: list[str] = []
    for ns, functions in namespaces.items():
        _check_identifier(ns)
        lines.append(f"class {ns}:")
        lines.append(f"    def __repr__(self):\n        return '<namespace {ns}>'")
        for name in functions:
            _check_identifier(name)
            lines.append(f"    def {name}(self, *args, **kwargs):")
            lines.append(f"        return {HOST_FUNCTION}({ns!r}, {name!r}, args, kwargs)")
        lines.append(f"{ns} = {ns}()")
    return "\n".join(lines) + "\n"


def _check_identifier(name: str) -> None:
    if not name.isidentifier() or name.startswith("_"):
        raise ValueError(f"{name!r} cannot be a sandbox name: use a Python identifier not starting with '_'")


def bind_arguments(function: HostFunction, args: Any, kwargs: Any) -> dict[str, Any]:
    """The guest's call as one JSON object of arguments. A single positional dict is the object
    itself (`tools.f({"a": 1})`); other positionals go onto `params` in order."""
    positional = list(to_json(args) or [])
    named = dict(to_json(kwargs) or {})
    if len(positional) == 1 and isinstance(positional[0], dict) and not named:
        return {str(k): v for k, v in positional[0].items()}
    if len(positional) > len(function.params):
        raise HostCallRefused(f"takes at most {len(function.params)} positional arguments "
                              f"({len(positional)} given)", "TypeError")
    for name, value in zip(function.params, positional, strict=False):
        if name in named:
            raise HostCallRefused(f"got multiple values for argument {name!r}", "TypeError")
        named[name] = value
    return named


# ---- the dispatcher -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Pause:
    call: PendingCall


class Dispatcher:
    """Answers the guest's host calls: the capability lookup, limits, approvals and the journal."""

    def __init__(self, namespaces: Namespaces, limits: HostLimits, journal: Journal) -> None:
        self.namespaces = namespaces
        self.limits = limits
        self.journal = journal
        self.calls = 0

    async def dispatch(self, ns: Any, method: Any, args: Any, kwargs: Any) -> monty.ExternalResult | _Pause:
        """The answer to one call: `{"return_value": …}`, an exception for the guest, or a pause."""
        function = self.namespaces.get(str(ns), {}).get(str(method))
        if function is None:
            return _raise("AttributeError", f"{ns}.{method} is not available")
        self.calls += 1
        if self.calls > self.limits.max_host_calls:
            return _raise("RuntimeError", f"host-call limit reached: at most {self.limits.max_host_calls} "
                                          "calls per execution")
        try:
            arguments = bind_arguments(function, args, kwargs)
        except HostCallRefused as exc:
            return _raise(exc.exc_type, f"{ns}.{method}() {exc}")
        recorded = self.journal.recorded(str(ns), str(method), arguments)  # Diverged propagates
        if recorded is not None and recorded.done:
            return _answer(recorded)
        if recorded is not None and not function.rerun:
            entry = JournalEntry(recorded.seq, recorded.namespace, recorded.method, arguments,
                                 error=f"RuntimeError: {INTERRUPTED}")
            self.journal.add(entry)
            return _answer(entry)
        if function.needs_approval is not None and await function.needs_approval(arguments):
            return _Pause(PendingCall(str(ns), str(method), arguments))
        return _answer(await self.call(str(ns), str(method), function, arguments))

    async def approved(self, pending: PendingCall, function: HostFunction) -> monty.ExternalResult:
        """The answer to an approved call. Resumed again after a crash, the journal may already
        have it (done: answered from there; in flight: its `rerun` policy decides)."""
        recorded = self.journal.recorded(pending.namespace, pending.method, pending.args)
        if recorded is not None and recorded.done:
            return _answer(recorded)
        if recorded is not None and not function.rerun:
            entry = JournalEntry(recorded.seq, pending.namespace, pending.method, pending.args,
                                 error=f"RuntimeError: {INTERRUPTED}")
            self.journal.add(entry)
            return _answer(entry)
        return _answer(await self.call(pending.namespace, pending.method, function, pending.args))

    async def call(self, ns: str, method: str, function: HostFunction, arguments: dict[str, Any]) -> JournalEntry:
        """Run one host function for real and journal it. A function a crash must not make again
        is marked as running first (a re-run finds the marker and answers "interrupted"); one
        that may be made again (`rerun`) is not: a marker would change nothing on a re-run (the
        call is made either way), and it costs a database write per call."""
        if not function.rerun:
            self.journal.start(ns, method, arguments)
        started = time.perf_counter()
        result: Any = None
        error: str | None = None
        try:
            result = to_json(await function.call(arguments))
        except HostCallRefused as exc:
            error = f"{exc.exc_type}: {exc}"
        except Exception as exc:  # a failing tool is the guest's exception, never the host's
            error = f"RuntimeError: {type(exc).__name__}" + (f": {exc}" if str(exc) else "")
        entry = JournalEntry(self.journal.next_seq, ns, method, arguments, result, error,
                             time.perf_counter() - started)
        self.journal.add(entry)
        return entry


def _raise(exc_type: str, message: str) -> monty.ExternalResult:
    return cast(monty.ExternalResult, {"exc_type": exc_type, "message": message})


def _answer(entry: JournalEntry) -> monty.ExternalResult:
    if entry.error is None:
        return {"return_value": entry.result}
    exc_type, _, message = entry.error.partition(": ")
    known = exc_type in _GUEST_EXCEPTIONS
    return _raise(exc_type if known else "RuntimeError", message if known else entry.error)


_GUEST_EXCEPTIONS = frozenset({"RuntimeError", "TypeError", "ValueError", "KeyError", "PermissionError",
                               "FileNotFoundError", "FileExistsError", "IsADirectoryError", "NotADirectoryError",
                               "OSError", "AttributeError", "TimeoutError", "LookupError"})


# ---- the host -------------------------------------------------------------------------------------

Answer = Literal["approved"] | HostCallRefused


class SandboxHost:
    """Runs guest code against host functions under `limits` (see the module docs)."""

    def __init__(self, limits: HostLimits | None = None, *, binary: str | None = None) -> None:
        self.limits = limits or HostLimits()
        self.binary = binary
        """The Monty worker binary (None: the installed one); hardened mode points it at a wrapper."""

    def _monty_limits(self) -> monty.ResourceLimits:
        lim = self.limits
        return {"max_memory": lim.memory, "max_feed_duration_secs": lim.timeout,
                "max_recursion_depth": lim.max_recursion, "max_suspensions": lim.max_host_calls + 1000}

    async def run(self, code: str, namespaces: Namespaces, *, journal: Journal | None = None,
                  seed: str = "think", inputs: dict[str, Any] | None = None) -> RunOutcome:
        """Run `code`; its last expression is the value; `inputs` are bound as globals. With a
        `journal` that has recorded calls, those are answered from it (a re-run after a crash)."""
        journal = journal or Journal()
        out = _Output(self.limits.max_output)

        async def start(session: monty.AsyncMontySession) -> monty.AsyncSnapshot:
            await session.feed_run(prelude(namespaces))
            return await session.feed_start(code, print_callback=out.write, inputs=to_json(inputs) if inputs else None)

        return await self._drive(start, namespaces, journal, out, seed)

    async def resume(self, snapshot: bytes, namespaces: Namespaces, answer: Answer, *,
                     journal: Journal, pending: PendingCall) -> RunOutcome:
        """Continue a paused run: `"approved"` runs the pending call for real; a `HostCallRefused`
        is raised in the guest at that call instead."""
        out = _Output(self.limits.max_output)

        async def start(session: monty.AsyncMontySession) -> monty.AsyncSnapshot:
            restored = await session.load_snapshot(snapshot, print_callback=out.write)
            if not isinstance(restored, monty.AsyncFunctionSnapshot):
                raise RuntimeError("the stored snapshot is not paused at a host call")
            if isinstance(answer, HostCallRefused):
                return await restored.resume(_raise(answer.exc_type, str(answer)))
            function = namespaces.get(pending.namespace, {}).get(pending.method)
            if function is None:
                return await restored.resume(_raise("AttributeError",
                                                    f"{pending.namespace}.{pending.method} is not available"))
            return await restored.resume(await Dispatcher(namespaces, self.limits, journal).approved(pending, function))

        return await self._drive(start, namespaces, journal, out, "")

    async def _drive(self, start: Callable[[monty.AsyncMontySession], Awaitable[monty.AsyncSnapshot]],
                     namespaces: Namespaces, journal: Journal, out: _Output, seed: str) -> RunOutcome:
        started = time.perf_counter()
        dispatcher = Dispatcher(namespaces, self.limits, journal)
        outcome = RunOutcome("error", journal=journal.entries)
        policy: monty.OSPolicy = {"random_start": {"seed": seed}} if seed else {}
        try:
            pool = await worker_pool(self.binary)
            with anyio.fail_after(self.limits.timeout):
                async with pool.checkout(limits=self._monty_limits(), os_policy=policy) as session:
                    step = await start(session)
                    while not isinstance(step, monty.MontyComplete):
                        answered = await self._answer(step, dispatcher)
                        if isinstance(answered, _Paused):
                            outcome.status, outcome.pending, outcome.snapshot = "paused", answered.call, answered.dump
                            break
                        step = answered
                    else:
                        outcome.status, outcome.value = "completed", cap_value(step.output, self.limits.max_output)
        except TimeoutError:
            outcome.error = f"TimeoutError: the code ran longer than {_seconds(self.limits.timeout)}"
        except monty.MontySyntaxError as exc:
            outcome.error = _clip(exc.display("traceback"))
        except monty.MontyRuntimeError as exc:
            outcome.error = _clip(exc.display("traceback"))
        except monty.MontyCrashedError as exc:
            outcome.error = f"RuntimeError: the sandbox worker stopped ({exc}); the execution was abandoned"
        except monty.MontyError as exc:
            outcome.error = _clip(f"{type(exc).__name__}: {exc}")
        except Diverged as exc:
            outcome.error = f"RuntimeError: {exc}"
        except ValueTooLarge as exc:
            outcome.error = f"ValueError: {exc}"
        outcome.stdout = out.text()
        outcome.duration = time.perf_counter() - started
        outcome.replayed = journal.replayed
        return outcome

    async def _answer(self, step: monty.AsyncSnapshot, dispatcher: Dispatcher) -> monty.AsyncSnapshot | _Paused:
        if isinstance(step, monty.AsyncFunctionSnapshot):
            if step.is_os_function:  # files, sockets, environment, imports outside Monty's stdlib
                return await step.resume_not_handled()
            name, args = step.function_name, step.args  # each read converts from Monty's side: once
            if name != HOST_FUNCTION or len(args) != 4:
                return await step.resume(_raise("NameError", f"name {name!r} is not defined"))
            answer = await dispatcher.dispatch(*args)
            if isinstance(answer, _Pause):
                return _Paused(answer.call, step.dump())
            return await step.resume(answer)
        if isinstance(step, monty.AsyncNameLookupSnapshot):
            return await step.resume()  # undefined: NameError in the guest
        # Every guest task waits on futures: host calls are synchronous, so this is `await` misuse.
        assert isinstance(step, monty.AsyncFutureSnapshot)
        refused = cast(monty.ExternalSettledResult, _raise("RuntimeError", "host functions are synchronous: "
                                                                           "call them without await"))
        return await step.resume({call_id: refused for call_id in step.pending_call_ids})


@dataclass(slots=True)
class _Paused:
    call: PendingCall
    dump: bytes


class _Output:
    """The guest's stdout, kept up to `limit` characters (the rest is counted, not kept)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    def write(self, stream: str, text: str) -> None:
        room = self.limit - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))

    def text(self) -> str:
        note = f"\n… ({self.dropped} more characters of output dropped)" if self.dropped else ""
        return "".join(self.parts) + note


def _clip(text: str) -> str:
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + "\n… (truncated)"


def _seconds(value: float) -> str:
    return f"{value:g} s" if math.isfinite(value) else "its limit"


__all__ = ["Dispatcher", "HostCallRefused", "HostFunction", "HostLimits", "Namespaces", "PendingCall", "RunOutcome",
           "SandboxHost", "bind_arguments", "prelude", "worker_pool"]
