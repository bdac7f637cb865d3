"""Tool calls a crash cut off: what recovery does with them, for chat turns and submissions alike.

A call the restart found without a result was running (or about to) when the process died. Its
tool's `recovery` policy decides: `"rerun"` makes it an approved call, which the continuation
runs first thing (`think.loop` runs approved calls before asking the model again); `"report"`
(the default) gives it the "interrupted" error the model then sees. A call with a result is
settled and never runs again; a client's call (`is_client_call`) waits for the client whatever
happened here. Chat recovery (`think.recovery.engine`) and submission recovery
(`think.submissions`) both settle through `settle_cut_off_calls`, so the policy lives here only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from think.context.convert import INTERRUPTED_TOOL_TEXT
from think.messages import Message, ToolApproval
from think.tools.tool import Tool, is_client_call

if TYPE_CHECKING:
    from think.sessions.session import Session


def settle_cut_off_calls(session: Session, partial: Message | None, tools: Mapping[str, Tool], *,
                         rerun: bool) -> bool:
    """Settle the in-flight server calls of `partial` by their policy (with `rerun=False` every
    one gets the "interrupted" error: nothing will run again) and save it; True if any changed."""
    if partial is None:
        return False
    changed = False
    for part in partial.tool_parts:
        in_flight = part.state in ("input-available", "input-streaming") or (
            part.state == "approval-responded" and part.approval is not None and bool(part.approval.approved))
        if not in_flight or is_client_call(part.name, tools):
            continue
        if rerun and tools[part.name].recovery == "rerun" and part.state != "input-streaming":
            part.state = "approval-responded"
            part.approval = ToolApproval(id=f"recovery-{part.tool_call_id}", approved=True, is_automatic=True)
        else:
            part.state, part.error_text = "output-error", INTERRUPTED_TOOL_TEXT
        changed = True
    if changed:
        session.save([partial])
    return changed
