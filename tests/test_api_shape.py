"""The public API's sync/async shape and its units, listed so they cannot drift unnoticed.

The convention (issue 21, item 8; docs/concepts/agents.md): a method is `async` when it can wait
on something — it runs a hook or a model, streams or broadcasts to clients, waits for a turn, a
lock or another task, or does I/O beyond the agent's own SQLite file (the workspace, the network,
MCP). One that only reads in-memory state or reads or writes the agent's own SQLite database
returns directly: sync. So `cancel_chat` (sets the turn's cancel signal) is sync and
`cancel_submission` (records it and runs `on_submission_status`) async; `sessions.create` (one row)
is sync and `session.compact` (a model call) async; `Session.add_messages` (storage) is sync and
`Think.add_messages` (`on_sanitize_message`, then clients hear of it) async. A method that changes
shape breaks every caller: it gets a new name, the old one keeps working with a
`DeprecationWarning`, and SHAPE changes with it, on purpose.

Durations are seconds, as floats; a public name ending in `_ms` (or `Ms`) is refused unless it is
a deprecated alias listed in DEPRECATED_MS (and warns).
"""

from __future__ import annotations

import ast
import inspect
import re
import warnings
from pathlib import Path

import pytest

from think import EmbeddedRuntime, Think, Workspace
from think.client import AgentClient
from think.harness import HarnessSession, HarnessSessions, ThinkHarness
from think.hooks import ToolCall, ToolCallResultContext, TurnConfig
from think.runtime.embedded import open_agent
from think.sessions.manager import Sessions
from think.sessions.session import Session

SHAPE: dict[str, dict[str, list[str]]] = {
    "Think": {
        "async": [
            "abort_sub_agent", "add_context", "add_mcp_server", "add_messages", "add_tool_result",
            "after_tool_call", "approve_execution", "approve_tool_call", "before_step",
            "before_tool_call", "before_turn", "call_mcp_tool", "cancel_submission", "chat",
            "clear_messages", "continue_last_turn", "delete_sub_agent", "edit_message", "get_prompt",
            "list_workspace", "message_details", "on_chat_error", "on_chat_recovery", "on_chat_response", "on_chunk",
            "on_exhausted", "on_request", "on_start", "on_state_update", "on_step_finish",
            "on_submission_status", "read_resource", "read_workspace_file", "reattach_run",
            "regenerate", "reject_execution", "remove_context", "remove_mcp_server",
            "report_progress", "run", "run_agent_tool", "run_due_schedules", "run_turn",
            "save_messages", "set_state", "sub_agent", "submit_messages", "switch_branch", "tool_approval",
            "wait_for_submission",
            "wait_until_stable", "write_data",
        ],
        "sync": [
            "action_clock", "all_migrations", "all_tools", "authorize_action", "authorize_turn",
            "cancel_all_chats", "cancel_chat", "cancel_schedule",
            "classify_chat_error", "configure", "configure_session", "delete_submission",
            "delete_submissions", "executions", "expire_paused", "framework_migrations",
            "get_actions", "get_config", "get_extensions", "get_mcp_servers", "get_messages", "get_model",
            "get_scheduled_tasks",
            "get_schedules", "get_skill_script_runner", "get_skills", "get_system_prompt",
            "get_tools", "has_pending_interaction", "inspect_submission", "is_busy", "kebab_name",
            "kv_get", "kv_set", "list_prompts", "list_resources", "list_submissions", "loaded_extensions",
            "mcp_servers", "message_metadata",
            "on_sanitize_message", "pending_approvals", "pending_executions", "reply_attachments", "resolve_model",
            "save_snippet", "schedule", "server_tools", "sql", "start_turn", "stash", "usage",
            "workspace_tools",
        ],
    },
    "Session": {
        "async": [
            "announce", "append_context_block", "compact", "compact_if_needed", "get_context_block",
            "get_context_blocks", "refresh_system_prompt", "replace_context_block", "system_prompt",
        ],
        "sync": [
            "add_compaction", "add_messages", "checkout", "clear", "compact_after",
            "compaction_in_effect", "count_rows", "forget_cache", "get", "get_branches",
            "get_compactions", "get_message", "history", "history_ids", "history_json",
            "history_roles", "ids_before_window", "index_of", "model_view", "on_compaction",
            "on_compaction_error", "save", "search", "status", "switch_branch", "token_estimate",
            "unsettled", "with_cached_prompt", "with_context", "with_searchable_history",
        ],
    },
    "ThinkHarness": {"async": [], "sync": ["of", "session"]},
    "HarnessSession": {
        "async": ["abort", "add_tool_result", "approve_tool_call", "chat", "compact", "continue_", "prompt",
                  "regenerate", "reset",
                  "submit", "wait"],
        "sync": ["branches", "in_flight", "inspect", "messages", "pending", "search", "subscribe"],
    },
    "HarnessSessions": {"async": [], "sync": ["create", "fork", "list"]},
    "Workspace": {
        "async": ["append_file", "apply", "cp", "exists", "export", "glob", "info", "list", "mkdir", "mv",
                  "read_bytes", "read_file", "rm", "search", "stat", "write_file"],
        "sync": ["on_change"],
    },
    "EmbeddedRuntime": {
        "async": ["close", "fire_due_alarms", "get", "hibernate", "hibernate_idle", "run_alarms", "run_sweeper"],
        "sync": ["claim", "lease", "live", "owning", "path_for", "register", "release", "set_alarm"],
    },
    "AgentClient": {  # `connect` returns an async context manager
        "async": ["call", "cancel", "clear", "close", "get_messages", "regenerate", "send", "send_chat", "send_text",
                  "set_state", "start_call", "wait_closed", "wait_until"],
        "sync": ["connect", "for_agent", "turn"],
    },
    "Sessions": {
        "async": [],
        "sync": [
            "configure", "create", "delete", "forget_caches", "fork", "get", "list", "rename", "search", "session",
        ],
    },
}


