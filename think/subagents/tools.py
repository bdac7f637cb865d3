"""Child agents as tools: `agent_tool(Class, ...)` and `run_agent_tool(...)`.

    class Researcher(Think): ...

    class Lead(Think):
        def get_tools(self):
            return [agent_tool(Researcher, description="Research a question in depth.")]

Each call runs a fresh child (named by its run id) through `chat()`. While it runs, the parent's
clients get `agent-tool-event` frames (reference §2.9): `started`, one `chunk` per UI chunk of
the child's reply (`body` is the chunk's JSON text), then `finished` (with a summary), `error`
or `aborted`. The model sees the child's final answer as the tool's output; a child that fails
is a tool error. Cancelling the parent's turn cancels the child's turn, which keeps its partial
reply. `max_concurrent_agent_tools` on the parent caps the runs in progress: one more is an
immediate error. The parent keeps its recent runs' events and replays them to clients that
connect later (`think.subagents.runs`).

Runs survive crashes without running twice: an agent tool's run id is derived from the parent's
reply message and tool call, and the tool is `recovery="rerun"`. When the parent's recovery runs
the interrupted call again, the child of that run id already holds the prompt: its own recovery
finishes (or has finished) the answer, which the parent collects instead of starting a new child
turn (`SubAgentAPI.reattach_run`). The same holds for `run_agent_tool(run_id=...)`: a run id names
one run, and asking it again returns that run's answer.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from uuid import NAMESPACE_URL, uuid5

import anyio
import orjson

from think import observe
from think.errors import ConfigurationError, ToolFailed
from think.messages import JSONObject
from think.runtime.agent import Agent
from think.stream.fanout import AgentToolEvent
from think.tools.tool import Tool, ToolContext
from think.turns.callbacks import ChatCallback, Signal
from think.turns.turn import TurnResult

if TYPE_CHECKING:
    from think.agent import Think

PREVIEW_CHARS = 200
DEFAULT_INPUT_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"prompt": {"type": "string",
                              "description": "What to ask the agent, with all the context it needs."}},
    "required": ["prompt"],
}


@dataclass(frozen=True, kw_only=True)
class AgentToolResult:
    """How a child run ended: `output` is its final answer (text) when it completed."""

    run_id: str
    agent_type: str
    status: Literal["completed", "error", "aborted"]
    output: Any = None
    summary: str | None = None
    error: str | None = None


def format_input(value: Any) -> str:
    """The child's user message for a tool input: its `prompt`, else the input as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and set(value) == {"prompt"} and isinstance(value["prompt"], str):
        return value["prompt"]
    return orjson.dumps(value).decode()


