"""The conversation tree for clients (a mixin of `Think`): alternatives, switching, editing.

Every regenerated answer and every edited question stays stored as a sibling branch of the one it
replaced (`Session.get_branches`). These callables let a client show and use them:

* `message_details()`: for each message of the active branch, when it was written and, where it
  has siblings, which alternative it is (`branch_index` of `branch_count`, all `branch_ids`);
* `switch_branch(message_id)`: make the branch through another alternative active; every tab of
  the conversation gets the new transcript;
* `edit_message(message_id, text)`: a new user message beside `message_id` (same parent), with the
  new text, stored before the call returns and answered by a new turn that streams to every tab
  like any other (a process killed before the answer leaves the edited question, unanswered).

What a client sends here is untrusted like any chat frame: ids must name a message of the active
branch (a user message, for an edit), the text is stored as a web user message
(`think.turns.trust.from_web`), and nothing changes while a turn runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from think.errors import ProtocolError
from think.messages import Message, TextPart
from think.runtime.rpc import callable as rpc_callable
from think.sessions.session import NEW_ROOT
from think.stream.fanout import TranscriptChanged
from think.turns.runner import new_request_id
from think.turns.trust import from_web
from think.turns.turn import TurnRequest

if TYPE_CHECKING:
    from think.agent import Think

MAX_EDIT_CHARS = 100_000
"""Longest text `edit_message` stores."""


class BranchAPI:
    """Alternatives of the conversation for clients (mixed into `Think`; see the module docs)."""

    @rpc_callable(description="Each message of the active branch: created_at, and which alternative it is "
                              "(branch_index of branch_count, branch_ids) where it has siblings.")
    async def message_details(self) -> list[dict[str, Any]]:
        agent = cast("Think", self)
        path = [m.id for m in agent.session.history()]
        if not path:
            return []
        rows = agent.db.sql("SELECT id, parent, created_at FROM think_messages WHERE session_id = ? ORDER BY seq",
                            agent.session.id)
        parent_of: dict[str, Any] = {}
        created: dict[str, float] = {}
        children: dict[Any, list[str]] = {}
        for row in rows:
            parent_of[row["id"]] = row["parent"]
            created[row["id"]] = row["created_at"]
            children.setdefault(row["parent"], []).append(row["id"])
        details: list[dict[str, Any]] = []
        for message_id in path:
            entry: dict[str, Any] = {"id": message_id, "created_at": created.get(message_id)}
            siblings = children.get(parent_of.get(message_id), [message_id])
            if len(siblings) > 1:
                entry.update(branch_index=siblings.index(message_id), branch_count=len(siblings),
                             branch_ids=siblings)
            details.append(entry)
        return details

    @rpc_callable(description="Show another alternative: make the branch through message_id active "
                              "(down to its newest message); every tab gets the new transcript.")
    async def switch_branch(self, message_id: str) -> dict[str, Any]:
        agent = cast("Think", self)
        _refuse_while_busy(agent, "switch_branch")
        session = agent.session
        if session.get_message(_checked_id(message_id)) is None:
            raise ProtocolError(f"switch_branch: no message {message_id!r} in this conversation")
        session.switch_branch(message_id)
        await session.fanout.publish(TranscriptChanged(tuple(session.history())))
        return {"status": "switched", "message_id": message_id}

    @rpc_callable(description="Edit a user message of the active branch: a new message with the new text "
                              "beside it (the old one stays, as a branch), answered by a new turn.")
    async def edit_message(self, message_id: str, text: str) -> dict[str, Any]:
        agent = cast("Think", self)
        _refuse_while_busy(agent, "edit_message")
        if not isinstance(text, str) or not text.strip():
            raise ProtocolError("edit_message: the new text must be a non-empty string")
        if len(text) > MAX_EDIT_CHARS:
            raise ProtocolError(f"edit_message: the text is {len(text)} characters; at most {MAX_EDIT_CHARS}")
        history = agent.session.history()
        index = next((i for i, m in enumerate(history) if m.id == _checked_id(message_id)), None)
        if index is None:
            raise ProtocolError(f"edit_message: no message {message_id!r} on the active branch")
        old = history[index]
        if old.role != "user":
            raise ProtocolError(f"edit_message: {message_id!r} is a {old.role} message; only user messages "
                                "can be edited (regenerate an answer instead)")
        parts = [TextPart(text=text), *(p for p in old.parts if not isinstance(p, TextPart))]  # files stay
        edited = from_web(Message(id=new_request_id(), role="user", parts=parts),
                          agent.reserved_metadata_keys)
        parent = history[index - 1].id if index > 0 else NEW_ROOT
        await agent.add_messages([edited], parent_id=parent)  # stored (and shown) before the answer
        request_id = new_request_id()
        agent.start_turn(TurnRequest(request_id=request_id, parent_id=edited.id))  # answers the edit
        return {"status": "started", "message_id": edited.id, "request_id": request_id}


def _checked_id(message_id: object) -> str:
    if not isinstance(message_id, str) or not message_id:
        raise ProtocolError(f"a message id must be a non-empty string, not {message_id!r}")
    return message_id


def _refuse_while_busy(agent: Think, api: str) -> None:
    if agent.is_busy():
        raise ProtocolError(f"{api}: an answer is being written; wait for it to finish (or stop it) first")