def shape(cls: type) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {"async": [], "sync": []}
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(cls, name)
        fn = attr.__func__ if isinstance(attr, staticmethod | classmethod) else attr
        if isinstance(fn, property) or not callable(fn):
            continue
        waits = inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)
        found["async" if waits else "sync"].append(name)
    return found


def test_the_public_methods_keep_their_sync_or_async_shape() -> None:
    for cls in (Think, Session, Sessions, ThinkHarness, HarnessSession, HarnessSessions, Workspace, EmbeddedRuntime,
                AgentClient):
        assert shape(cls) == SHAPE[cls.__name__], (
            f"{cls.__name__}'s public methods changed: a method that became sync or async breaks every "
            "caller; add a new name with a deprecation shim, then update SHAPE")


# ---- durations: seconds ---------------------------------------------------------------------------

DEPRECATED_MS = {
    "think/agent.py:Think.chat_stream_stall_timeout_ms",
    "think/hooks.py:TurnConfig.stream_stall_timeout_ms",
    "think/hooks.py:ToolCallResultContext.duration_ms",
}
"""Millisecond names kept one release for old code; each warns (see the test below)."""

MILLIS = re.compile(r"(^|_)(ms|MS)(_|$)|[a-z0-9]Ms$|[Mm]illis")
PACKAGE = Path(__file__).resolve().parent.parent / "think"


def public_names(path: Path) -> list[str]:
    """`Class.attr`, `function(param)`, `CONSTANT` … of a module: every name a user can reach
    without an underscore (parameters of public functions and methods too)."""
    found: list[str] = []

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef) and not child.name.startswith("_"):
                found.append(scope + child.name)
                visit(child, f"{scope}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    not child.name.startswith("_") or child.name == "__init__"):
                found.append(scope + child.name)
                args = child.args
                found.extend(f"{scope}{child.name}({a.arg})" for a in (*args.posonlyargs, *args.args,
                                                                        *args.kwonlyargs) if not a.arg.startswith("_"))
            elif isinstance(child, ast.AnnAssign) and isinstance(child.target, ast.Name):
                found.append(scope + child.target.id)
            elif isinstance(child, ast.Assign):
                found.extend(scope + t.id for t in child.targets if isinstance(t, ast.Name))
    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return [n for n in found if not n.rsplit(".", 1)[-1].startswith("_") or "(" in n]


def test_public_durations_are_seconds() -> None:
    millis = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent)
        if any(part.startswith("_") and part != "__init__.py" for part in relative.parts):
            continue
        for name in public_names(path):
            leaf = name.rsplit("(", 1)[-1].rstrip(")") if "(" in name else name.rsplit(".", 1)[-1]
            if MILLIS.search(leaf):
                millis.add(f"{relative.as_posix()}:{name}")
    assert millis == DEPRECATED_MS, (
        "a public name in milliseconds: durations are seconds (floats); keep a millisecond name only as a "
        f"deprecated alias that warns, listed in DEPRECATED_MS. New: {sorted(millis - DEPRECATED_MS)}; "
        f"gone: {sorted(DEPRECATED_MS - millis)}")


async def test_the_millisecond_aliases_warn_and_convert(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match="stream_stall_timeout"):
        assert TurnConfig(stream_stall_timeout_ms=1500).stream_stall_timeout == 1.5
    ctx = ToolCallResultContext(call=ToolCall(id="c1", name="t", input={}), step_number=0, duration=0.25,
                                success=True)
    with pytest.warns(DeprecationWarning, match="duration"):
        assert ctx.duration_ms == 250

    class Old(Think):
        chat_stream_stall_timeout_ms = 2500

    with pytest.warns(DeprecationWarning, match="chat_stream_stall_timeout"):
        async with open_agent(Old, "old", data_dir=tmp_path) as agent:
            assert agent.chat_stream_stall_timeout == 2.5

    class New(Think):
        chat_stream_stall_timeout = 2.5

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        async with open_agent(New, "new", data_dir=tmp_path) as fresh:  # the seconds names never warn
            assert fresh.chat_stream_stall_timeout == 2.5
