"""What a client may claim: the one place each question of trust in client input is decided.

Every protocol codec hands what a client says to these checks before anything is stored or run
(today the `cf_agent_*` WebSocket: chat requests through `think.server.reconcile`, tool results
and approvals through `think.turns.tool_results`). A client may:

* send a message the server has only under the role the server stored it with, add no `system`
  message, and add no assistant message the server did not write (`check_known`, `check_new`);
* never set the server's metadata keys (`channel`, `turnMetadata`, `usage`, and the agent's
  `reserved_metadata_keys`): they are stripped from its new messages, and user messages get
  `channel: "web"` (`from_web`);
* through the harness (`ThinkHarness`, `source="client"`), add only user messages, and never one
  whose id the session already stores on any branch (`client_input`);
* give a tool result only for a **client tool**'s call (a tool without `execute` among the
  agent's tools, or one the browser registered that is not a server tool) that waits for its
  output (`input-available`, or `approval-responded` once approved) (`check_result`). The same
  rule holds for a result claimed inside a chat request's transcript (`check_claims`);
* answer only an approval that is pending (`approval-requested`) (`check_approval`); an approved
  call runs with the input the server stored, never one a client sends (an action also checks it
  against the input it asked about, `think.actions.runtime`);
* register tool schemas that never replace a server tool of the same name (`split_client_tools`,
  `merge_client_tools`), with a chat request or with a harness submission
  (`submit(…, client_tools=…)`, per session).

Paused work (parked actions, paused code executions) is resolved by id through the agent's
`approve_execution` / `reject_execution` callables (`think.actions.approvals`): whoever may call
the agent's RPC may resolve it, and only once, while it waits (a conditional write in its store).

A refusal raises `Refused`, whose text names the message or the tool call; the caller reports it
to the client and changes nothing. Server code (`Think.add_tool_result`, `Think.approve_tool_call`)
is trusted and does not pass through here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from think.context.block_tools import context_tools
from think.errors import ProtocolError
from think.messages import Message, ToolPart
from think.tools.tool import Tool

if TYPE_CHECKING:
    from think.agent import Think
    from think.protocol.frames import ClientToolSchema
    from think.sessions.session import Session

log = logging.getLogger("think.turns")

SERVER_ONLY_METADATA = ("channel", "turnMetadata", "usage")
"""Message metadata keys only the server sets."""
RESULT_STATES = frozenset({"input-available", "approval-responded"})
"""States of a client tool's call that a client's result may settle."""
APPROVAL_STATES = frozenset({"approval-requested"})
"""States of a call that a client's approval may answer."""
_CLAIMED_RESULTS = ("output-available", "output-error")

ToolKind = Literal["server", "client", "unknown"]


class Refused(ProtocolError):
    """A client claimed something it may not; the text says what, naming the message or call."""

    def __init__(self, message: str, *, tool_call_id: str | None = None) -> None:
        super().__init__(message)
        self.tool_call_id = tool_call_id


# ---- messages: roles, ids, reserved metadata ------------------------------------------------------


def check_known(index: int, message_id: str, *, stored_role: str, role: str) -> None:
    """A message the server has keeps the role it was stored with."""
    if stored_role != role:
        raise Refused(f"messages[{index}] ({message_id!r}) is a {stored_role} message on the server; "
                      f"a client cannot send it as a {role} message")


def check_known_run(start: int, ids: Sequence[str], roles: Sequence[object], stored_roles: Sequence[str]) -> None:
    """`check_known` for a run of messages the server has (`ids`, from position `start` of the
    request), with `stored_roles` their roles on the server: one list comparison when every role
    is the stored one, which is the usual case; the first mismatch is refused as `check_known` does."""
    if list(roles) == list(stored_roles):
        return
    for offset, (message_id, role, stored) in enumerate(zip(ids, roles, stored_roles, strict=True)):
        check_known(start + offset, message_id, stored_role=stored, role=str(role))


