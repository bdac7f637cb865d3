"""The sandbox host: host functions are the only way out, every limit holds, the journal is exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.sandbox.conftest import Canary
from think.sandbox.host import HostCallRefused, HostFunction, HostLimits, SandboxHost, prelude
from think.sandbox.journal import Journal, JournalEntry

CALLS: list[dict[str, Any]] = []


async def record(args: dict[str, Any]) -> Any:
    CALLS.append(args)
    return {"n": len(CALLS), **args}


async def refuse(args: dict[str, Any]) -> Any:
    raise HostCallRefused("no such thing", "FileNotFoundError")


async def crash(args: dict[str, Any]) -> Any:
    raise KeyError("boom")


async def always(args: dict[str, Any]) -> bool:
    return True


NS = {"tools": {"record": HostFunction(record, ("name", "size")), "refuse": HostFunction(refuse),
                "crash": HostFunction(crash), "gated": HostFunction(record, ("name",), needs_approval=always)}}


def escaped() -> bool:
    """A file the battery tries to write on the host."""
    return Path("/tmp/think-pwned").exists()


def host(**limits: Any) -> SandboxHost:
    return SandboxHost(HostLimits(**{"timeout": 2.0, **limits}))


async def test_host_calls_are_journalled_with_arguments_bound_by_name() -> None:
    CALLS.clear()
    out = await host().run("a = tools.record('x', 3)\nb = tools.record({'name': 'y'})\n[a['n'], b['name']]", NS)
    assert out.status == "completed" and out.value == [1, "y"]
    assert [(e.seq, e.method, e.args) for e in out.journal] == [(0, "record", {"name": "x", "size": 3}),
                                                                 (1, "record", {"name": "y"})]
    assert out.journal[0].result == {"n": 1, "name": "x", "size": 3} and out.journal[0].error is None


async def test_a_refused_or_failing_host_call_is_an_exception_in_the_guest() -> None:
    code = ("try:\n    tools.refuse()\nexcept FileNotFoundError as e:\n    r = str(e)\n"
            "try:\n    tools.crash()\nexcept RuntimeError as e:\n    r2 = str(e)\n[r, r2]")
    out = await host().run(code, NS)
    assert out.value == ["no such thing", "KeyError: 'boom'"]
    assert [e.error for e in out.journal] == ["FileNotFoundError: no such thing", "RuntimeError: KeyError: 'boom'"]


BATTERY = [
    ("open('/etc/passwd').read()", "PermissionError: Permission denied: '/etc/passwd'"),
    ("open('/tmp/think-pwned', 'w').write('x')", "PermissionError"),
    ("from pathlib import Path\nPath('/etc/hostname').read_text()", "PermissionError"),
    ("import os\nos.listdir('/')", "PermissionError"),
    ("import os\nos.getenv('HOME')", "not supported"),
    ("import os\nos.system('id')", "AttributeError"),
    ("import subprocess", "ModuleNotFoundError: No module named 'subprocess'"),
    ("import ctypes", "ModuleNotFoundError: No module named 'ctypes'"),
    ("import socket", "ModuleNotFoundError: No module named 'socket'"),
    ("import urllib.request", "ModuleNotFoundError"),
    ("__import__('os')", "NameError"),
    ("().__class__.__base__.__subclasses__()", "AttributeError"),
    ("x = []\nwhile True:\n    x.append('a' * 1000000)", "MemoryError"),
    ("'a' * (2 * 1024 ** 3)", "MemoryError"),
    ("[0] * (2 * 1024 ** 3 // 8)", "MemoryError"),
    ("10 ** (10 ** 8)", "MemoryError"),
    ("def f(n):\n    return f(n + 1)\nf(0)", "RecursionError"),
    ("while True:\n    pass", "TimeoutError: the code ran longer than 1 s"),
    ("try:\n    while True:\n        pass\nexcept BaseException:\n    pass\nwhile True:\n    pass", "TimeoutError"),
    ("import time\ntime.sleep(100)", "not supported"),
    ("for i in range(10000):\n    tools.record(name='n')", "host-call limit reached: at most 1000 calls"),
    ("tools.nothing()", "AttributeError: 'tools' object has no attribute 'nothing'"),
    ("await tools.record(name='x')", "can't be awaited"),
]


def battery_timeout(error: str) -> float:
    """1 s for the cases about running too long; a roomy budget for the others, so a loaded
    machine's slowness never stands in for the limit a case is about."""
    return 1.0 if "TimeoutError" in error else 60.0