async def run_agent_tool(parent: Think, cls: type[Agent], *, input: Any, run_id: str | None = None,
                         parent_tool_call_id: str | None = None, signal: Signal | None = None,
                         display: JSONObject | None = None) -> AgentToolResult:
    """Run a child agent on `input` and stream its progress to the parent's clients."""
    children = parent.sub_agents
    reattach = run_id is not None  # a named run may have started before (a crash, a retry)
    run_id = run_id or str(uuid.uuid4())
    agent_type = cls.kebab_name() if isinstance(cls, type) and issubclass(cls, Agent) else repr(cls)
    cap = parent.max_concurrent_agent_tools
    if cap is not None and children.agent_tools_running >= cap:
        return AgentToolResult(run_id=run_id, agent_type=agent_type, status="error",
                               error=f"Too many agent tools are running (at most {cap} at once)")
    text = format_input(input)
    sequence = parent.agent_tool_runs.next_sequence(run_id) if reattach else 0

    async def publish(event: JSONObject) -> None:
        nonlocal sequence
        await parent.fanout.publish(AgentToolEvent(sequence, {**event, "runId": run_id}, parent_tool_call_id))
        sequence += 1

    async def collected(answer: str) -> AgentToolResult:
        """The run's answer, collected from the child rather than streamed by this call."""
        summary = answer[:PREVIEW_CHARS]
        await publish({"kind": "finished", "summary": summary, "reattached": True})
        return AgentToolResult(run_id=run_id, agent_type=agent_type, status="completed", output=answer,
                               summary=summary)

    children.agent_tools_running += 1
    try:
        child = await children.get(cls, run_id)
        started: JSONObject = {"kind": "started", "agentType": agent_type, "inputPreview": text[:PREVIEW_CHARS],
                               "order": children.agent_tool_runs}
        children.agent_tool_runs += 1
        if display is not None:
            started["display"] = display
        await publish(started)

        async def on_event(body: str) -> None:
            await publish({"kind": "chunk", "body": body})

        earlier = await child.call("reattach_run", text) if reattach and hasattr(cls, "reattach_run") else None
        if earlier is not None:
            return await collected(earlier)
        try:
            with observe.sub_agent(agent_type, run_id) as traced:  # the child's turn joins this trace
                result = await run_child(lambda stop: child.chat(text, ChatCallback(on_event=on_event), signal=stop),
                                          signal)
                traced.finished(result.status, result.error)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await publish({"kind": "aborted", "reason": "the parent's turn was cancelled"})
            raise
        except Exception as exc:  # the child could not run its turn at all
            await publish({"kind": "error", "error": f"{type(exc).__name__}: {exc}"})
            return AgentToolResult(run_id=run_id, agent_type=agent_type, status="error",
                                   error=f"{type(exc).__name__}: {exc}")
    except ConfigurationError as exc:
        return AgentToolResult(run_id=run_id, agent_type=agent_type, status="error", error=str(exc))
    finally:
        children.agent_tools_running -= 1
    if result.recovering:  # the child's stream stalled: its recovery finishes the answer; wait for it
        recovered = await child.call("reattach_run", text)
        if recovered is not None:
            return await collected(recovered)
    answer = result.message.text if result.message is not None else ""
    if result.status == "error":
        await publish({"kind": "error", "error": result.error or "The sub-agent failed"})
        return AgentToolResult(run_id=run_id, agent_type=agent_type, status="error", error=result.error)
    if result.status in ("aborted", "skipped"):
        await publish({"kind": "aborted", "reason": "cancelled"})
        return AgentToolResult(run_id=run_id, agent_type=agent_type, status="aborted", output=answer or None)
    summary = answer[:PREVIEW_CHARS]
    await publish({"kind": "finished", "summary": summary})
    return AgentToolResult(run_id=run_id, agent_type=agent_type, status="completed", output=answer, summary=summary)


async def run_child(start: Callable[[anyio.Event], Any], signal: Signal | None) -> TurnResult:
    """Run the child's turn so that cancelling the caller cancels it *through the child* (which then
    persists its partial reply) instead of cutting it off mid-write."""
    stop = anyio.Event()
    finished = anyio.Event()
    box: list[TurnResult] = []
    failure: list[BaseException] = []

    async def child() -> None:
        with anyio.CancelScope(shield=True):
            try:
                box.append(await start(stop))
            except Exception as exc:
                failure.append(exc)
            finally:
                finished.set()

    async def watch() -> None:
        if signal is not None:
            await signal.wait()
            stop.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(child)
        tasks.start_soon(watch)
        try:
            await finished.wait()
        except anyio.get_cancelled_exc_class():
            stop.set()
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await finished.wait()
            raise
        tasks.cancel_scope.cancel()
    if failure:
        raise failure[0]
    return box[0]


def agent_tool(cls: type[Agent], *, description: str, input_schema: JSONObject | None = None,
               name: str | None = None, display_name: str | None = None) -> Tool:
    """A tool that runs a child agent of class `cls` (a `Think`) on the model's input."""
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise ConfigurationError(f"agent_tool() needs an Agent subclass, not {cls!r}")
    if not hasattr(cls, "chat"):
        raise ConfigurationError(f"agent_tool() needs a chat agent (a Think subclass); {cls.__name__} has no chat()")

    async def execute(arguments: JSONObject, ctx: ToolContext) -> Any:
        parent = ctx.agent
        if parent is None or not hasattr(parent, "sub_agents"):
            raise ToolFailed("agent tools run inside a Think agent's turn")
        display = {"name": display_name} if display_name else None
        run_id = str(uuid5(NAMESPACE_URL, f"think:{ctx.message_id}/{ctx.tool_call_id}")) \
            if ctx.message_id and ctx.tool_call_id else None
        result = await run_agent_tool(parent, cls, input=arguments, run_id=run_id,
                                      parent_tool_call_id=ctx.tool_call_id, display=display)
        if result.status != "completed":
            raise ToolFailed(result.error or f"The {result.agent_type} agent did not finish ({result.status})")
        return result.output

    return Tool(name=name or cls.kebab_name().replace("-", "_"), description=description,
                input_schema=input_schema or DEFAULT_INPUT_SCHEMA, execute=execute, title=display_name,
                recovery="rerun")
