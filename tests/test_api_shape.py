"""The public API's sync/async shape, listed so it cannot drift unnoticed.

The convention (issue 21, item 8): what touches storage or waits is async; pure reads of in-memory
state are sync. A few names predate it (`cancel_chat` is sync, `cancel_submission` async;
`Session.add_messages` sync, `Think.add_messages` async); changing one needs a new name and a
deprecation shim for the old one, and then this list changes with it, on purpose.
"""

from __future__ import annotations

import inspect

from think import Think
from think.harness import HarnessSession, HarnessSessions, ThinkHarness
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
        "async": ["abort", "add_tool_result", "chat", "compact", "continue_", "prompt", "regenerate", "reset",
                  "submit", "wait"],
        "sync": ["branches", "in_flight", "inspect", "messages", "pending", "search", "subscribe"],
    },
    "HarnessSessions": {"async": [], "sync": ["create", "fork", "list"]},
    "Sessions": {
        "async": [],
        "sync": [
            "configure", "create", "delete", "fork", "get", "list", "rename", "search", "session",
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
    for cls in (Think, Session, Sessions, ThinkHarness, HarnessSession, HarnessSessions):
        assert shape(cls) == SHAPE[cls.__name__], (
            f"{cls.__name__}'s public methods changed: a method that became sync or async breaks every "
            "caller; add a new name with a deprecation shim, then update SHAPE")