@pytest.mark.parametrize(("code", "error"), BATTERY)
async def test_escapes_and_limits_are_contained(code: str, error: str, tmp_path: Path, canary: Canary) -> None:
    sandbox = host(timeout=battery_timeout(error))
    out = await sandbox.run(code, NS)
    assert out.status == "error", out
    assert error in (out.error or ""), out.error
    assert not escaped() and canary.hits == []
    again = await sandbox.run("tools.record(name='after')", NS)  # the host keeps working
    assert again.status == "completed" and again.value["name"] == "after"


async def test_ten_thousand_host_calls_stop_at_the_limit_with_the_journal_of_those_made() -> None:
    out = await host(timeout=30.0).run("for i in range(10000):\n    tools.record(name='n')", NS)
    assert "host-call limit" in (out.error or "") and len(out.journal) == 1000


async def test_redos_in_the_guest_is_linear() -> None:
    out = await host().run("import re\n[re.match(r'(x+x+)+y', 'x' * 5000), re.match(r'^(a+)+$', 'a' * 40 + 'b')]", NS)
    assert out.status == "completed" and out.value == [None, None]


async def test_output_and_value_are_capped() -> None:
    out = await host(max_output=1000).run("print('x' * 100000)\n'y' * 100000", NS)
    assert out.status == "completed"
    assert out.stdout.startswith("x" * 1000) and "more characters of output dropped" in out.stdout
    assert len(out.stdout) < 1100
    assert isinstance(out.value, str) and out.value.endswith("characters as JSON, over 1000)") and len(out.value) < 1100


async def test_a_pause_dumps_the_interpreter_and_resumes_in_a_fresh_worker() -> None:
    CALLS.clear()
    code = "a = tools.record(name='before')\nb = tools.gated(name='gate')\nprint('resumed')\n[a['n'], b['n'], 'end']"
    out = await host().run(code, NS)
    assert out.status == "paused" and out.pending is not None and out.snapshot
    assert (out.pending.method, out.pending.args) == ("gated", {"name": "gate"}) and len(CALLS) == 1
    journal = Journal(out.journal)
    journal.entries = list(out.journal)
    resumed = await host().resume(out.snapshot, NS, "approved", journal=journal, pending=out.pending)
    assert resumed.status == "completed" and resumed.value == [1, 2, "end"] and resumed.stdout == "resumed\n"
    assert [e.method for e in resumed.journal] == ["record", "gated"]
    refused = await host().resume(out.snapshot, NS, HostCallRefused("no", "PermissionError"), journal=Journal(),
                                  pending=out.pending)
    assert refused.status == "error" and "PermissionError: no" in (refused.error or "")


async def test_a_rerun_answers_journalled_calls_from_the_journal_and_detects_divergence() -> None:
    CALLS.clear()
    recorded = [JournalEntry(0, "tools", "record", {"name": "a"}, {"n": 41}),
                JournalEntry(1, "tools", "record", {"name": "b"}, {"n": 42})]
    out = await host().run("[tools.record(name=x)['n'] for x in 'abc']", NS, journal=Journal(recorded))
    assert out.value == [41, 42, 1] and CALLS == [{"name": "c"}] and out.replayed == 2
    diverged = await host().run("tools.record(name='z')", NS, journal=Journal(recorded))
    assert "not deterministic" in (diverged.error or "")


async def test_only_a_call_a_crash_must_not_repeat_is_marked_as_running_before_it_runs() -> None:
    CALLS.clear()
    marked: list[JournalEntry] = []
    written: list[JournalEntry] = []
    spaces = {"tools": {"once": HostFunction(record, ("name",)), "again": HostFunction(record, ("name",), rerun=True)}}
    out = await host().run("tools.once(name='a'); tools.again(name='b'); tools.again(name='c')", spaces,
                           journal=Journal(on_entry=written.append, on_start=marked.append))
    assert out.status == "completed" and CALLS == [{"name": "a"}, {"name": "b"}, {"name": "c"}]
    assert [(e.seq, e.method, e.done) for e in marked] == [(0, "once", False)]  # the rerun calls: no marker write
    assert [(e.seq, e.method) for e in written] == [(0, "once"), (1, "again"), (2, "again")]
    # After a crash in the middle of a rerun call (nothing journalled for it), the re-run makes it again.
    CALLS.clear()
    again = await host().run("tools.once(name='a'); tools.again(name='b')", spaces, journal=Journal(written[:1]))
    assert again.status == "completed" and CALLS == [{"name": "b"}] and again.replayed == 1


def test_namespace_names_must_be_plain_identifiers() -> None:
    with pytest.raises(ValueError, match="cannot be a sandbox name"):
        prelude({"tools": {"x(): pass\nimport os\ndef y": HostFunction(record)}})