def check_new(index: int, message_id: str, *, role: str, adopted: str | None = None) -> None:
    """A message the server does not have: a user message is welcome; a system message never;
    an assistant message only as a copy of one the server wrote (`adopted` is that one's id)."""
    if role == "system":
        raise Refused(f"messages[{index}]: a client cannot add a system message")
    if role == "assistant" and adopted is None:
        raise Refused(f"messages[{index}]: a client cannot add an assistant message the server did not "
                      f"write (id {message_id!r})")


def check_files(index: int, message: Message) -> None:
    """A client's new message may attach files by `data:` or web URLs, never by a `workspace:`
    URL: only the server writes those (`think.workspace.attachments`), and one from a client
    would have the server read any workspace file into the model's prompt."""
    for part in message.parts:
        if part.type == "file" and getattr(part, "url", "").startswith("workspace:"):
            raise Refused(f"messages[{index}]: a client cannot attach a workspace: URL "
                          "(send the file's bytes as a data: URL)")


def from_web(message: Message, reserved: Iterable[str] = ()) -> Message:
    """A client's new message as stored: server-only metadata (and the agent's
    `reserved_metadata_keys`, `reserved`) out, `channel: "web"` in."""
    banned = {*SERVER_ONLY_METADATA, *reserved}
    metadata = {k: v for k, v in message.metadata.items() if k not in banned} \
        if isinstance(message.metadata, dict) else {}
    if message.role == "user":
        metadata["channel"] = "web"
    return message.model_copy(update={"metadata": metadata or None})


UnansweredReason = Literal["client_role", "not_client_tool", "duplicate", "interrupted", "aborted"]
"""Why a harness operation got no answer (data, not an exception; see `think.harness`)."""


def client_input(messages: Sequence[Message], *, stored: Callable[[str], bool],
                 reserved: Iterable[str] = ()) -> tuple[list[Message], UnansweredReason | None]:
    """A harness input from a client (`source="client"`): the messages to store, or why none are.

    Only user messages (anything else: `client_role`); a message whose id the session already
    stores on any branch is dropped (all dropped: `duplicate`); reserved metadata is stripped."""
    if any(m.role != "user" for m in messages):
        return [], "client_role"
    for index, message in enumerate(messages):
        check_files(index, message)  # Refused: a workspace: URL is the server's to write
    kept = [from_web(m, reserved) for m in messages if not stored(m.id)]
    return (kept, None) if kept else ([], "duplicate")


# ---- which tools a client answers for -------------------------------------------------------------


@dataclass(frozen=True)
class ToolKinds:
    """The agent's tools by who runs them, as far as a client's answer is concerned."""

    server: frozenset[str]
    """Tools the server runs itself (they have an `execute`)."""
    client: frozenset[str]
    """Tools a client runs: the agent's own execute-less tools, and the ones the browser
    registered whose name is not a server tool."""

    def kind(self, name: str) -> ToolKind:
        if name in self.server:
            return "server"
        return "client" if name in self.client else "unknown"


def agent_tools(agent: Think, session: Session | None = None, *, for_model: bool = False) -> dict[str, Tool]:
    """The tools a turn of `agent` (in `session`, by default its root session) starts from,
    before client tools and `before_turn`: the workspace tools and `get_tools()`, the session's
    context tools, skill tools, the tools of loaded extensions, the tools of MCP servers if
    `include_mcp_tools` (later sources win a name). The model (`for_model`) gets the tools of
    ready servers only; every other question (recovery, a client's answer) also knows the last
    tools of a server that is not connected yet, so a call of one is never taken for a client
    tool's."""
    tools = dict(agent.all_tools())
    tools.update(context_tools(agent.session if session is None else session))
    tools.update(agent.skills.tools())
    tools.update(agent._extension_tools())
    if agent.include_mcp_tools:
        tools.update(agent.mcp.tools(offline=not for_model))
    return tools


def tool_kinds(agent: Think, browser: Iterable[str], session: Session | None = None) -> ToolKinds:
    """`agent`'s tools by kind (in `session`, by default its root session), with `browser` the
    names of the tools the browser (or a harness submission) registered.

    A `get_tools()` that raises leaves the agent no tools of its own: a client then answers only
    for tools the browser registered (the turn that needs the others fails with its own error)."""
    try:
        tools = agent_tools(agent, session)
    except Exception:
        log.warning("could not list the tools of %s to check a client's answer", type(agent).__name__,
                    exc_info=True)
        tools = {}
    server = frozenset(name for name, tool in tools.items() if not tool.is_client_tool)
    own_client = {name for name, tool in tools.items() if tool.is_client_tool}
    return ToolKinds(server=server, client=frozenset(own_client | (set(browser) - server)))


def split_client_tools(schemas: Sequence[ClientToolSchema],
                       server: Iterable[str]) -> tuple[list[ClientToolSchema], list[str]]:
    """The browser's tool schemas a turn may use, and the names ignored because a server tool
    has them (a client never replaces a server tool)."""
    taken = set(server)
    kept = [s for s in schemas if s.name not in taken]
    return kept, [s.name for s in schemas if s.name in taken]


def merge_client_tools(tools: MutableMapping[str, Tool], client: Iterable[Tool]) -> list[str]:
    """Add a turn's client tools to its tool set, except where a server tool has the name;
    returns the names ignored."""
    ignored: list[str] = []
    for tool in client:
        existing = tools.get(tool.name)
        if existing is not None and existing.execute is not None:
            ignored.append(tool.name)
            continue
        tools[tool.name] = tool
    return ignored


def shadowed_message(name: str) -> str:
    """What the client is told about a registered tool that a server tool shadows."""
    return (f"clientTools: {name!r} is a server tool of this agent; the browser's schema for it is "
            "ignored and the server's tool is used")


# ---- tool results and approvals -------------------------------------------------------------------


def check_result(tool_call_id: str, part: ToolPart | None, kinds: ToolKinds) -> None:
    """May a client settle this call with a result? `part` is the newest part of that id (None:
    the server has no such call). Raises `Refused` naming the call."""
    if part is None:
        raise Refused(f"tool result refused: no tool call {tool_call_id!r} waits for a result",
                      tool_call_id=tool_call_id)
    name = part.name
    match kinds.kind(name):
        case "server":
            raise Refused(f"tool result refused for call {tool_call_id!r}: {name!r} is a server tool; "
                          "its result comes from the server, a client cannot supply it", tool_call_id=tool_call_id)
        case "unknown":
            raise Refused(f"tool result refused for call {tool_call_id!r}: {name!r} is not a client tool of "
                          "this agent", tool_call_id=tool_call_id)
        case "client":
            pass
    if part.state not in RESULT_STATES:
        raise Refused(f"tool result refused for call {tool_call_id!r} ({name!r}): it is {part.state}, "
                      "not waiting for a client's output", tool_call_id=tool_call_id)


def check_approval(tool_call_id: str, part: ToolPart | None) -> None:
    """May a client answer an approval for this call? Only one that asks for it. Raises `Refused`."""
    if part is None:
        raise Refused(f"tool approval refused: no tool call {tool_call_id!r} waits for approval",
                      tool_call_id=tool_call_id)
    if part.state not in APPROVAL_STATES:
        raise Refused(f"tool approval refused for call {tool_call_id!r} ({part.name!r}): it is {part.state}, "
                      "not waiting for approval", tool_call_id=tool_call_id)


def check_claims(raw: Any, index: int, open_parts: Mapping[str, ToolPart], kinds: ToolKinds) -> None:
    """A message of a chat request's transcript that the server has: every tool result it claims
    for a call the server still has open must be one a client could give (`check_result`).
    The server's copy stands either way; a claim a client may not make refuses the request."""
    parts = raw.get("parts") if isinstance(raw, dict) else None
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, dict) or part.get("state") not in _CLAIMED_RESULTS:
            continue
        call_id = part.get("toolCallId")
        stored = open_parts.get(call_id) if isinstance(call_id, str) else None
        if stored is None:
            continue  # settled on the server, or not a call of this conversation: the server's copy stands
        try:
            check_result(stored.tool_call_id, stored, kinds)
        except Refused as exc:
            raise Refused(f"messages[{index}]: {exc}", tool_call_id=exc.tool_call_id) from None
